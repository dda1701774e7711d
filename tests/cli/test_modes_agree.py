"""No hidden failure: every mode of a command (asking, --yes, --dry-run, --json) reports the same check
and exits on it, so "nothing to do" never stands for "could not look"; and a command the tool prints
works as printed."""

from __future__ import annotations

import io
import json
import re
import shlex
import sys
from types import SimpleNamespace

import pytest
import yaml
from servers import closed_port_url

from analysis.cli import main
from infra import workspace as pulumi_ws
from payload import exitcodes

MODES = {"asking": [], "--yes": ["--yes"], "--dry-run": ["--dry-run"], "--json": ["--json"]}


@pytest.fixture
def aws_unreachable(monkeypatch):
    """AWS credentials, and an endpoint where nothing listens: every call fails at once."""
    monkeypatch.setenv("AWS_ENDPOINT_URL", closed_port_url())
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("GPUBENCH_STORAGE_RETRIES", "1")
    monkeypatch.setenv("GPUBENCH_STORAGE_BACKOFF", "0.01")


@pytest.mark.parametrize("mode", sorted(MODES))
def test_sweep_that_cannot_reach_the_cloud_fails_in_every_mode(mode, aws_unreachable, capsys):
    code = main(["sweep", "--provider", "aws", "--region", "us-east-1", *MODES[mode]])
    out, err = capsys.readouterr()
    assert code == exitcodes.FAILED, out + err
    assert "failed" in out and "us-east-1" in out


@pytest.mark.parametrize("mode", sorted(MODES))
def test_teardown_of_a_results_stack_is_refused_in_every_mode(mode, capsys):
    code = main(["teardown", "aws-results", *MODES[mode]])
    out, err = capsys.readouterr()
    assert code == exitcodes.FAILED, out + err
    assert "refused" in out and "results" in out


# --- a command the tool prints works as printed ---------------------------------------------------


class _Stack:
    def __init__(self, ws, name):
        self.ws, self.name = ws, name

    def outputs(self):
        return {}

    def history(self, page_size=None, page=None):
        return []

    def destroy(self, on_output=None, **kw):
        self.ws.destroyed.append((self.name, self.ws.work_dir))


class _Workspace:
    """The bench workspace's Pulumi backend, as teardown sees it: the probe stack is there."""

    def __init__(self, names):
        self.names, self.destroyed, self.work_dir = set(names), [], None

    def factory(self, work_dir):
        self.work_dir = work_dir
        return self

    def list_stacks(self):
        return [SimpleNamespace(name=n, resource_count=3) for n in self.names]

    def select_stack(self, name):
        if name not in self.names:
            raise RuntimeError(f"no stack named '{name}' found")
        return _Stack(self, name)


class _Terminal(io.StringIO):
    """stdin of a person who answers `y`."""

    def isatty(self):
        return True


def test_the_teardown_bench_prints_after_ctrl_c_destroys_the_probe(tmp_path, monkeypatch, capsys):
    from analysis.bench.probes import Live, Probes
    from analysis.bench.record import BenchRecord, bench_root
    from analysis.bench.run import cancelled
    from analysis.progress import Printer

    name = "aws-g4dn-1x-b3f2a"
    workspace = bench_root() / "20261125T094000Z-3f2a"  # where bench keeps it: the state home
    record = BenchRecord.create(workspace, "20261125T094000Z-3f2a", "task.yaml", "s3://bucket")
    record.update(name, kind="cloud", state="launched", offering="aws/g4dn.xlarge")
    (workspace / "stacks").mkdir()
    (workspace / "stacks" / f"Pulumi.{name}.yaml").write_text(yaml.safe_dump({"config": {}}))
    printed = io.StringIO()
    probes = Probes(Printer(printed))
    probes.hold(Live(name, lambda: None, "2026-11-25T10:40:00Z", "stack"))
    task = SimpleNamespace(path=tmp_path / "task.yaml")
    candidate = SimpleNamespace(offering="aws/g4dn.xlarge", name=name, kind="cloud")
    cancelled(task, [candidate], probes, False, lambda lines, question, yes: False, record)  # "leave them"

    (command,) = re.findall(r"`(gpubench teardown [^`]+)`", printed.getvalue())
    ws = _Workspace([name])
    monkeypatch.setattr(pulumi_ws, "local_workspace", ws.factory)
    monkeypatch.setattr(sys, "stdin", _Terminal("y\n"))
    monkeypatch.chdir(tmp_path)  # from anywhere: no checkout, no --project-dir
    code = main(shlex.split(command)[1:])
    out, err = capsys.readouterr()
    assert code == exitcodes.OK, out + err
    assert ws.destroyed == [(name, workspace)]  # in the bench's own Pulumi project
    assert BenchRecord.load(workspace).stacks[name]["teardown"]["action"] == "destroyed"  # status stops listing it


def test_a_name_that_is_neither_a_stack_nor_a_probe_is_named_as_such(capsys):
    code = main(["teardown", "aws-g4dn-1x-zzzzz", "--yes"])
    err = capsys.readouterr().err
    assert code == exitcodes.USAGE and "nor among the benches' probes" in err


def test_status_never_says_at_none(tmp_path, capsys):
    """A probe recorded without a launch time (a local or SSH probe) still reads as a sentence."""
    from analysis.bench.record import BenchRecord, bench_root

    record = BenchRecord.create(bench_root(tmp_path) / "b1", "b1", "task.yaml", str(tmp_path / "bucket"))
    record.update("local", kind="local", state="launched", suite=["job"])
    assert main(["status", "--project-dir", str(tmp_path), "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["state"] == "launched" and "None" not in row["detail"]


# --- logs: --follow ends when the run is over; bounded polling; a bad bucket is a usage error ------


def _dead_run(tmp_path, age_hours: float):
    """A run that wrote a log tail `age_hours` ago and then died: no result will ever come."""
    import os
    import time

    tail = tmp_path / "bucket" / "runs" / "aws-g4dn-1x" / "20261125T095100Z-i-1-job" / "log-tail.txt"
    tail.parent.mkdir(parents=True)
    tail.write_text("step 1\n")
    then = time.time() - age_hours * 3600
    os.utime(tail, (then, then))
    return ["logs", "aws-g4dn-1x", "--results", str(tmp_path / "bucket"), "--follow", "--poll", "1"]


def bounded(argv: list[str], seconds: int = 30) -> int:
    """`main(argv)`, failing the test (not hanging the suite) when it has not returned in `seconds`."""
    import signal

    def stuck(signum, frame):
        raise AssertionError(f"`gpubench {' '.join(argv)}` still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, stuck)
    signal.alarm(seconds)
    try:
        return main(argv)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def test_follow_ends_when_the_run_can_no_longer_be_alive(tmp_path, capsys):
    code = bounded(_dead_run(tmp_path, age_hours=100))  # no stack lives that long after its last upload
    out, err = capsys.readouterr()
    assert code == exitcodes.FAILED and out == "step 1\n" and "over without a result" in err


def test_follow_ends_at_the_deadline_its_bench_recorded(tmp_path, capsys):
    from analysis.bench.record import BenchRecord, bench_root
    from payload.timestamps import iso, utcnow

    argv = _dead_run(tmp_path, age_hours=0.1)
    record = BenchRecord.create(bench_root(tmp_path) / "b1", "b1", "task.yaml", str(tmp_path / "bucket"))
    record.update("aws-g4dn-1x", kind="cloud", state="launched", deadline=iso(utcnow().replace(year=2025)))
    assert bounded([*argv, "--project-dir", str(tmp_path)]) == exitcodes.FAILED
    assert "over without a result" in capsys.readouterr().err


@pytest.mark.parametrize("poll", ["0", "0.01", "-1", "nan", "inf", "1e400"])
def test_follow_polls_at_most_once_a_second(poll, tmp_path, capsys):
    argv = _dead_run(tmp_path, age_hours=100)
    assert bounded([*argv[:-1], poll]) == exitcodes.USAGE
    err = capsys.readouterr().err
    assert "--poll" in err and "error: --poll" in err.splitlines()[0]  # refused before a line is printed


@pytest.mark.parametrize("wait", ["nan", "-1", "inf", "1e300"])
def test_follow_refuses_a_wait_it_cannot_keep(wait, tmp_path, capsys):
    argv = _dead_run(tmp_path, age_hours=100)
    assert bounded([*argv, "--wait", wait]) == exitcodes.USAGE
    assert f"--wait {float(wait):g}: give minutes from 0" in capsys.readouterr().err


@pytest.mark.parametrize("command", [["campaign", "wait", "c1"], ["campaign", "run", "aws-g4dn-1x"]])
def test_campaign_refuses_an_infinite_poll(command, tmp_path, capsys):
    assert bounded([*command, "--results", str(tmp_path), "--poll", "inf"]) == exitcodes.USAGE
    assert "--poll inf: longer between reads" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [
        ["logs", "aws-g4dn-1x"],
        ["campaign", "status", "c1"],
        ["teardown", "--completed", "--dry-run"],
        ["check"],
        ["demo"],
        ["collect"],
    ],
)
def test_an_unsupported_results_scheme_is_a_usage_error_before_anything_runs(argv, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main([*argv, "--results", "ftp://x"]) == exitcodes.USAGE
    assert "--results: 'ftp://x'" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []  # nothing was written (demo once made ./ftp:/x)


@pytest.mark.parametrize("command", [["campaign", "wait", "c1"], ["campaign", "run", "aws-g4dn-1x"]])
def test_campaign_polls_at_most_once_a_second(command, tmp_path, capsys):
    assert bounded([*command, "--results", str(tmp_path), "--poll", "0"]) == exitcodes.USAGE
    assert "--poll 0: read at most once a second" in capsys.readouterr().err


def test_a_schedule_file_polls_at_most_once_a_second(tmp_path, capsys):
    schedule = tmp_path / "nightly.yaml"
    schedule.write_text(yaml.safe_dump({"cron": "0 6 * * 1", "stacks": ["aws-g4dn-1x"], "results": "r", "poll": 0}))
    assert main(["campaign", "schedule", str(schedule)]) == exitcodes.USAGE
    assert "poll 0: read at most once a second" in capsys.readouterr().err


# --- status: a bucket that cannot be read is an unknown state and exit 4, not "nothing yet" --------


@pytest.mark.parametrize("mode", [[], ["--json"], ["--all"]])
def test_status_of_a_probe_whose_bucket_is_unreachable_says_so_in_every_mode(mode, aws_unreachable, tmp_path, capsys):
    from analysis.bench.record import BenchRecord, bench_root

    record = BenchRecord.create(bench_root(tmp_path) / "b1", "b1", "task.yaml", "s3://gpubench-gone/x")
    record.update("aws-g4dn-1x-b0001", kind="cloud", state="launched", launched_at="2026-11-25T10:00:00Z")
    code = main(["status", "--project-dir", str(tmp_path), *mode])
    out, err = capsys.readouterr()
    assert code == exitcodes.REMOTE and "could not read the bucket" in err
    assert "nothing in the bucket yet" not in out and "state unknown" in out


@pytest.mark.parametrize("mode", [[], ["--json"]])
def test_campaign_status_whose_stack_bucket_is_unreachable_exits_4(mode, aws_unreachable, tmp_path, capsys):
    from payload.storage import open_store

    manifest = {
        "campaign_id": "c1",
        "results": str(tmp_path),
        "stacks": {"aws-g4dn-1x": {"state": "launched", "outputs": {"resultsUrl": "s3://gpubench-gone/x"}}},
    }
    open_store(str(tmp_path)).put_bytes("campaigns/c1/manifest.json", json.dumps(manifest).encode())
    code = main(["campaign", "status", "c1", "--results", str(tmp_path), *mode])
    out, err = capsys.readouterr()
    assert code == exitcodes.REMOTE and "aws-g4dn-1x" in err and "nothing in the bucket yet" not in out


@pytest.mark.parametrize("mode", sorted(MODES))
def test_teardown_completed_that_cannot_read_the_bucket_fails_in_every_mode(
    mode, aws_unreachable, tmp_path, monkeypatch, capsys
):
    (tmp_path / "stacks").mkdir()
    ws = _Workspace(["aws-g4dn-1x"])
    monkeypatch.setattr(pulumi_ws, "local_workspace", ws.factory)
    argv = ["teardown", "aws-g4dn-1x", "--completed", "--results", "s3://gpubench-gone/x"]
    code = main([*argv, "--project-dir", str(tmp_path), *MODES[mode]])
    out, err = capsys.readouterr()
    assert code == exitcodes.FAILED and "could not decide" in out and ws.destroyed == []


def _waiting_campaign(tmp_path) -> list[str]:
    from payload.storage import open_store

    bucket = tmp_path / "bucket"
    manifest = {"campaign_id": "c1", "results": str(bucket), "stacks": {"aws-g4dn-1x": {"state": "launched"}}}
    open_store(str(bucket)).put_bytes("campaigns/c1/manifest.json", json.dumps(manifest).encode())
    return ["campaign", "wait", "c1", "--results", str(bucket), "--timeout", "0", "--poll", "1"]


def test_the_wait_command_printed_after_a_timeout_works_as_printed(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("GPUBENCH_RESULTS", raising=False)
    assert main(_waiting_campaign(tmp_path)) == exitcodes.INTERRUPTED
    (command,) = re.findall(r"`(gpubench campaign wait [^`]+)`", capsys.readouterr().err)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert main([*shlex.split(command)[1:], "--timeout", "0"]) == exitcodes.INTERRUPTED  # found the campaign


def test_a_wait_that_times_out_keeps_stdout_json(tmp_path, capsys):
    assert main([*_waiting_campaign(tmp_path), "--json"]) == exitcodes.INTERRUPTED
    doc = json.loads(capsys.readouterr().out)
    assert doc["done"] is False and [s["stack"] for s in doc["stacks"]] == ["aws-g4dn-1x"]


@pytest.mark.parametrize("argv", [["campaign", "status", "c1"], ["campaign", "wait", "c1"], ["logs", "aws-g4dn-1x"]])
def test_an_unsupported_results_variable_is_a_usage_error_too(argv, monkeypatch, capsys):
    monkeypatch.setenv("GPUBENCH_RESULTS", "ftp://x")
    assert main(argv) == exitcodes.USAGE
    assert "$GPUBENCH_RESULTS: 'ftp://x'" in capsys.readouterr().err
