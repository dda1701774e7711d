"""Teardown at the Automation API boundary: a fake workspace records destroy calls.

Results come from a real file:// store laid out as runs/<stack>/<run-id>/result.json.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import SimpleNamespace

import pytest
from servers import require_module

from analysis.cli import main
from analysis.progress import Printer
from analysis.teardown import Outcome, teardown, teardown_completed
from infra import workspace as pulumi_ws

NOW = datetime(2024, 5, 1, 12, 0, tzinfo=timezone.utc)


class StackNotFoundError(Exception):
    """Same name as pulumi.automation.errors.StackNotFoundError."""


class CommandError(Exception):
    pass


class FakeStack:
    def __init__(self, ws, name, outputs=None, history=None, fail=None):
        self.ws, self.name, self._outputs, self._history, self.fail = ws, name, outputs or {}, history or [], fail

    def outputs(self):
        return {k: SimpleNamespace(value=v, secret=False) for k, v in self._outputs.items()}

    def history(self, page_size=None, page=None):
        return self._history

    def destroy(self, on_output=None, **kw):
        self.ws.calls.append(self.name)
        if on_output:
            on_output(f"Destroying ({self.name})\n")
        if self.fail:
            raise CommandError(f"code: 255\n stderr: error: {self.fail}")


class FakeWorkspace:
    """The surface infra.workspace expects: list_stacks, select_stack."""

    def __init__(self):
        self.stacks: dict[str, FakeStack] = {}
        self.calls: list[str] = []
        self.work_dirs: list[Path] = []

    def add(self, name, resources=5, **kw):
        self.stacks[name] = FakeStack(self, name, **kw)
        self.stacks[name].resources = resources
        return self

    def list_stacks(self):
        return [SimpleNamespace(name=n, resource_count=s.resources, last_update=None) for n, s in self.stacks.items()]

    def select_stack(self, name):
        if name not in self.stacks:
            raise StackNotFoundError(f"no stack named '{name}' found")
        return self.stacks[name]

    def factory(self, work_dir):
        self.work_dirs.append(work_dir)
        return self


@pytest.fixture
def project(tmp_path):
    """A project dir with Pulumi.yaml and a stacks/ config dir."""
    (tmp_path / "Pulumi.yaml").write_text("name: gpubench\nruntime: python\nstackConfigDir: stacks\n")
    (tmp_path / "stacks").mkdir()
    return tmp_path


def stack_file(project, name, **config):
    body = {f"gpubench:{k}": v for k, v in config.items()}
    (project / "stacks" / f"Pulumi.{name}.yaml").write_text(json.dumps({"config": body}))


def put_result(root: Path, stack, bench, status, started=NOW - timedelta(hours=1), finished=None):
    run_id = f"{started:%Y%m%dT%H%M%SZ}-i-0abc-{bench}"
    path = root / "runs" / stack / run_id / "result.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    fmt = "%Y-%m-%dT%H:%M:%SZ"
    path.write_text(
        json.dumps(
            {
                "schema_version": 1,
                "run_id": run_id,
                "stack": stack,
                "status": status,
                "started_at": started.strftime(fmt),
                "finished_at": (finished or started + timedelta(minutes=30)).strftime(fmt),
                "benchmark": {"name": bench},
            }
        )
    )


def run(ws, project, names=None, **kw):
    return teardown(names, work_dir=project, workspace_factory=ws.factory, now=NOW, printer=Printer(quiet=True), **kw)


def by_stack(outcomes):
    return {o.stack: o for o in outcomes}


def test_named_stacks_destroyed_and_one_failure_does_not_stop_the_rest(project):
    ws = (
        FakeWorkspace()
        .add("aws-p3-8x")
        .add("aws-p2-1x", fail="deleting sg-123: DependencyViolation")
        .add("gcp-v100-1x")
    )
    out = by_stack(run(ws, project, ["aws-p3-8x", "aws-p2-1x", "gcp-v100-1x"]))
    assert ws.calls == ["aws-p3-8x", "aws-p2-1x", "gcp-v100-1x"]
    assert out["aws-p3-8x"].action == "destroyed" and out["gcp-v100-1x"].action == "destroyed"
    assert out["aws-p2-1x"].action == "failed" and "DependencyViolation" in out["aws-p2-1x"].error
    assert ws.work_dirs == [project]
    # each destroy's end, for the campaign's waste and the bench's record
    assert out["aws-p3-8x"].ended_at <= out["gcp-v100-1x"].ended_at and out["aws-p2-1x"].ended_at is None


def test_progress_lines_each_carry_the_stack_so_a_transcript_cannot_forge_one(project):
    ws = FakeWorkspace().add("aws-p3-8x")
    ws.stacks["aws-p3-8x"].destroy = lambda on_output: on_output("- deleting\n\n[aws-p2-1x] destroyed\n")
    printer = Printer(quiet=True)
    teardown(["aws-p3-8x"], work_dir=project, workspace_factory=ws.factory, printer=printer)
    assert printer.lines == [
        "[aws-p3-8x] destroying (named)",
        "[aws-p3-8x] - deleting",
        "[aws-p3-8x] [aws-p2-1x] destroyed",
    ]


def test_results_stacks_and_buckets_are_refused_even_when_named(project):
    stack_file(project, "team-results", stackType="results", provider="aws")
    ws = FakeWorkspace().add("aws-results").add("gcp-results").add("team-results").add("aws-p3-8x")
    out = by_stack(run(ws, project, ["aws-results", "gcp-results", "team-results", "s3://my-results", "aws-p3-8x"]))
    assert ws.calls == ["aws-p3-8x"]
    for name in ("aws-results", "gcp-results", "team-results", "s3://my-results"):
        assert out[name].action == "refused" and not out[name].ok, name
    assert "never" in out["aws-results"].reason and "bucket" in out["s3://my-results"].reason


def test_only_refused_names_never_open_the_workspace(project):
    ws = FakeWorkspace().add("aws-results")
    out = run(ws, project, ["aws-results"])
    assert [o.action for o in out] == ["refused"] and ws.work_dirs == [] and ws.calls == []


def test_unknown_stack_is_absent_not_a_failure(project):
    out = run(FakeWorkspace(), project, ["aws-p3-8x"])
    assert out[0].action == "absent" and out[0].ok


def test_completed_destroys_only_stacks_whose_suite_is_final(project, tmp_path_factory):
    results = tmp_path_factory.mktemp("results")
    for name in ("aws-done", "aws-half", "aws-spot", "aws-old"):
        stack_file(project, name, offering="aws/p3.2xlarge", suite="a,b")
    put_result(results, "aws-done", "a", "completed")
    put_result(results, "aws-done", "b", "failed")
    put_result(results, "aws-half", "a", "completed")
    put_result(results, "aws-spot", "a", "completed")
    put_result(results, "aws-spot", "b", "interrupted")
    # results from a launch before the last `pulumi up` do not count
    put_result(results, "aws-old", "a", "completed", started=NOW - timedelta(days=7))
    put_result(results, "aws-old", "b", "completed", started=NOW - timedelta(days=7))
    last_up = [SimpleNamespace(kind="update", start_time=NOW - timedelta(hours=2), result="succeeded")]
    ws = FakeWorkspace()
    for name in ("aws-done", "aws-half", "aws-spot", "aws-old"):
        ws.add(name, outputs={"resultsUrl": results.as_uri()}, history=last_up)
    ws.add("aws-results", outputs={"resultsUrl": results.as_uri()})  # never a candidate
    out = by_stack(run(ws, project, completed=True))
    assert ws.calls == ["aws-done"]
    assert set(out) == {"aws-done", "aws-half", "aws-spot", "aws-old"}
    assert out["aws-done"].action == "destroyed" and "1 completed, 1 failed" in out["aws-done"].reason
    assert out["aws-half"].action == "kept" and "b (no result)" in out["aws-half"].reason
    assert out["aws-spot"].action == "kept" and "b (interrupted)" in out["aws-spot"].reason
    assert out["aws-old"].action == "kept" and "earlier launch" in out["aws-old"].reason


def test_completed_reads_results_url_from_flag_config_or_results_stack(project, tmp_path_factory):
    a, b, c = (tmp_path_factory.mktemp(n) for n in "abc")
    stack_file(project, "aws-flag", offering="aws/p3.2xlarge", suite="x")
    stack_file(project, "aws-cfg", offering="aws/p3.2xlarge", suite="x", results="s3://never-read")
    stack_file(project, "gcp-ref", offering="gcp/n1-standard-8+1xv100", suite="x")
    put_result(a, "aws-flag", "x", "completed")
    put_result(b, "gcp-ref", "x", "completed")
    ws = FakeWorkspace().add("aws-flag").add("gcp-ref").add("gcp-results", outputs={"resultsUrl": b.as_uri()})
    out = by_stack(run(ws, project, ["aws-flag"], completed=True, results_urls=[c.as_uri(), a.as_uri()]))
    assert out["aws-flag"].action == "destroyed"
    out = by_stack(run(ws, project, ["gcp-ref"], completed=True))  # default stack:gcp-results
    assert out["gcp-ref"].action == "destroyed"
    assert ws.calls == ["aws-flag", "gcp-ref"]


def test_completed_without_results_location_keeps_the_stack(project):
    ws = FakeWorkspace().add("aws-p3-8x")
    out = run(ws, project, ["aws-p3-8x"], completed=True)
    assert out[0].action == "kept" and "--results" in out[0].reason and ws.calls == []


@pytest.mark.parametrize("ref", ["S3://Bad Bucket", "gcs://typo", "s3://"])
def test_completed_with_a_malformed_results_location_keeps_the_stack_and_names_it(project, ref):
    stack_file(project, "aws-bad-ref", offering="aws/p3.2xlarge", suite="x", results=ref)
    ws = FakeWorkspace().add("aws-bad-ref")
    out = run(ws, project, ["aws-bad-ref"], completed=True)
    assert out[0].action == "kept" and "gpubench:results" in out[0].reason and ws.calls == []


def test_expired_uses_deadline_output_then_update_time_plus_max_hours(project):
    stack_file(project, "aws-fallback", offering="aws/p3.2xlarge", maxHours=2)
    stack_file(project, "aws-fresh", offering="aws/p3.2xlarge", maxHours=2)
    ws = (
        FakeWorkspace()
        .add("aws-past", outputs={"deadline": "2024-05-01T11:59:00Z"})
        .add("aws-future", outputs={"deadline": "2024-05-01T12:30:00Z"})
        .add("aws-fallback", history=[SimpleNamespace(kind="update", start_time=NOW - timedelta(hours=3))])
        .add("aws-fresh", history=[SimpleNamespace(kind="update", start_time=NOW - timedelta(hours=1))])
        .add("aws-unknown")
        .add("aws-empty", resources=0, outputs={"deadline": "2024-05-01T11:00:00Z"})
    )
    out = by_stack(run(ws, project, expired=True))
    assert sorted(ws.calls) == ["aws-fallback", "aws-past"]
    assert "aws-empty" not in out  # nothing left to destroy
    assert out["aws-future"].action == "kept" and "2024-05-01T12:30" in out["aws-future"].reason
    assert out["aws-fresh"].action == "kept"
    assert out["aws-unknown"].action == "kept" and "no deadline" in out["aws-unknown"].reason


def test_dry_run_destroys_nothing(project):
    ws = FakeWorkspace().add("aws-past", outputs={"deadline": "2024-05-01T11:00:00Z"}).add("aws-p3-8x")
    out = by_stack(run(ws, project, ["aws-past", "aws-p3-8x"], expired=True, dry_run=True))
    assert ws.calls == []
    assert out["aws-past"].action == "would-destroy" and out["aws-p3-8x"].action == "kept"


def test_teardown_completed_api_for_collect(project, tmp_path_factory):
    results = tmp_path_factory.mktemp("results")
    put_result(results, "aws-p3-8x", "mnist-cnn", "completed")
    ws = FakeWorkspace().add("aws-p3-8x").add("aws-p2-1x")
    out = teardown_completed(
        ["aws-p3-8x", "aws-p2-1x"],
        results_urls=[results.as_uri()],
        dry_run=False,
        work_dir=project,
        workspace_factory=ws.factory,
        printer=Printer(quiet=True),
    )
    assert all(isinstance(o, Outcome) for o in out)
    assert ws.calls == ["aws-p3-8x"] and by_stack(out)["aws-p2-1x"].action == "kept"


def test_nothing_selected_is_a_usage_error(project):
    with pytest.raises(ValueError, match="--completed"):
        run(FakeWorkspace(), project)


def test_cli_json_and_exit_code(project, monkeypatch, capsys):
    ws = FakeWorkspace().add("aws-ok").add("aws-bad", fail="boom")
    monkeypatch.setattr(pulumi_ws, "local_workspace", ws.factory)
    code = main(["teardown", "aws-ok", "aws-bad", "aws-results", "--project-dir", str(project), "--json", "--yes"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 1 and doc["ok"] is False and doc["dry_run"] is False
    assert [(o["stack"], o["action"]) for o in doc["outcomes"]] == [
        ("aws-results", "refused"),
        ("aws-ok", "destroyed"),
        ("aws-bad", "failed"),
    ]
    assert set(doc["outcomes"][0]) == {"stack", "action", "reason", "error", "seconds", "ok"}


def test_cli_table_output(project, monkeypatch, capsys):
    ws = FakeWorkspace().add("aws-ok")
    monkeypatch.setattr(pulumi_ws, "local_workspace", ws.factory)
    assert main(["teardown", "aws-ok", "--project-dir", str(project), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "aws-ok" in out and "would-destroy" in out and "dry run" in out


def test_missing_cli_says_how_to_install(project, monkeypatch, capsys):
    monkeypatch.setattr(pulumi_ws.shutil, "which", lambda name: None)
    code = main(["teardown", "--expired", "--project-dir", str(project), "--yes"])
    err = capsys.readouterr().err
    assert code == 3  # exitcodes.MISSING
    assert "Pulumi CLI is not installed" in err and "curl -fsSL https://get.pulumi.com | sh" in err
    assert "pulumi.com/docs/install" in err


def test_cli_vanishing_after_which_still_gives_the_message(project, monkeypatch):
    """The real Automation API raises FileNotFoundError when it execs a missing `pulumi`."""
    require_module("pulumi.automation")  # a failure under CI=true, not a skip
    monkeypatch.setattr(pulumi_ws.shutil, "which", lambda name: "/nonexistent/pulumi")
    monkeypatch.setenv("PATH", str(project))  # no pulumi here
    with pytest.raises(pulumi_ws.PulumiMissing, match="get.pulumi.com"):
        pulumi_ws.local_workspace(project)


def test_completed_counts_a_run_resumed_after_the_relaunch(project, tmp_path_factory):
    """A spot run interrupted, then resumed by `pulumi up` on a new instance, keeps its
    first attempt's started_at; it belongs to the launch of its newest attempt."""
    results = tmp_path_factory.mktemp("results")
    stack_file(project, "aws-resumed", offering="aws/p3.2xlarge", suite="a")
    put_result(results, "aws-resumed", "a", "completed", started=NOW - timedelta(hours=5), finished=NOW)
    path = next((results / "runs" / "aws-resumed").glob("*/result.json"))
    doc = json.loads(path.read_text())
    fmt = "%Y-%m-%dT%H:%M:%SZ"
    doc["attempts"] = [
        {"attempt": 1, "start": (NOW - timedelta(hours=5)).strftime(fmt), "status": "interrupted"},
        {"attempt": 2, "start": (NOW - timedelta(hours=1)).strftime(fmt), "status": "completed"},
    ]
    path.write_text(json.dumps(doc))
    last_up = [SimpleNamespace(kind="update", start_time=NOW - timedelta(hours=2), result="succeeded")]
    ws = FakeWorkspace().add("aws-resumed", outputs={"resultsUrl": results.as_uri()}, history=last_up)
    out = by_stack(run(ws, project, completed=True))
    assert out["aws-resumed"].action == "destroyed", out["aws-resumed"].reason


def test_suite_is_read_leniently_never_shrunk(project, tmp_path_factory):
    """An unparseable-by-infra suite must still count every benchmark, never just the results present."""
    results = tmp_path_factory.mktemp("results")
    stack_file(project, "aws-json", offering="aws/p3.2xlarge", suite='["Weird Name", "other"]')
    stack_file(project, "aws-default", offering="aws/p3.2xlarge")
    put_result(results, "aws-json", "Weird Name", "completed")
    put_result(results, "aws-default", "mnist-cnn", "completed")
    ws = FakeWorkspace().add("aws-json").add("aws-default")
    out = by_stack(run(ws, project, ["aws-json", "aws-default"], completed=True, results_urls=[results.as_uri()]))
    assert ws.calls == []
    assert "other (no result)" in out["aws-json"].reason
    assert out["aws-default"].action == "kept"  # the default suite has more than mnist-cnn


@pytest.mark.parametrize(
    "forged",
    ["2024-05-01", "2024-05-01T11:00:00+00:00", "yesterday", "2024-05-01T11:00Z", "20240501t110000z", "1714561200"],
)
def test_a_deadline_output_not_in_the_launchers_format_is_left_alone_with_the_reason(project, forged):
    """A stack whose `deadline` output was not written by the launcher (hand-edited,
    another tool's, forged) is never destroyed by --expired, even if it reads as past."""
    stack_file(project, "aws-forged", offering="aws/p3.2xlarge", maxHours=1)
    ws = FakeWorkspace().add(
        "aws-forged",
        outputs={"deadline": forged},
        history=[SimpleNamespace(kind="update", start_time=NOW - timedelta(hours=30))],
    )
    out = by_stack(run(ws, project, expired=True))
    assert ws.calls == []
    assert out["aws-forged"].action == "kept"
    assert "not in the launcher's format" in out["aws-forged"].reason and "left alone" in out["aws-forged"].reason


def test_a_bench_probe_named_is_destroyed_from_its_workspace_and_ended_in_its_record(project, monkeypatch, capsys):
    from analysis.bench.record import BenchRecord, bench_root

    probe = "aws-g4dn-1x-b1"
    workspace = bench_root(project) / "b1"
    workspace.mkdir(parents=True)
    record = {"bench_id": "b1", "stacks": {probe: {"kind": "cloud"}, "local": {"kind": "local"}}}
    (workspace / "bench.json").write_text(json.dumps(record))
    ws = FakeWorkspace().add(probe)
    monkeypatch.setattr(pulumi_ws, "local_workspace", ws.factory)
    assert main(["teardown", probe, "--project-dir", str(project), "--yes"]) == 0
    assert ws.calls == [probe] and ws.work_dirs == [workspace]  # launched from its bench's workspace
    assert BenchRecord.load(workspace).stacks[probe]["teardown"]["action"] == "destroyed"
    assert "teardown" not in BenchRecord.load(workspace).stacks["local"]
