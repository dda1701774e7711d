"""The campaign calls the `campaign run` and `campaign schedule` commands stand on, called
directly: analysis.campaign.commands.run / run_schedule / launch_failures and
analysis.campaign.schedule.describe, against the stub backend of the unit tests."""

from __future__ import annotations

import pytest
import yaml
from campaign_project import make_project
from test_campaign_units import StubBackend

from analysis.campaign import commands, schedule
from analysis.progress import Printer


def _project(tmp_path, names):
    return make_project(tmp_path / "project", {n: {} for n in names}, tiny=False)


def test_run_launches_a_new_campaign_then_waits_for_it(tmp_path):
    project = _project(tmp_path, ["aws-g4dn-1x", "aws-g5-12x"])
    stub = StubBackend(faults={("aws-g5-12x", None): "VcpuLimitExceeded: limit 0"})
    done = commands.run(
        ["aws-*"],
        results_url=(tmp_path / "bucket").as_uri(),
        concurrency=2,
        poll_seconds=0,
        timeout=0,
        work_dir=project,
        backend_factory=stub.factory,
        printer=Printer(quiet=True),
    )
    assert done.launch.actions == {"aws-g4dn-1x": "launched", "aws-g5-12x": "failed"}
    assert commands.launch_failures(done.manifest, done.launch) == ["aws-g5-12x"]
    assert not done.outcome.done and {s.stack for s in done.outcome.statuses} == {"aws-g4dn-1x", "aws-g5-12x"}
    assert done.manifest.campaign_id and sorted(done.manifest.stacks) == ["aws-g4dn-1x", "aws-g5-12x"]
    assert stub.destroyed == []  # nothing is torn down while a stack is still running


def test_run_needs_stacks(tmp_path):
    with pytest.raises(ValueError, match="name stacks or globs"):
        commands.run([], results_url=(tmp_path / "bucket").as_uri(), work_dir=tmp_path)


def test_launch_failures_counts_earlier_failures_of_the_campaign(tmp_path):
    project = _project(tmp_path, ["aws-g4dn-1x", "aws-g5-12x"])
    bucket = (tmp_path / "bucket").as_uri()
    failing = StubBackend(faults={("aws-g5-12x", None): "VcpuLimitExceeded: limit 0"})
    kw = dict(results_url=bucket, campaign_id="c1", work_dir=project, printer=Printer(quiet=True))
    commands.up(["aws-*"], backend_factory=failing.factory, **kw)
    manifest, report = commands.up(["aws-g4dn-1x"], backend_factory=StubBackend().factory, **kw)
    assert report.failed == [] and commands.launch_failures(manifest, report) == ["aws-g5-12x"]


def _schedule_file(tmp_path, **doc) -> str:
    path = tmp_path / "nightly.yaml"
    path.write_text(yaml.safe_dump({"cron": "0 6 * * 1", **doc}))
    return str(path)


def test_run_schedule_takes_the_stacks_and_options_from_the_file(tmp_path):
    project = _project(tmp_path, ["aws-g4dn-1x"])
    bucket = (tmp_path / "bucket").as_uri()
    path = _schedule_file(tmp_path, stacks=["aws-g4dn-1x"], results=bucket, poll=1, timeout=0, concurrency=1)
    stub = StubBackend()
    done = commands.run_schedule(path, work_dir=project, backend_factory=stub.factory, printer=Printer(quiet=True))
    assert done.launch.actions == {"aws-g4dn-1x": "launched"} and stub.ups == [("aws-g4dn-1x", None)]
    assert done.manifest.data["results"] == bucket and not done.outcome.done


def test_describe_shows_the_oncalendar_and_the_command_naming_the_file_as_given(tmp_path):
    path = _schedule_file(tmp_path, stacks="aws-g4dn-1x", results="s3://b", timeout="2h")
    doc = schedule.describe(path, "20250106T060000Z")
    assert doc["systemd_oncalendar"] == schedule.to_oncalendar("0 6 * * 1")
    assert doc["stacks"] == ["aws-g4dn-1x"] and doc["timeout_seconds"] == 7200 and doc["poll_seconds"] == 300
    assert doc["command"] == f"python -m analysis campaign run --schedule {path}"
    assert doc["next_campaign_id_looks_like"] == "20250106T060000Z" and doc["name"] == "nightly"


def test_campaign_run_hands_all_runs_to_its_wait(tmp_path, monkeypatch):
    """`campaign run --all-runs` reports every run in the bucket, as `campaign wait --all-runs` does."""
    from analysis.cli import main

    project = _project(tmp_path, ["aws-g4dn-1x"])
    real_wait, seen = commands.wait, {}

    def wait(campaign_id, **kw):
        seen.update(kw)
        return real_wait(campaign_id, **kw)

    monkeypatch.setattr(commands, "wait", wait)
    monkeypatch.setattr("analysis.campaign.cli.BACKEND_FACTORY", StubBackend().factory)
    bucket = (tmp_path / "bucket").as_uri()
    argv = ["campaign", "run", "aws-g4dn-1x", "--results", bucket, "--project-dir", str(project), "--all-runs"]
    main([*argv, "--poll", "1", "--timeout", "0"])
    assert seen["all_runs"] is True
