"""Every reader of a run takes the newest version of each of its files: a resumed attempt writes
result.v1.json beside its predecessor's result.json (nothing is ever overwritten), and collect,
the campaign's and bench's observations and `gpubench logs` all read the newer one."""

from __future__ import annotations

import json

import pytest
from synthetic_results import make_result

from analysis.bench.probes import newest_result
from analysis.bench.record import latest_log
from analysis.collect import collect
from analysis.observe import observe
from payload.layout import run_prefix
from payload.storage import open_store

STACK = "aws-p3-2x"


def _resumed_run(store) -> tuple[str, dict]:
    """A run interrupted once and completed by its second attempt, as the payload leaves it."""
    first = make_result("aws/p3.2xlarge", stack=STACK, status="interrupted", run_id="r1")
    final = make_result("aws/p3.2xlarge", stack=STACK, status="completed", run_id="r1", attempts=2)
    prefix = run_prefix(STACK, "r1")
    for name, doc in (("result.json", first), ("result.v1.json", final)):
        store.put_bytes(prefix + name, json.dumps(doc).encode())
    for generation in ("", ".v1"):
        store.put_bytes(f"{prefix}events{generation}.jsonl", b"")
        store.put_bytes(f"{prefix}epochs{generation}.csv", b"epoch,elapsed,loss,acc,val_loss,val_acc\n")
    return prefix, final


@pytest.mark.parametrize("kind", ["file", "s3"])
def test_collect_counts_a_resumed_run_once_by_its_newest_result(kind, tmp_path, request):
    url = str(tmp_path / "bucket") if kind == "file" else f"s3://{request.getfixturevalue('s3_bucket')}/g"
    _resumed_run(open_store(url))
    summary, rows = collect([url], tmp_path / "table", workers=2, progress=False)
    assert [(r["run_id"], r["status"]) for r in rows] == [("r1", "completed")]
    assert summary.runs == 1
    assert not [s for s in summary.skipped if "r1" in s.get("key", "")], summary.skipped


def test_the_campaign_and_bench_see_the_newest_result(tmp_path):
    store = open_store(str(tmp_path / "bucket"))
    prefix, final = _resumed_run(store)
    obs = observe(store, STACK, None)
    (run,) = obs.runs
    assert (run.status, run.result_key) == ("completed", prefix + "result.v1.json")
    found = newest_result(store, STACK, None)
    assert found is not None and found[1]["status"] == "completed" and found[0].endswith("result.v1.json")


def test_logs_print_the_newest_rolling_log_tail(tmp_path):
    store = open_store(str(tmp_path / "bucket"))
    prefix = run_prefix(STACK, "r1")
    for name, text in (("log-tail.txt", "first"), ("log-tail.v0.9.txt", "ninth"), ("log-tail.v0.12.txt", "last")):
        store.put_bytes(prefix + name, text.encode())
    run_id, text, finished = latest_log(store, STACK)
    assert (run_id, text, finished) == ("r1", "last", False)


def test_an_interrupted_newest_result_still_says_interrupted(tmp_path):
    store = open_store(str(tmp_path / "bucket"))
    prefix = run_prefix(STACK, "r2")
    older = make_result("aws/p3.2xlarge", stack=STACK, status="interrupted", run_id="r2")
    newer = make_result("aws/p3.2xlarge", stack=STACK, status="interrupted", run_id="r2", attempts=2)
    newer["finished_at"] = older["finished_at"]  # the version decides, not a time the result claims
    store.put_bytes(prefix + "result.json", json.dumps(older).encode())
    store.put_bytes(prefix + "result.v1.json", json.dumps(newer).encode())
    (run,) = observe(store, STACK, None).runs
    assert run.result_key.endswith("result.v1.json")
