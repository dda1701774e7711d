"""What a forged or careless result.json can and cannot do to the runs table.

One test (or a parametrised family) per class of attack: a source that holds
no runs, a copy that claims to be newer, impossible numbers and times, an
offering the run cannot have run on, an oversized file, look-alike names, a
spreadsheet formula, and a report over runs without an offering."""

from __future__ import annotations

import asyncio
import copy
import csv as _csv
import json
from datetime import datetime, timedelta, timezone

import pandas as pd
import pytest
from synthetic_results import make_result, result_bytes, result_key

from analysis.cli import main
from analysis.collect import collect
from analysis.collect.validation import MAX_RESULT_BYTES
from payload import layout
from payload.storage import open_store


def _reasons(summary) -> dict[str, str]:
    return {s["key"]: s["reason"] for s in summary.skipped}


def _populate(store, results) -> None:
    for r in results:
        store.put_bytes(result_key(r), result_bytes(r))


def _two_runs() -> list[dict]:
    return [make_result("aws/p3.2xlarge", repeat=1), make_result("aws/g4dn.xlarge", repeat=2)]


def _table_bytes(out) -> dict[str, bytes]:
    return {name: (out / name).read_bytes() for name in ("results.parquet", "results.csv")}


def _iso(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.000Z")


# --- 1. a source that holds no runs never replaces the table ---------------------------------------


@pytest.mark.parametrize("wrong", ["missing", "empty", "misspelt"])
def test_a_source_with_no_runs_leaves_the_table_byte_identical_and_fails(tmp_path, capsys, wrong):
    good = tmp_path / "results"
    _populate(open_store(str(good)), _two_runs())
    out = tmp_path / "out"
    assert main(["collect", "--results", str(good), "--table", str(out), "--json"]) == 0
    before = _table_bytes(out)
    manifest = (out / ".collect-manifest.sqlite").read_bytes()
    bad = {"missing": tmp_path / "nowhere", "empty": tmp_path / "empty", "misspelt": tmp_path / "resluts"}[wrong]
    if wrong == "empty":
        bad.mkdir()
    for sources in ([str(bad)], [str(good), str(bad)]):  # alone, or beside a source that has runs
        capsys.readouterr()
        args = ["collect", "--table", str(out), "--json"] + [a for s in sources for a in ("--results", s)]
        assert main(args) == 1
        got = json.loads(capsys.readouterr().out)
        assert got["complete"] is False and got["table_written"] is False
        assert any(str(bad) in problem for problem in got["incomplete"])
        assert any(s["key"] == str(bad) and "no runs found" in s["reason"] for s in got["skipped"])
        assert _table_bytes(out) == before
        assert (out / ".collect-manifest.sqlite").read_bytes() == manifest


def test_a_misspelt_s3_prefix_beside_the_right_one_never_shrinks_the_table(s3_bucket, tmp_path, capsys):
    base = f"s3://{s3_bucket}"
    _populate(open_store(f"{base}/gpubench"), _two_runs())
    _populate(open_store(f"{base}/other"), [make_result("aws/g4dn.xlarge", repeat=3)])
    out = tmp_path / "out"
    assert main(["collect", "--results", f"{base}/gpubench", "--results", f"{base}/other", "--table", str(out)]) == 0
    before = _table_bytes(out)
    assert len(pd.read_parquet(out / "results.parquet")) == 3
    capsys.readouterr()
    args = ["collect", "--results", f"{base}/gpubnech", "--results", f"{base}/other", "--table", str(out), "--json"]
    assert main(args) == 1
    got = json.loads(capsys.readouterr().out)
    assert got["complete"] is False and f"{base}/gpubnech" in got["incomplete"][0]
    assert _table_bytes(out) == before


def test_a_directory_that_does_not_exist_is_an_error_even_before_the_first_table(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["collect", "--results", str(tmp_path / "nowhere"), "--table", str(out), "--json"]) == 1
    got = json.loads(capsys.readouterr().out)
    assert got["complete"] is False and "does not exist" in got["skipped"][0]["reason"]
    assert not (out / "results.parquet").exists()


def test_the_help_documents_the_exit_code_of_a_collect_that_found_nothing(capsys):
    with pytest.raises(SystemExit):
        main(["collect", "--help"])
    assert "no runs at all" in " ".join(capsys.readouterr().out.split())


# --- 2. which copy of a run wins: the user's source order, never a self-reported time ----------------


def test_a_copy_in_a_later_source_never_replaces_the_genuine_row_however_new_it_claims_to_be(tmp_path):
    genuine = make_result("aws/p3.2xlarge", repeat=1)
    a, b = tmp_path / "a", tmp_path / "b"
    _populate(open_store(str(a)), [genuine])
    for finished in (
        "9999-12-31T23:59:59.000Z",
        _iso(datetime.fromisoformat(genuine["finished_at"]) + timedelta(hours=1)),
    ):
        forged = copy.deepcopy(genuine)
        forged["finished_at"] = finished
        forged["metrics"]["samples_per_second"] = 99999.0
        _populate(open_store(str(b)), [forged])
        summary, rows = collect([str(a), str(b)], tmp_path / f"out-{finished[:4]}")
        assert [r["samples_per_second"] for r in rows] == [genuine["metrics"]["samples_per_second"]]
        assert _reasons(summary)[result_key(forged)].startswith(f"duplicate of run {genuine['run_id']}")
    summary, rows = collect([str(b), str(a)], tmp_path / "out-b-first")  # the user's order decides
    assert [r["samples_per_second"] for r in rows] == [99999.0]


def test_a_first_source_copy_that_is_not_believable_yields_to_the_next_source(tmp_path):
    genuine = make_result("aws/p3.2xlarge", repeat=1)
    broken = copy.deepcopy(genuine)
    broken["metrics"]["train_seconds"] = -5.0
    a, b = tmp_path / "a", tmp_path / "b"
    _populate(open_store(str(a)), [broken])
    _populate(open_store(str(b)), [genuine])
    summary, rows = collect([str(a), str(b)], tmp_path / "out")
    assert [r["train_seconds"] for r in rows] == [genuine["metrics"]["train_seconds"]]
    assert _reasons(summary)[result_key(broken)].startswith("implausible: train_seconds")


def test_one_directory_given_twice_keeps_one_row_from_the_first_spelling(tmp_path):
    run = make_result("aws/p3.2xlarge", repeat=1)
    a = tmp_path / "a"
    _populate(open_store(str(a)), [run])
    summary, rows = collect([a.as_uri(), str(a)], tmp_path / "out")
    assert [r["source"] for r in rows] == [a.as_uri()]
    assert _reasons(summary)[result_key(run)].startswith(f"duplicate of run {run['run_id']}: kept {a.as_uri()}")


# --- 3. numbers and times no run can produce ---------------------------------------------------------


def _future(result):
    result["finished_at"] = _iso(datetime.now(timezone.utc) + timedelta(days=1))


def _finished_first(result):
    result["finished_at"] = _iso(datetime.fromisoformat(result["started_at"]) - timedelta(hours=2))


def _late_shutdown(result):
    """A timeline event years ahead: the billed window would end there."""
    later = _iso(datetime.now(timezone.utc) + timedelta(days=3650))
    result["timeline"].append({"time": later, "event": "shutdown", "attempt": 1, "source": "host"})


IMPOSSIBLE = {
    "negative hourly price": (lambda r: r["price"].update(hourly_usd=-0.5), "recorded_hourly_usd"),
    "started in the future": (
        lambda r: r.update(started_at=_iso(datetime.now(timezone.utc) + timedelta(days=2))),
        "started_at",
    ),
    "a shutdown years ahead": (_late_shutdown, "terminated_at"),
    "negative train_seconds": (lambda r: r["metrics"].update(train_seconds=-3600.0), "train_seconds"),
    "negative samples_per_second": (lambda r: r["metrics"].update(samples_per_second=-1.0), "samples_per_second"),
    "finished before started": (_finished_first, "before started_at"),
    "finished in the future": (_future, "in the future"),
}


@pytest.mark.parametrize("name", sorted(IMPOSSIBLE))
def test_impossible_numbers_and_times_are_set_aside_with_the_reason(tmp_path, name):
    change, said = IMPOSSIBLE[name]
    good, bad = make_result("aws/p3.2xlarge", repeat=1), make_result("aws/g4dn.xlarge", repeat=2)
    change(bad)
    _populate(open_store(str(tmp_path / "r")), [good, bad])
    summary, rows = collect([str(tmp_path / "r")], tmp_path / "out")
    assert [r["run_id"] for r in rows] == [good["run_id"]]
    reason = _reasons(summary)[result_key(bad)]
    assert reason.startswith("implausible:") and said in reason


def test_a_clock_a_little_ahead_is_skew_not_a_forgery(tmp_path):
    now = datetime.now(timezone.utc)
    run = make_result("aws/p3.2xlarge", repeat=1, start=now - timedelta(hours=3))
    run["finished_at"] = _iso(now + timedelta(seconds=60))
    _populate(open_store(str(tmp_path / "r")), [run])
    summary, rows = collect([str(tmp_path / "r")], tmp_path / "out")
    assert [r["run_id"] for r in rows] == [run["run_id"]], summary.skipped


# --- 4. the offering a run claims must be its stack's, with the GPU it recorded -----------------------


def _claiming(stack: str, offering: str, gpu: str | None) -> dict:
    run = make_result(offering, repeat=7, stack=stack)
    run["hardware"]["gpu_model"] = gpu
    return run


MISPLACED = {
    "g4dn stack claims p3 with a T4": ("aws-g4dn-1x", "aws/p3.2xlarge", "Tesla T4"),
    "p3's own stack but a T4 recorded": (None, "aws/p3.2xlarge", "Tesla T4"),
    "an unknown g4dn-named stack claims p3": ("aws-g4dn-1x-team", "aws/p3.2xlarge", "Tesla V100-SXM2-16GB"),
    "an aws-named stack claims a gcp offering": ("aws-team-box", "gcp/n1-standard-4+1xk80", "Tesla K80"),
}


@pytest.mark.parametrize("name", sorted(MISPLACED))
def test_a_run_claiming_an_offering_its_stack_or_gpu_contradicts_is_misplaced(tmp_path, name):
    stack, offering, gpu = MISPLACED[name]
    from infra.catalog import load_catalog

    run = _claiming(stack or load_catalog().get(offering).stack_name(), offering, gpu)
    _populate(open_store(str(tmp_path / "r")), [run])
    summary, rows = collect([str(tmp_path / "r")], tmp_path / "out")
    assert rows == []
    assert _reasons(summary)[result_key(run)].startswith("misplaced:")


ALLOWED = {
    "the stack's own offering and GPU": (None, "aws/g4dn.xlarge", "Tesla T4"),
    "a stack name of the user's own": ("lab-box", "aws/p3.2xlarge", "Tesla V100-SXM2-16GB"),
    "an SSH box": ("ssh-hetzner-ex51", "hetzner/ex51-ssd-gpu", "NVIDIA GeForce GTX 1080"),
    "no GPU recorded": (None, "aws/p3.2xlarge", None),
}


@pytest.mark.parametrize("name", sorted(ALLOWED))
def test_runs_whose_offering_agrees_or_cannot_be_checked_are_kept(tmp_path, name):
    stack, offering, gpu = ALLOWED[name]
    from infra.catalog import load_catalog

    run = _claiming(stack or load_catalog().get(offering).stack_name(), offering, gpu)
    _populate(open_store(str(tmp_path / "r")), [run])
    summary, rows = collect([str(tmp_path / "r")], tmp_path / "out")
    assert [r["run_id"] for r in rows] == [run["run_id"]], summary.skipped


def test_a_local_run_without_an_offering_is_kept(tmp_path):
    run = make_result("aws/p3.2xlarge", repeat=3, stack="my-desk")
    run["offering"]["id"] = None
    _populate(open_store(str(tmp_path / "r")), [run])
    summary, rows = collect([str(tmp_path / "r")], tmp_path / "out")
    assert [r["offering_id"] for r in rows] == [None], summary.skipped


# --- 5. a size cap, applied while reading --------------------------------------------------------------


def _oversized() -> tuple[dict, bytes]:
    run = make_result("aws/p3.2xlarge", repeat=4)
    run["error"] = "x" * (MAX_RESULT_BYTES + 1024)  # valid JSON, valid schema: only its size is wrong
    return run, result_bytes(run)


@pytest.mark.parametrize("where", ["file", "s3", "gs"])
def test_an_oversized_result_is_set_aside_and_grows_neither_manifest_nor_table(tmp_path, request, where):
    url = {
        "file": lambda: str(tmp_path / "r"),
        "s3": lambda: f"s3://{request.getfixturevalue('s3_bucket')}/g",
        "gs": lambda: f"gs://{request.getfixturevalue('gcs_bucket')}/g",
    }[where]()
    run, data = _oversized()
    small = make_result("aws/g4dn.xlarge", repeat=5)
    store = open_store(url)
    store.put_bytes(result_key(run), data)
    _populate(store, [small])
    out = tmp_path / "out"
    summary, rows = collect([url], out)
    assert [r["run_id"] for r in rows] == [small["run_id"]]
    assert _reasons(summary)[result_key(run)].startswith("too large:")
    assert (out / ".collect-manifest.sqlite").stat().st_size < MAX_RESULT_BYTES
    assert (out / "results.csv").stat().st_size < 100_000


@pytest.mark.parametrize("where", ["file", "s3", "gs"])
def test_the_thread_pool_reads_no_more_than_the_cap(tmp_path, request, where):
    from analysis.collect.sources import read_capped

    url = {
        "file": lambda: str(tmp_path / "r"),
        "s3": lambda: f"s3://{request.getfixturevalue('s3_bucket')}/g",
        "gs": lambda: f"gs://{request.getfixturevalue('gcs_bucket')}/g",
    }[where]()
    store = open_store(url)
    store.put_bytes("runs/s/r/result.json", b"y" * 5000)
    store.put_bytes("runs/s/e/result.json", b"")
    assert read_capped(store, "runs/s/r/result.json", 100) == b"y" * 101
    assert read_capped(store, "runs/s/e/result.json", 100) == b""


def test_the_bulk_path_never_reads_past_the_cap_even_when_the_object_grew(s3_bucket):

    from analysis.collect import s3 as bulk

    url = f"s3://{s3_bucket}"
    open_store(url).put_bytes("runs/s/r/result.json", b"z" * 5000)
    source = bulk.S3Bulk(url)
    source.max_bytes = 1000
    loop = asyncio.new_event_loop()
    try:
        for listed in (None, 500, 5000):  # a whole get, a grown object (listed small), listed large
            with pytest.raises(bulk.ObjectTooLarge) if listed != 500 else _nothing():
                got = loop.run_until_complete(source.get("runs/s/r/result.json", listed))
                assert len(got) == 500
    finally:
        loop.close()


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


# --- 6. one alphabet for names -----------------------------------------------------------------------

LOOK_ALIKES = {
    "right-to-left override": "aws-p3-\u202e1x",
    "Cyrillic a": "\u0430ws-p3-1x",
    "Unicode hyphen": "aws\u2010p3\u20101x",
    "non-breaking hyphen": "aws\u2011p3-1x",
    "formula": '=HYPERLINK("http:evil","x")',
}


@pytest.mark.parametrize("name", sorted(LOOK_ALIKES))
def test_look_alike_stack_names_are_set_aside_not_counted(tmp_path, name):
    run = make_result("aws/p3.2xlarge", repeat=6, stack=LOOK_ALIKES[name])
    run["offering"]["id"] = None  # no offering check in the way: the name alone must be refused
    store = open_store(str(tmp_path / "r"))
    key = f"runs/{run['stack']}/{run['run_id']}/result.json"
    store.put_bytes(key, result_bytes(run))
    summary, rows = collect([str(tmp_path / "r")], tmp_path / "out")
    assert rows == []
    assert _reasons(summary)[key].startswith("invalid: stack name")


def test_look_alike_run_ids_and_offering_ids_are_set_aside(tmp_path):
    odd_run = make_result("aws/p3.2xlarge", repeat=8, run_id="run-\u0441yrillic")
    odd_offering = make_result("aws/g4dn.xlarge", repeat=9)
    odd_offering["offering"]["id"] = "aws/g4dn\u2010xlarge"
    store = open_store(str(tmp_path / "r"))
    for run in (odd_run, odd_offering):
        store.put_bytes(f"runs/{run['stack']}/{run['run_id']}/result.json", result_bytes(run))
    summary, rows = collect([str(tmp_path / "r")], tmp_path / "out")
    assert rows == []
    reasons = _reasons(summary)
    assert reasons[f"runs/{odd_run['stack']}/{odd_run['run_id']}/result.json"].startswith("invalid: run id")
    assert reasons[result_key(odd_offering)].startswith("invalid: offering id")


@pytest.mark.parametrize("name", sorted(LOOK_ALIKES))
def test_the_payload_refuses_the_same_names_through_the_same_check(name):
    from payload.config import _stack

    assert layout.name_problem("stack name", LOOK_ALIKES[name]) is not None
    with pytest.raises(layout.BadKeyPart):
        layout.check_stack_name(LOOK_ALIKES[name])
    with pytest.raises(layout.BadKeyPart):
        layout.result_key(LOOK_ALIKES[name], "r-1")
    with pytest.raises(ValueError, match="not a slug"):
        _stack(LOOK_ALIKES[name])


# --- 7. spreadsheet formulas in the CSV -----------------------------------------------------------------


def test_cells_a_spreadsheet_would_evaluate_are_neutralised_in_the_csv_only(tmp_path):
    formulas = ['=HYPERLINK("http:evil","x")', "+SUM(A1)", "-2+3", "@cmd", "\tTAB", "\rCR"]
    runs = []
    for i, text in enumerate(formulas):
        run = make_result("aws/p3.2xlarge", repeat=20 + i, status="failed")
        run["error"] = text
        runs.append(run)
    _populate(open_store(str(tmp_path / "r")), runs)
    out = tmp_path / "out"
    collect([str(tmp_path / "r")], out)
    parquet = pd.read_parquet(out / "results.parquet").set_index("run_id")["error"]
    with open(out / "results.csv", newline="") as f:  # the csv module keeps a quoted \r as written
        csv = {row["run_id"]: row["error"] for row in _csv.DictReader(f)}
    for run in runs:
        assert parquet[run["run_id"]] == run["error"]
        assert csv[run["run_id"]] == "'" + run["error"]


# --- 8. a report over runs without an offering ----------------------------------------------------------


def test_default_base_of_runs_without_an_offering_is_the_default():
    from analysis.metrics import DEFAULT_BASE, default_base

    summary = pd.DataFrame({"offering_id": [None, None], "workload": ["a", "b"]})
    assert default_base(summary) == DEFAULT_BASE


def test_a_report_over_runs_without_an_offering_builds(tmp_path, capsys):
    runs = [make_result("aws/p3.2xlarge", repeat=30 + i, stack="my-desk") for i in range(2)]
    for run in runs:
        run["offering"]["id"] = None
    _populate(open_store(str(tmp_path / "r")), runs)
    out = tmp_path / "out"
    assert main(["collect", "--results", str(tmp_path / "r"), "--table", str(out)]) == 0
    assert main(["report", "--table", str(out), "--out", str(out)]) == 0
    assert (out / "index.html").exists()
