"""Collect against real protocols: moto S3 server, gcp-storage-emulator, file://.

Covers parallel download, incremental re-runs (nothing fetched; a changed
object is fetched again), corrupt/partial/unknown/duplicate files, an empty
bucket, schema migration and the CLI summary."""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import threading
import time

import pandas as pd
import pytest
from synthetic_results import make_result, result_bytes, result_key

from analysis.cli import main
from analysis.collect import collect
from analysis.collect.manifest import Manifest
from analysis.collect.validation import MigrationError, migrate
from payload.schema import validate_result
from payload.storage import StorageError, open_store


class Tracking:
    """Wraps a store: counts downloads and the most running at once."""

    def __init__(self, store, delay: float = 0.0):
        self.store, self.delay = store, delay
        self.gets: list[str] = []
        self.active = self.peak = 0
        self._lock = threading.Lock()

    def __getattr__(self, name):
        return getattr(self.store, name)

    def get_bytes(self, key):
        with self._lock:
            self.active += 1
            self.peak = max(self.peak, self.active)
            self.gets.append(key)
        try:
            time.sleep(self.delay)
            return self.store.get_bytes(key)
        finally:
            with self._lock:
                self.active -= 1


def _results(n: int, benchmark: str = "resnet50") -> list[dict]:
    offerings = ["aws/p2.xlarge", "aws/p3.2xlarge", "gcp/n1-standard-4+1xk80"]
    return [
        make_result(offerings[i % 3], benchmark, repeat=i, hourly_usd=1.0 + i, train_seconds=600 + i) for i in range(n)
    ]


def _v0(run_id="v0-run-1") -> dict:
    return {
        "run_id": run_id,
        "stack": "aws-p2-1x",
        "status": "completed",
        "offering": "aws/p2.xlarge",
        "market": "on-demand",
        "instance_type": "p2.xlarge",
        "instance_id": "i-old",
        "zone": "us-east-1a",
        "hourly_usd": 0.9,
        "price_source": "prototype env",
        "price_as_of": "2018-02-08",
        "gpu": {"name": "Tesla K80", "count": 1, "memory_gb": 12, "driver": "384.81"},
        "benchmark": "resnet50",
        "batch_size": 64,
        "train_seconds": 3600.0,
        "images_per_second": 50.0,
        "accuracy": 0.7,
        "started_at": "2018-02-08T10:00:00Z",
        "finished_at": "2018-02-08T11:05:00Z",
        "events": [
            {"time": "2018-02-08T09:58:00Z", "event": "instance_launch"},
            {"time": "2018-02-08T11:05:00Z", "event": "shutdown_requested"},
        ],
    }


def _populate(store, results) -> None:
    for r in results:
        store.put_bytes(result_key(r), result_bytes(r))


def _messy(store) -> dict:
    """Every kind of bad file next to good ones; returns what collect must report."""
    good = _results(6)
    _populate(store, good)
    store.put_bytes("runs/aws-p2-1x/broken-run/result.json", b'{"schema_version": 1, "run_id": "x", ')
    store.put_bytes("runs/aws-p2-1x/empty-run/result.json", b"")
    bad = copy.deepcopy(good[0])
    bad["run_id"] = "invalid-run"
    bad["metrics"]["train_seconds"] = "fast"
    store.put_bytes("runs/aws-p2-1x/invalid-run/result.json", result_bytes(bad))
    future = copy.deepcopy(good[0])
    future.update(schema_version=99, run_id="future-run")
    store.put_bytes("runs/aws-p2-1x/future-run/result.json", result_bytes(future))
    store.put_bytes("runs/aws-p2-1x/still-running/events.jsonl", b'{"event": "train_start"}\n')
    store.put_bytes("runs/aws-p2-1x/still-running/epochs.csv", b"epoch,elapsed\n")
    store.put_bytes("runs/aws-p2-1x/notes-run/notes.txt", b"hello")
    store.put_bytes(result_key(good[1]).replace("result.json", "events.jsonl"), b"{}\n")
    # the same run under a second stack directory, claiming to be newer: misplaced, never the winner
    dup = copy.deepcopy(good[2])
    dup["finished_at"] = "2099-01-01T00:00:00.000Z"
    store.put_bytes(f"runs/copied-stack/{dup['run_id']}/result.json", result_bytes(dup))
    store.put_bytes(f"runs/aws-p2-1x/{_v0()['run_id']}/result.json", json.dumps(_v0()).encode())
    store.put_bytes("unrelated/readme.txt", b"not ours")
    return {"good": good, "dup_run": good[2]["run_id"]}


def _reasons(summary) -> dict[str, str]:
    return {s["key"]: s["reason"] for s in summary.skipped}


def _check_messy(summary, rows, expect) -> None:
    reasons = _reasons(summary)
    assert summary.valid == len(rows) == 7  # 6 good + the migrated v0
    assert reasons["runs/aws-p2-1x/broken-run/result.json"].startswith("corrupt: not valid JSON")
    assert reasons["runs/aws-p2-1x/empty-run/result.json"].startswith("corrupt: empty")
    assert reasons["runs/aws-p2-1x/invalid-run/result.json"].startswith("invalid: metrics/train_seconds")
    assert "newer than this reader" in reasons["runs/aws-p2-1x/future-run/result.json"]
    assert reasons["runs/aws-p2-1x/still-running/"].startswith("partial run: no result.json")
    assert "epochs.csv, events.jsonl" in reasons["runs/aws-p2-1x/still-running/"]
    assert reasons["runs/aws-p2-1x/notes-run/notes.txt"].startswith("unknown file")
    dup_key = f"runs/copied-stack/{expect['dup_run']}/result.json"
    assert reasons[dup_key].startswith("misplaced: the result says stack"), reasons[dup_key]
    assert result_key(expect["good"][2]) in reasons[dup_key]
    assert not any(k.startswith("unrelated/") for k in reasons)
    ids = {r["run_id"] for r in rows}
    assert ids == {r["run_id"] for r in expect["good"]} | {"v0-run-1"}
    kept = next(r for r in rows if r["run_id"] == expect["dup_run"])
    assert kept["stack"] != "copied-stack" and kept["finished_at"] != "2099-01-01T00:00:00.000Z"


def test_s3_parallel_incremental_and_messy(s3_bucket, tmp_path):
    url = f"s3://{s3_bucket}/gpubench"
    expect = _messy(open_store(url))
    stores = []

    def opener(u):
        stores.append(Tracking(open_store(u), delay=0.05))
        return stores[-1]

    out = tmp_path / "report"
    summary, rows = collect([url], out, workers=4, progress=False, store_opener=opener)
    _check_messy(summary, rows, expect)
    assert stores[0].peak > 1, "downloads did not overlap"
    assert stores[0].peak <= 4, "more downloads at once than --workers"
    n_results = len(stores[0].gets)
    assert summary.new == n_results == 12 and summary.cached == 0
    df = pd.read_parquet(out / "results.parquet")
    assert len(df) == 7 and (out / "results.csv").exists()
    assert set(pd.read_csv(out / "results.csv")["run_id"]) == set(df["run_id"])

    # second collect: nothing changed, nothing downloaded, same table
    summary2, rows2 = collect([url], out, workers=4, store_opener=opener)
    assert stores[1].gets == []
    assert (summary2.new, summary2.cached, summary2.valid) == (0, 12, 7)
    assert _reasons(summary2) == _reasons(summary)
    assert not summary2.table_written

    # one object changes: exactly it is fetched again and the table follows
    changed = copy.deepcopy(expect["good"][0])
    changed["metrics"]["train_seconds"] = 4242.0
    open_store(url).put_bytes(result_key(changed), result_bytes(changed))
    summary3, _ = collect([url], out, workers=4, store_opener=opener)
    assert stores[2].gets == [result_key(changed)]
    assert (summary3.new, summary3.cached) == (1, 11)
    df = pd.read_parquet(out / "results.parquet")
    assert df.loc[df["run_id"] == changed["run_id"], "train_seconds"].item() == 4242.0


def test_gcs_emulator_collect_incremental_and_messy(gcs_bucket, tmp_path):
    url = f"gs://{gcs_bucket}/pfx"
    expect = _messy(open_store(url))
    stores = []

    def opener(u):
        stores.append(Tracking(open_store(u)))
        return stores[-1]

    summary, rows = collect([url], tmp_path, workers=3, store_opener=opener)
    _check_messy(summary, rows, expect)
    summary2, _ = collect([url], tmp_path, workers=3, store_opener=opener)
    assert stores[1].gets == [] and summary2.new == 0 and summary2.valid == 7
    changed = copy.deepcopy(expect["good"][3])
    changed["status"] = "failed"
    open_store(url).put_bytes(result_key(changed), result_bytes(changed))
    summary3, rows3 = collect([url], tmp_path, workers=3, store_opener=opener)
    assert stores[2].gets == [result_key(changed)]
    assert next(r for r in rows3 if r["run_id"] == changed["run_id"])["status"] == "failed"


def test_empty_bucket_gives_an_empty_table_and_a_clear_report(s3_bucket, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["collect", "--results", f"s3://{s3_bucket}", "--table", str(out), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert {k: got[k] for k in ("runs", "valid", "new", "cached", "skipped")} == {
        "runs": 0,
        "valid": 0,
        "new": 0,
        "cached": 0,
        "skipped": [],
    }
    assert pd.read_parquet(out / "results.parquet").empty
    assert main(["report", "--table", str(out), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "no completed runs" in printed
    assert "No completed runs to report" in (out / "index.html").read_text()


def test_several_sources_and_cli_json_summary(tmp_path, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    _populate(open_store(str(a)), _results(3))
    _populate(open_store(b.as_uri()), _results(2, "vgg16"))
    out = tmp_path / "out"
    argv = ["collect", "--results", str(a), "--results", b.as_uri(), "--table", str(out), "--json"]
    assert main(argv) == 0
    got = json.loads(capsys.readouterr().out)
    assert (got["runs"], got["valid"], got["new"], got["cached"], got["skipped"]) == (5, 5, 5, 0, [])
    assert main(argv) == 0
    got = json.loads(capsys.readouterr().out)
    assert (got["valid"], got["new"], got["cached"]) == (5, 0, 5)


def test_a_bucket_that_cannot_be_listed_keeps_its_rows(tmp_path):
    src = tmp_path / "res"
    _populate(open_store(str(src)), _results(3))
    collect([str(src)], tmp_path / "out")

    class Down:
        def list(self, prefix=""):
            raise StorageError("list results failed after 5 attempt(s): connection refused")

    summary, rows = collect([str(src)], tmp_path / "out", store_opener=lambda u: Down())
    assert len(rows) == 3
    assert summary.skipped[0]["reason"].startswith("cannot list the bucket")


def test_a_bucket_that_cannot_be_opened_is_set_aside_and_the_others_collected(tmp_path, monkeypatch, capsys):
    """No GCS credentials: the SDK's own error must not crash the collect of the other buckets."""
    from google.auth.exceptions import DefaultCredentialsError
    from google.cloud import storage as gcs

    def no_credentials(*a, **kw):
        raise DefaultCredentialsError("Your default credentials were not found.")

    monkeypatch.delenv("STORAGE_EMULATOR_HOST", raising=False)
    monkeypatch.setattr(gcs, "Client", no_credentials)
    src = tmp_path / "res"
    _populate(open_store(str(src)), _results(2))
    argv = [
        "collect",
        "--results",
        "gs://no-creds/gpubench",
        "--results",
        str(src),
        "--table",
        str(tmp_path / "o"),
        "--json",
    ]
    assert main(argv) == 1
    got = json.loads(capsys.readouterr().out)
    assert got["valid"] == 2
    assert got["skipped"][0]["key"] == "gs://no-creds/gpubench"
    assert "credentials were not found" in got["skipped"][0]["reason"]


def test_failed_download_is_retried_next_time(tmp_path):
    src = tmp_path / "res"
    _populate(open_store(str(src)), _results(2))

    class Flaky(Tracking):
        def get_bytes(self, key):
            raise StorageError(f"download {key} failed after 5 attempt(s): timeout")

    summary, rows = collect([str(src)], tmp_path / "out", store_opener=lambda u: Flaky(open_store(u)))
    assert rows == [] and all(s["reason"].startswith(("download failed", "not tried")) for s in summary.skipped)
    summary, rows = collect([str(src)], tmp_path / "out")
    assert len(rows) == 2 and summary.new == 2


def test_corrupt_manifest_is_rebuilt(tmp_path):
    src = tmp_path / "res"
    _populate(open_store(str(src)), _results(2))
    collect([str(src)], tmp_path / "out")
    path = tmp_path / "out" / ".collect-manifest.sqlite"
    for suffix in ("-wal", "-shm"):
        (tmp_path / "out" / f".collect-manifest.sqlite{suffix}").unlink(missing_ok=True)
    path.write_bytes(b"{not a database" * 100)
    m = Manifest(path)
    assert m.sources() == set()  # started over: no entries
    m.close()
    summary, rows = collect([str(src)], tmp_path / "out")
    assert summary.new == 2 and len(rows) == 2
    summary, rows = collect([str(src)], tmp_path / "out")  # and the rebuilt one works
    assert (summary.new, summary.cached) == (0, 2)


class CountingBulk:
    """Counts the bulk path's downloads (analysis.collect.s3.S3Bulk.get) by key: `gets`
    the first read of each object, `rereads` a whole read after a ranged read
    that did not parse."""

    def __init__(self, monkeypatch):
        from analysis.collect import s3 as bulk

        self.gets: list[str] = []
        self.rereads: list[str] = []
        real = bulk.S3Bulk.get

        async def get(source, key, size=None):
            (self.rereads if size is None and key in self.gets else self.gets).append(key)
            return await real(source, key, size)

        monkeypatch.setattr(bulk.S3Bulk, "get", get)


def _comparable(df: pd.DataFrame) -> pd.DataFrame:
    return df.sort_values("run_id").reset_index(drop=True)


def test_the_bulk_path_judges_every_kind_of_file_reading_each_once(s3_bucket, tmp_path, monkeypatch):
    url = f"s3://{s3_bucket}/gpubench"
    expect = _messy(open_store(url))
    counting = CountingBulk(monkeypatch)
    s_bulk, rows_bulk = collect([url], tmp_path / "bulk")
    assert len(counting.gets) == s_bulk.new == 12
    assert counting.rereads == ["runs/aws-p2-1x/broken-run/result.json"]  # the truncated one, read whole to be sure
    _check_messy(s_bulk, rows_bulk, expect)


def test_bulk_path_is_incremental_through_the_sqlite_manifest(s3_bucket, tmp_path, monkeypatch):
    url = f"s3://{s3_bucket}"
    results = _results(30)
    _populate(open_store(url), results)
    open_store(url).put_bytes("runs/aws-p2-1x/broken/result.json", b"{")
    counting = CountingBulk(monkeypatch)
    out = tmp_path / "out"
    summary, rows = collect([url], out, workers=8)
    assert summary.new == len(counting.gets) == 31 and len(rows) == 30
    assert _reasons(summary)["runs/aws-p2-1x/broken/result.json"].startswith("corrupt: not valid JSON")
    assert counting.rereads == ["runs/aws-p2-1x/broken/result.json"]

    counting.gets.clear()
    summary, rows = collect([url], out, workers=8)  # nothing new: nothing downloaded
    assert counting.gets == [] and (summary.new, summary.cached, len(rows)) == (0, 31, 30)
    assert not summary.table_written

    changed = copy.deepcopy(results[7])
    changed["metrics"]["train_seconds"] = 4242.0
    open_store(url).put_bytes(result_key(changed), result_bytes(changed))
    summary, rows = collect([url], out, workers=8)  # a final result rewritten in a settled stack: not seen ...
    assert counting.gets == [] and (summary.new, summary.cached) == (0, 31)
    summary, rows = collect([url], out, workers=8, full=True)  # ... until every file is listed: only it is read
    assert counting.gets == [result_key(changed)] and (summary.new, summary.cached) == (1, 30)
    assert next(r for r in rows if r["run_id"] == changed["run_id"])["train_seconds"] == 4242.0
    m = Manifest(out / ".collect-manifest.sqlite")  # it records what was read, the row lives in the table
    entry = m.stack_entries(url, f"runs/{changed['stack']}/")[f"{url}|{result_key(changed)}"]
    m.close()
    assert entry["has_row"] and entry["status"] == "completed" and "row" not in entry
    table = pd.read_parquet(out / "results.parquet")
    assert table.loc[table["run_id"] == changed["run_id"], "train_seconds"].item() == 4242.0

    counting.gets.clear()
    (out / ".collect-manifest.sqlite").write_bytes(b"garbage" * 1000)  # corrupt manifest: rebuilt
    for suffix in ("-wal", "-shm"):
        (out / f".collect-manifest.sqlite{suffix}").unlink(missing_ok=True)
    summary, rows = collect([url], out, workers=8)
    assert len(counting.gets) == summary.new == 31 and len(rows) == 30


def listed_before_it_grew(monkeypatch, grown: str, by: int = 40) -> None:
    """The bulk path's listings give object `grown` the size it had before it grew by `by` bytes."""
    from analysis.collect import s3 as bulk

    real_info = bulk._info

    def stale_info(meta):
        info = real_info(meta)
        return dataclasses.replace(info, size=info.size - by) if info.key == grown else info

    monkeypatch.setattr(bulk, "_info", stale_info)


def test_bulk_path_reads_whole_an_object_that_grew_since_the_listing(s3_bucket, tmp_path, monkeypatch):
    """Objects are read by range with the listing's size: one replaced by a
    longer one in between arrives cut short, and must be read whole, not set aside."""
    url = f"s3://{s3_bucket}"
    results = _results(3)
    _populate(open_store(url), results)
    grown = result_key(results[1])
    listed_before_it_grew(monkeypatch, grown)
    counting = CountingBulk(monkeypatch)
    summary, rows = collect([url], tmp_path / "out")
    assert counting.rereads == [grown]
    assert (summary.new, summary.valid, summary.skipped) == (3, 3, [])


def test_bulk_path_outage_keeps_the_rows_and_fails_fast(s3_bucket, tmp_path, monkeypatch):
    import socket

    url = f"s3://{s3_bucket}"
    _populate(open_store(url), _results(3))
    out = tmp_path / "out"
    assert len(collect([url], out)[1]) == 3
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{dead}")
    monkeypatch.setenv("GPUBENCH_STORAGE_RETRIES", "2")
    monkeypatch.setenv("GPUBENCH_STORAGE_BACKOFF", "0.1")
    t0 = time.monotonic()
    summary, rows = collect([url], out)
    assert time.monotonic() - t0 < 30
    assert len(rows) == 3
    assert summary.skipped[0]["reason"].startswith("cannot list the bucket: list s3://")


def test_v0_migration_produces_a_valid_v1_result():
    migrated, version = migrate(_v0())
    assert version == 0 and migrated["schema_version"] == 1
    validate_result(migrated)
    assert migrated["price"]["hourly_usd"] == 0.9 and migrated["offering"]["id"] == "aws/p2.xlarge"
    assert migrated["metrics"]["samples_per_second"] == 50.0
    assert migrated["hardware"]["gpu_model"] == "Tesla K80"
    assert any("migrated from result schema v0" in w for w in migrated["warnings"])
    current = make_result()
    assert migrate(current) == (current, 1)  # current results pass through untouched


def test_v0_row_keeps_its_billing_window(tmp_path):
    src = tmp_path / "res"
    open_store(str(src)).put_bytes("runs/aws-p2-1x/v0-run-1/result.json", json.dumps(_v0()).encode())
    _, rows = collect([str(src)], tmp_path / "out")
    (row,) = rows
    assert row["schema_version_read"] == 0
    assert row["instance_seconds"] == pytest.approx(67 * 60)  # launch 09:58 -> shutdown 11:05
    df = pd.read_parquet(tmp_path / "out" / "results.parquet")
    assert df["billed_cost_usd"].item() == pytest.approx(0.9 * 67 / 60)


@pytest.mark.parametrize(
    "bad, words",
    [
        ({"schema_version": 99}, ["99", "newer"]),
        ({"schema_version": "1"}, ["'1'", "non-negative integer"]),
        ({"schema_version": 0}, ["cannot migrate", "KeyError"]),
    ],
)
def test_migration_errors_name_the_problem(bad, words):
    with pytest.raises(MigrationError) as err:
        migrate(bad)
    assert all(w in str(err.value) for w in words)


def test_collect_teardown_passes_only_finished_stacks(tmp_path, monkeypatch, capsys):
    import analysis.teardown as td

    src = tmp_path / "res"
    done = make_result("aws/p2.xlarge", repeat=1, hourly_usd=0.9)
    resuming = make_result("aws/p3.2xlarge", repeat=2, status="interrupted", hourly_usd=3.06)
    _populate(open_store(str(src)), [done, resuming])
    calls = []

    def fake(stacks, results_urls=None, dry_run=False, **kw):
        calls.append((list(stacks), list(results_urls)))
        return [td.Outcome(stack=s, action="destroyed", reason="all runs final") for s in stacks]

    monkeypatch.setattr(td, "teardown_completed", fake)
    assert main(["collect", "--results", str(src), "--table", str(tmp_path / "o"), "--teardown", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert calls == [([done["stack"]], [str(src)])]
    assert got["teardown"]["outcomes"][0]["stack"] == done["stack"] and got["teardown"]["error"] is None


def test_collect_teardown_without_the_module_says_what_to_do(tmp_path, monkeypatch, capsys):
    import sys

    src = tmp_path / "res"
    _populate(open_store(str(src)), [make_result("aws/p2.xlarge", hourly_usd=0.9)])
    monkeypatch.setitem(sys.modules, "analysis.teardown", None)  # import fails
    assert main(["collect", "--results", str(src), "--table", str(tmp_path / "o"), "--teardown"]) == 3
    err = capsys.readouterr().err
    assert "--teardown is not available" in err and "`pulumi destroy -s STACK`: aws-p2-1x" in err


MUTATIONS = [
    lambda r: r["metrics"].update(train_seconds="fast"),
    lambda r: r.update(started_at="2020-01-01 00:00"),
    lambda r: r["offering"].update(market="reserved"),
    lambda r: r["attempts"][0].update(end="later"),
    lambda r: r.update(attempts=[]),
    lambda r: r.update(extra_field=1),
    lambda r: r.pop("timeline"),
    lambda r: r["benchmark"].update(per_gpu_batch_size=0),
    lambda r: r["hardware"].update(device="TPU"),
    lambda r: r["price"].update(origin="guess"),
    lambda r: r.update(schema_version=2),
    lambda r: r["timeline"].append({"event": "x"}),
]


@pytest.mark.parametrize("mutate", MUTATIONS)
def test_fast_validation_agrees_with_the_payload_schema(mutate):
    """collect's quick yes-or-no must reject whatever payload.schema rejects."""
    from analysis.collect.validation import parse
    from payload.schema import ResultValidationError, is_valid

    r = make_result()
    parse(result_bytes(r), source="s3://b", key=result_key(r), etag=None)
    mutate(r)
    with pytest.raises(ResultValidationError):
        validate_result(r)
    with pytest.raises(ValueError, match="^(invalid|unknown schema): "):
        parse(result_bytes(r), source="s3://b", key=result_key(r), etag=None)
    assert not is_valid(r)


def test_a_forged_result_under_another_stack_never_displaces_the_genuine_one(tmp_path):
    """A result claiming another stack's run id (or stack) is misplaced; copies are compared within one stack only."""
    a, b = tmp_path / "a", tmp_path / "b"
    genuine = _results(2)
    _populate(open_store(str(a)), genuine)
    forged = copy.deepcopy(genuine[0])
    forged["finished_at"] = "2099-01-01T00:00:00.000Z"
    open_store(str(a)).put_bytes(f"runs/attacker/{forged['run_id']}/result.json", result_bytes(forged))
    renamed = copy.deepcopy(genuine[1])
    renamed["stack"] = "attacker"  # claims to be the attacker's run, stored under the victim's run id
    open_store(str(a)).put_bytes("runs/attacker/other-id/result.json", result_bytes(renamed))
    older = copy.deepcopy(genuine[1])
    older["finished_at"] = "2000-01-01T00:00:00.000Z"
    _populate(open_store(str(b)), [older])  # the same run reached through a second source: a true duplicate
    summary, rows = collect([str(a), str(b)], tmp_path / "out")
    reasons = _reasons(summary)
    assert sorted((r["stack"], r["run_id"]) for r in rows) == sorted((g["stack"], g["run_id"]) for g in genuine)
    assert all(r["finished_at"] != "2099-01-01T00:00:00.000Z" for r in rows)
    assert reasons[f"runs/attacker/{forged['run_id']}/result.json"].startswith("misplaced")
    assert reasons["runs/attacker/other-id/result.json"].startswith("misplaced")
    assert reasons[result_key(older)].startswith(f"duplicate of run {older['run_id']}")
    assert summary.valid == 2


def test_layout_keys_round_trip_and_refuse_paths():
    from payload import layout

    key = layout.result_key("aws-p3-8x", "r-1")
    assert key == "runs/aws-p3-8x/r-1/result.json"
    assert layout.parse_key(key) == layout.RunKey("aws-p3-8x", "r-1", "result.json")
    assert layout.parse_key("runs/aws-p3-8x/result.json") is None
    assert layout.parse_key("runs/../r/result.json") is None
    for bad in ("a/b", "", "..", "."):
        with pytest.raises(layout.BadKeyPart, match="without '/'"):
            layout.stack_prefix(bad)


def test_a_bucket_killed_mid_collect_keeps_every_row_and_says_incomplete(tmp_path, capsys):
    src = tmp_path / "res"
    results = _results(4)
    _populate(open_store(str(src)), results)
    out = tmp_path / "out"
    collect([str(src)], out)
    time.sleep(0.01)
    _populate(open_store(str(src)), results)  # every object changed (new mtime): all must be fetched again

    class Dies(Tracking):
        def get_bytes(self, key):
            self.gets.append(key)
            raise StorageError(f"download {key} failed after 5 attempt(s): connection refused")

    dying = Dies(open_store(str(src)))
    summary, rows = collect([str(src)], out, workers=1, store_opener=lambda u: dying)
    assert len(rows) == 4 and summary.incomplete
    assert len(dying.gets) == 1  # detected once, not retried object by object
    reasons = _reasons(summary)
    assert all(reasons[result_key(r)].startswith("kept the previous row") for r in results)
    assert len(pd.read_parquet(out / "results.parquet")) == 4
    summary, rows = collect([str(src)], out)  # the bucket is back: everything is fetched
    assert summary.new == 4 and not summary.incomplete and len(rows) == 4


def test_a_wrong_prefix_is_an_error_with_the_layout_and_never_empties_the_table(tmp_path, capsys):
    src = tmp_path / "res"
    _populate(open_store(str(src / "team")), _results(3))
    out = tmp_path / "out"
    assert main(["collect", "--results", str(src / "team"), "--table", str(out), "--json"]) == 0
    capsys.readouterr()
    assert main(["collect", "--results", str(src), "--table", str(out), "--json"]) == 1
    got = json.loads(capsys.readouterr().out)
    assert got["complete"] is False and got["valid"] == 3
    reason = got["skipped"][0]["reason"]
    assert "runs/<stack>/<run-id>/result.json" in reason and f"did you mean {src}/team?" in reason
    assert len(pd.read_parquet(out / "results.parquet")) == 3
    runs_url = str(src / "team" / "runs")
    assert main(["collect", "--results", runs_url, "--table", str(out), "--json"]) == 1
    assert f"did you mean {src / 'team'}?" in json.loads(capsys.readouterr().out)["skipped"][0]["reason"]


def test_strict_makes_set_aside_files_an_error(tmp_path, capsys):
    src = tmp_path / "res"
    _messy(open_store(str(src)))
    argv = ["collect", "--results", str(src), "--table", str(tmp_path / "out"), "--json"]
    assert main(argv) == 0
    assert main([*argv, "--strict"]) == 5
    capsys.readouterr()
    clean = tmp_path / "clean"
    _populate(open_store(str(clean)), _results(2))
    assert main(["collect", "--results", str(clean), "--table", str(tmp_path / "o2"), "--strict"]) == 0


@pytest.mark.parametrize("code", ["NoSuchBucket", "AccessDenied", "InvalidBucketName"])
def test_permanent_errors_are_not_retried(code):
    from botocore.exceptions import ClientError

    from payload.storage import PermanentStorageError, with_retries

    calls = []

    def fail():
        calls.append(1)
        raise ClientError({"Error": {"Code": code, "Message": "no"}}, "ListObjectsV2")

    with pytest.raises(PermanentStorageError, match=code):
        with_retries("list results", fail, attempts=5, sleep=lambda s: None)
    assert len(calls) == 1
    calls.clear()
    with pytest.raises(StorageError, match="after 3 attempt"):
        with_retries("list", lambda: calls.append(1) or (_ for _ in ()).throw(OSError("reset")), 3, 0, lambda s: None)
    assert len(calls) == 3


def test_bulk_path_prices_only_spot_runs_of_clouds_with_a_spot_history(s3_bucket, tmp_path):
    url = f"s3://{s3_bucket}"
    aws_spot = make_result("aws/g4dn.xlarge", market="spot", spot_hourly_usd=0.3, hourly_usd=0.526, repeat=1)
    runs = [aws_spot, make_result("gcp/n1-standard-4+1xt4", market="spot", repeat=2), make_result(repeat=3)]
    _populate(open_store(url), runs)
    calls = []

    def pricer(result):
        calls.append(result["run_id"])
        return None  # no history found: the row keeps its recorded price

    summary, rows = collect([url], tmp_path / "bulk", spot_pricer=pricer)
    assert summary.valid == 3 and calls == [aws_spot["run_id"]]


def test_a_truncated_table_is_rebuilt_even_when_nothing_changed(tmp_path):
    src, out = tmp_path / "res", tmp_path / "out"
    _populate(open_store(str(src)), _results(3))
    collect([str(src)], out)
    parquet = out / "results.parquet"
    parquet.write_bytes(parquet.read_bytes()[: parquet.stat().st_size // 2])
    summary, rows = collect([str(src)], out)
    assert (summary.new, summary.cached) == (0, 3)  # the manifest says nothing changed ...
    assert summary.table_written  # ... and the table is written again all the same
    assert len(pd.read_parquet(parquet)) == 3


def test_temporary_files_of_a_killed_collect_are_cleaned_up(tmp_path):
    import subprocess
    import sys

    src, out = tmp_path / "res", tmp_path / "out"
    _populate(open_store(str(src)), _results(1))
    collect([str(src)], out)
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(gone.stdout)  # a process that has exited, like a killed collect
    left = [out / f".results.parquet.{dead_pid}.tmp", out / f".results.csv.{dead_pid}.tmp"]
    for p in left:
        p.write_bytes(b"half a table")
    running = out / f".results.csv.{os.getppid()}.tmp"  # a live process's file is not touched
    running.write_bytes(b"in progress")
    collect([str(src)], out)
    assert not any(p.exists() for p in left) and running.exists()


class CountingListings:
    """Counts the bulk path's file-by-file listings (obstore.list) of runs by prefix (not of journals)."""

    def __init__(self, monkeypatch):
        import obstore

        self.prefixes: list[str] = []
        real = obstore.list

        def counted(store, prefix=None, **kw):
            if not (prefix or "").startswith("journal/"):
                self.prefixes.append(prefix)
            return real(store, prefix, **kw)

        monkeypatch.setattr(obstore, "list", counted)

    def take(self) -> list[str]:
        out, self.prefixes[:] = sorted(self.prefixes), []
        return out


def _judged(summary) -> set[tuple[str, str]]:
    return {(s["key"], s["reason"]) for s in summary.skipped}


def test_settled_stacks_are_not_listed_file_by_file_until_their_runs_change(s3_bucket, tmp_path, monkeypatch):
    """A stack whose every run has a final result is checked by its run
    directories only; a new, removed or unfinished run, an old listing or
    --full lists its files again. Answers are the same either way."""
    from analysis.collect import manifest as manifest_mod

    url = f"s3://{s3_bucket}"
    store = open_store(url)
    results = _results(9)  # three stacks: aws-p2-1x, aws-p3-2x and the GCP one
    _populate(store, results)
    stacks = sorted({f"runs/{r['stack']}/" for r in results})
    a, b, c = stacks
    unfinished = copy.deepcopy(next(r for r in results if f"runs/{r['stack']}/" == a))
    unfinished.update(run_id="resumable-run", status="interrupted")
    store.put_bytes(result_key(unfinished), result_bytes(unfinished))
    in_b = next(r for r in results if f"runs/{r['stack']}/" == b)
    store.put_bytes(f"runs/{in_b['stack']}/{in_b['run_id']}/notes.txt", b"mine")  # unknown, set aside, stays settled
    forged = copy.deepcopy(in_b)  # a copy of b's run under c: misplaced, never counted
    store.put_bytes(f"{c}{in_b['run_id']}/result.json", result_bytes(forged))
    listings, gets, out = CountingListings(monkeypatch), CountingBulk(monkeypatch), tmp_path / "out"

    cold, cold_rows = collect([url], out)
    assert listings.take() == stacks and cold.valid == len(cold_rows) == 10
    assert any(r.startswith("misplaced") for k, r in _judged(cold) if k.startswith(c))
    assert any(k.endswith("notes.txt") for k, _ in _judged(cold))

    gets.gets.clear()
    warm, warm_rows = collect([url], out)  # only the stack with an unfinished run is listed file by file
    assert listings.take() == [a] and gets.gets == []
    assert warm_rows == cold_rows and _judged(warm) == _judged(cold)
    assert (warm.runs, warm.valid, warm.cached, warm.new) == (cold.runs, cold.valid, cold.new, 0)

    unfinished["status"] = "completed"  # the run resumes and finishes: its stack settles
    store.put_bytes(result_key(unfinished), result_bytes(unfinished))
    gets.gets.clear()
    summary, rows = collect([url], out)
    assert listings.take() == [a] and gets.gets == [result_key(unfinished)]
    assert next(r for r in rows if r["run_id"] == "resumable-run")["status"] == "completed"

    summary, settled_rows = collect([url], out)  # settled everywhere: answered from the manifest
    assert listings.take() == [] and settled_rows == rows and not summary.table_written
    again, again_rows = collect([url], out, full=True)  # the same answer when every file is listed
    assert listings.take() == stacks and again_rows == settled_rows
    assert _judged(again) == _judged(summary) and (again.runs, again.valid) == (summary.runs, summary.valid)

    new = copy.deepcopy(in_b)
    new["run_id"] = "a-new-run"
    store.put_bytes(result_key(new), result_bytes(new))  # a new run in b
    gone = next(r for r in results if f"runs/{r['stack']}/" == c)
    store.delete(result_key(gone))  # a run removed from c
    gets.gets.clear()
    summary, rows = collect([url], out)
    # b and c settled with runs added or removed: only b's new run directory is listed file by file
    assert listings.take() == [f"{b}a-new-run/"] and gets.gets == [result_key(new)]
    ids = {r["run_id"] for r in rows}
    assert "a-new-run" in ids and gone["run_id"] not in ids

    monkeypatch.setattr(manifest_mod, "SETTLED_MAX_AGE_S", 0.0)  # trusted for no time: every file listed again
    collect([url], out)
    assert listings.take() == stacks


def test_cli_says_how_many_stacks_were_checked_by_run_directory_and_full_lists_all(s3_bucket, tmp_path, capsys):
    url = f"s3://{s3_bucket}"
    _populate(open_store(url), _results(6))
    out = str(tmp_path / "out")
    assert main(["collect", "--results", url, "--table", out, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["settled_stacks"] == 0  # nothing known yet: every file listed
    assert main(["collect", "--results", url, "--table", out]) == 0
    text = capsys.readouterr().out
    assert "3 settled stack(s) not listed file by file" in text and "--full" in text
    assert main(["collect", "--results", url, "--table", out, "--full", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["settled_stacks"] == 0


def test_a_stack_that_was_never_settled_and_is_gone_leaves_the_table_at_once(s3_bucket, tmp_path):
    """Settled stacks unchanged and nothing else listed is not "nothing
    changed" when the last collect also saw a stack that was not settled:
    its rows and notes must go, as a --full collect says."""
    url = f"s3://{s3_bucket}"
    store = open_store(url)
    results = _results(6)
    _populate(store, results)
    unsettled = copy.deepcopy(results[0])
    unsettled.update(stack="short-lived", run_id="interrupted-run", status="interrupted")
    store.put_bytes(result_key(unsettled), result_bytes(unsettled))
    store.put_bytes("runs/short-lived/broken-run/result.json", b"{")
    out = tmp_path / "out"
    collect([url], out)
    collect([url], out)  # the three other stacks are settled now
    store.delete(result_key(unsettled))
    store.delete("runs/short-lived/broken-run/result.json")

    warm, warm_rows = collect([url], out)
    full, full_rows = collect([url], tmp_path / "full", full=True)
    assert len(full_rows) == 6
    assert warm_rows == full_rows and _judged(warm) == _judged(full) == set()
    assert (warm.runs, warm.valid) == (full.runs, full.valid) == (6, 6)
    assert len(pd.read_parquet(out / "results.parquet")) == 6


def test_a_bucket_emptied_of_unfinished_runs_gives_an_empty_table(s3_bucket, tmp_path):
    url = f"s3://{s3_bucket}"
    store = open_store(url)
    running = copy.deepcopy(_results(1)[0])
    running["status"] = "interrupted"
    store.put_bytes(result_key(running), result_bytes(running))
    out = tmp_path / "out"
    assert len(collect([url], out)[1]) == 1
    store.delete(result_key(running))
    for full in (False, True):
        summary, rows = collect([url], out, full=full)
        assert (rows, summary.runs, summary.valid) == ([], 0, 0)
        assert pd.read_parquet(out / "results.parquet").empty
    summary, rows = collect([url], out)  # an empty bucket, settled in its way: still empty
    assert (rows, summary.runs) == ([], 0)


def _damage_entries(path) -> None:
    """Overwrite the root page of the manifest's entries table: the file opens
    and its settled stacks read, but the entries do not."""
    import sqlite3

    db = sqlite3.connect(path)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    root = db.execute("SELECT rootpage FROM sqlite_master WHERE name = 'entries'").fetchone()[0]
    size = db.execute("PRAGMA page_size").fetchone()[0]
    db.close()
    data = bytearray(path.read_bytes())
    data[(root - 1) * size : root * size] = b"\x07" * size
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("new_run", [False, True])
def test_a_manifest_damaged_past_its_settled_stacks_is_a_cold_start(s3_bucket, tmp_path, new_run):
    """Settled stacks carry their rows over from the manifest's entries: when
    those turn out unreadable, every file is listed again, never a crash or a
    table without those stacks' rows."""
    url = f"s3://{s3_bucket}"
    results = _results(6)
    _populate(open_store(url), results)
    out = tmp_path / "out"
    collect([url], out)
    _damage_entries(out / ".collect-manifest.sqlite")
    if new_run:  # one stack listed file by file, the others carried over
        added = copy.deepcopy(results[0])
        added["run_id"] = "a-new-run"
        open_store(url).put_bytes(result_key(added), result_bytes(added))
    want = len(results) + new_run
    summary, rows = collect([url], out)
    assert (len(rows), summary.valid, summary.runs, summary.new) == (want, want, want, want)
    assert len(pd.read_parquet(out / "results.parquet")) == want
    summary, rows = collect([url], out)
    assert (len(rows), summary.runs, summary.new, summary.cached) == (want, want, 0, want)


def test_a_listing_that_fails_after_spot_runs_were_listed_keeps_the_old_rows(s3_bucket, tmp_path, monkeypatch):
    """Spot runs listed before their stack's listing failed belong to no table row:
    they must not be read nor priced (nor reach a row kept from the last collect)."""
    from analysis.collect import s3 as bulk

    url = f"s3://{s3_bucket}"
    spot = make_result("aws/g4dn.xlarge", market="spot", spot_hourly_usd=0.3, hourly_usd=0.526, repeat=1)
    _populate(open_store(url), [spot])
    real = bulk.S3Bulk.objects

    def fails_at_the_end(source, prefix):
        yield from real(source, prefix)
        raise StorageError(f"list {source.url_for(prefix)} failed: connection reset")

    monkeypatch.setattr(bulk.S3Bulk, "objects", fails_at_the_end)
    calls = []
    counting = CountingBulk(monkeypatch)
    summary, rows = collect([url], tmp_path / "out", spot_pricer=lambda r: calls.append(r["run_id"]))
    assert rows == [] and summary.incomplete and calls == [] and counting.gets == []


@pytest.mark.parametrize("kind", ["s3", "file"])
def test_a_spot_run_that_could_not_be_priced_is_read_and_priced_again_next_time(kind, tmp_path, request):
    url = f"s3://{request.getfixturevalue('s3_bucket')}" if kind == "s3" else str(tmp_path / "results")
    spot = make_result("aws/g4dn.xlarge", market="spot", spot_hourly_usd=0.3, hourly_usd=0.526, repeat=1)
    _populate(open_store(url), [spot, make_result(repeat=2)])
    out, calls = tmp_path / "out", []

    def down(result):
        calls.append(result["run_id"])
        raise ConnectionError("EC2 DescribeSpotPriceHistory: endpoint unreachable")

    summary, rows = collect([url], out, spot_pricer=down)
    assert len(rows) == 1 and "unreadable: ConnectionError" in _reasons(summary)[result_key(spot)]
    summary, rows = collect([url], out, spot_pricer=lambda r: calls.append(r["run_id"]))
    assert calls == [spot["run_id"]] * 2 and len(rows) == 2 and summary.new == 1  # read and priced again
    summary, rows = collect([url], out, spot_pricer=lambda r: calls.append(r["run_id"]))
    assert len(calls) == 2 and summary.new == 0 and len(rows) == 2  # priced once: cached since


def test_a_wrong_prefix_on_s3_is_an_error_with_the_layout_and_never_empties_the_table(s3_bucket, tmp_path, capsys):
    base = f"s3://{s3_bucket}"
    _populate(open_store(f"{base}/team"), _results(3))
    out = str(tmp_path / "out")
    assert main(["collect", "--results", f"{base}/team", "--table", out, "--json"]) == 0
    for wrong, meant in ((base, f"{base}/team"), (f"{base}/team/runs", f"{base}/team")):
        capsys.readouterr()
        assert main(["collect", "--results", wrong, "--table", out, "--json"]) == 1
        got = json.loads(capsys.readouterr().out)
        reason = got["skipped"][0]["reason"]
        assert got["complete"] is False and got["valid"] == 3
        assert "runs/<stack>/<run-id>/result.json" in reason and f"did you mean {meant}?" in reason
        assert len(pd.read_parquet(tmp_path / "out" / "results.parquet")) == 3
    # an empty prefix is not success, even into a fresh table: a misspelt prefix finds nothing too
    assert (
        main(["collect", "--results", f"s3://{s3_bucket}/nothing-here", "--table", str(tmp_path / "e"), "--json"]) == 1
    )


def test_set_aside_files_are_reported_in_one_order_warm_or_cold(s3_bucket, tmp_path, capsys):
    url = f"s3://{s3_bucket}/gpubench"
    _messy(open_store(url))
    out = str(tmp_path / "out")
    printed = []
    for extra in ([], [], ["--full"]):
        main(["collect", "--results", url, "--table", out, *extra])
        printed.append([line for line in capsys.readouterr().out.splitlines() if line.startswith("  skipped")])
    assert len(printed[0]) >= 5 and printed[0] == sorted(printed[0]) and printed[0] == printed[1] == printed[2]
