"""`gpubench status` and `gpubench logs` against a bench record and a results bucket holding one running
probe and one finished, destroyed probe."""

from __future__ import annotations

import io
import json
from datetime import datetime, timedelta, timezone

import pytest

from analysis.bench.record import BenchRecord, bench_root, follow_log, latest_log, new_lines, probe_status, status_table
from analysis.cli import main
from analysis.price.billed import billed_seconds
from infra.catalog import load_catalog
from payload.storage import open_store
from payload.timestamps import iso

NOW = datetime(2026, 11, 25, 10, 0, tzinfo=timezone.utc)
BENCH = "20261125T094000Z-00aa"
RUNNING, DONE = "aws-g4dn-1x-b00aa", "aws-g5-1x-b00aa"
JOB = "workload-fakejob"


def put(store, key, text):
    store.put_bytes(key, text.encode())


@pytest.fixture
def world(tmp_path):
    bucket = tmp_path / "bucket"
    store = open_store(str(bucket))
    started = NOW - timedelta(minutes=10)
    record = BenchRecord.create(bench_root(tmp_path) / BENCH, BENCH, str(tmp_path / "task.yaml"), str(bucket))
    common = {"kind": "cloud", "market": "on-demand", "state": "launched", "suite": [JOB], "results": str(bucket)}
    record.update(
        RUNNING,
        **common,
        offering="aws/g4dn.xlarge",
        hourly_usd=0.526,
        up_started_at=iso(started),
        launched_at=iso(started + timedelta(minutes=1)),
        deadline=iso(NOW + timedelta(minutes=11)),
    )
    record.update(
        DONE,
        **common,
        offering="aws/g5.xlarge",
        hourly_usd=1.006,
        up_started_at=iso(started),
        launched_at=iso(started + timedelta(minutes=1)),
        deadline=iso(NOW + timedelta(minutes=11)),
        teardown={"action": "destroyed", "at": iso(NOW - timedelta(minutes=2))},
    )
    run = f"runs/{RUNNING}/20261125T095100Z-i-1-{JOB}"
    event = {"event": "first_step", "time": iso(NOW - timedelta(minutes=1))}
    put(store, f"{run}/events.jsonl", json.dumps(event) + "\n")
    put(store, f"{run}/log-tail.txt", "step 1\nstep 2\n")
    done = f"runs/{DONE}/20261125T095100Z-i-2-{JOB}"
    result = {
        "status": "completed",
        "benchmark": {"name": JOB},
        "started_at": iso(started + timedelta(minutes=2)),
        "finished_at": iso(NOW - timedelta(minutes=3)),
        "timeline": [{"event": "upload", "time": iso(NOW - timedelta(minutes=3))}],
    }
    put(store, f"{done}/result.json", json.dumps(result))
    put(store, f"{done}/log-tail.txt", "done\n")
    return {"dir": tmp_path, "store": store, "bucket": bucket, "running_run": run}


def test_status_lists_the_running_probe_with_age_deadline_and_cost_so_far(world):
    rows = probe_status(world["dir"], now=NOW)
    assert [r["stack"] for r in rows] == [RUNNING]
    (row,) = rows
    assert row["state"] == "running" and "first_step" in row["detail"]
    assert row["age_seconds"] == 600 and row["deadline"] == iso(NOW + timedelta(minutes=11))
    terms = load_catalog().billing_terms("aws/g4dn.xlarge")
    assert row["cost_usd"] == pytest.approx(billed_seconds(terms, 600) / 3600 * 0.526, abs=1e-6)
    assert row["bench_id"] == BENCH and row["ended"] is False


def test_status_all_includes_the_finished_destroyed_probe(world):
    rows = {r["stack"]: r for r in probe_status(world["dir"], now=NOW, include_ended=True)}
    assert rows[DONE]["state"] == "finished" and rows[DONE]["ended"] is True
    assert rows[RUNNING]["state"] == "running"


def test_status_adds_resource_counts_from_the_backend(world):
    class Backend:
        def list_stacks(self):
            class S:
                name, resource_count = RUNNING, 7

            return [S()]

    rows = probe_status(world["dir"], now=NOW, backend=lambda _dir: Backend())
    assert rows[0]["resources"] == 7
    assert "resources" in status_table(rows).splitlines()[0] and "resources" not in status_table(
        probe_status(world["dir"], now=NOW)
    )


def test_status_command_json_and_table(world, capsys):
    assert main(["status", "--project-dir", str(world["dir"]), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["stack"] for r in rows] == [RUNNING]
    assert main(["status", "--project-dir", str(world["dir"]), "--all"]) == 0
    out = capsys.readouterr().out
    assert RUNNING in out and DONE in out and "cost so far" in out


def test_logs_prints_the_newest_log_tail(world, capsys):
    run_id, text, finished = latest_log(world["store"], RUNNING)
    assert text == "step 1\nstep 2\n" and not finished
    assert main(["logs", RUNNING, "--project-dir", str(world["dir"])]) == 0  # bucket from the bench record
    captured = capsys.readouterr()
    assert captured.out == "step 1\nstep 2\n" and "running" in captured.err
    assert main(["logs", "no-such-stack", "--results", str(world["bucket"])]) == 1


def test_follow_prints_each_line_once_until_the_result_lands(world):
    store, run = world["store"], world["running_run"]
    steps = iter(
        [
            lambda: put(store, f"{run}/log-tail.txt", "step 2\nstep 3\nstep 4\n"),  # the tail rolled
            lambda: (
                put(store, f"{run}/log-tail.txt", "step 4\nstep 5\n"),
                put(store, f"{run}/result.json", json.dumps({"status": "completed"})),
            ),
        ]
    )
    out = io.StringIO()
    run_id = follow_log(store, RUNNING, out, poll=0, sleep=lambda _s: next(steps)())
    assert run_id == run.rsplit("/", 1)[-1]
    assert out.getvalue().splitlines() == ["step 1", "step 2", "step 3", "step 4", "step 5"]


def test_follow_of_a_stack_with_no_log_gives_up_after_the_wait_and_names_the_fix(world, capsys):
    sleeps: list[float] = []
    out = io.StringIO()
    assert follow_log(world["store"], "aws-nothing-here", out, poll=0, sleep=sleeps.append, first_log_wait=0) is None
    assert out.getvalue() == "" and sleeps == []
    url = world["store"].url_for("")
    code = main(["logs", "aws-nothing-here", "--results", url, "--follow", "--wait", "0", "--poll", "1"])
    assert code != 0 and "--wait MINUTES" in capsys.readouterr().err


def test_new_lines_of_a_rolling_tail():
    assert new_lines([], ["a"]) == ["a"]
    assert new_lines(["a", "b", "c"], ["b", "c", "d"]) == ["d"]
    assert new_lines(["a", "b"], ["x", "y"]) == ["x", "y"]  # rolled past everything seen


def test_two_local_benches_are_listed_apart(tmp_path, monkeypatch, capsys):
    """Each bench's local probe is a stack of its own (local-<bench id>): its runs, state and cost never
    mix with another bench's, and no detail says None."""
    from bench_fakes import write_task

    import analysis.bench.run as launch
    from analysis.bench.probes import ProbeReport, judge, newest_result
    from analysis.bench.run import bench

    results = tmp_path / "results"
    store = open_store(str(results))

    class FakeLocal:
        """The local probe without a payload process: one completed probe result under the candidate's stack."""

        def __call__(self, candidate, probes):
            start = datetime.now(timezone.utc)
            run = f"runs/{candidate.name}/{start:%Y%m%dT%H%M%S%fZ}-local-{JOB}/result.json"
            doc = {
                "status": "completed",
                "benchmark": {"name": JOB},
                "started_at": iso(start),
                "finished_at": iso(start + timedelta(seconds=5)),
                "probe": {"stopped_by": "steady"},
            }
            put(store, run, json.dumps(doc))
            url, result = newest_result(store, candidate.name, start - timedelta(seconds=1))
            return ProbeReport(candidate, candidate.name, *judge(result), result, 0.0, run_url=url)

    monkeypatch.setattr(launch, "LocalProbe", lambda **kw: FakeLocal())
    task = write_task(tmp_path / "t")
    for _ in range(2):
        bench(task, local=True, yes=True, results=str(results), work_dir=tmp_path, progress=io.StringIO())
    assert main(["status", "--all", "--json", "--project-dir", str(tmp_path)]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 2 and len({r["bench_id"] for r in rows}) == 2
    for row in rows:
        assert row["stack"] == f"local-{row['bench_id']}" and len(row["run_ids"]) == 1
        assert "None" not in str(row["detail"])
    assert rows[0]["run_ids"] != rows[1]["run_ids"]
