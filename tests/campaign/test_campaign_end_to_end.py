"""A campaign end to end against a stand-in cloud that runs the real payload (campaign_fakecloud.py).

One story, run once per module (xdist group `campaign`), then checked piece by piece:

1. orchestrator #1: `up 'aws-g4dn-*' aws-g5-12x --concurrency 2` launches the two g4dn
   stacks (one spot, which gets a spot notice on its first epoch) and fails aws-g5-12x
   with a vCPU quota error;
2. `status` from a fresh process view;
3. orchestrator #2 (the laptop restarted): `up 'aws-g4dn-*' 'aws-g5-*'` with the same
   campaign id launches only aws-g5-1x-spot, whose first zone has no spot capacity, so it
   is retried in another zone of the region;
4. orchestrator #3: `wait` polls until all are done, collects, tears everything down,
   writes the report with the waste figure.
Three payload processes in all.
"""

from __future__ import annotations

import json
import uuid

import pytest
from campaign_fakecloud import FakeCloud
from campaign_project import make_project
from chart_content import charts_described
from servers import create_s3_bucket

QUOTA = (
    "creating EC2 Instance: VcpuLimitExceeded: You have requested more vCPU capacity than your current vCPU "
    "limit of 32 allows for the instance bucket that the specified instance type belongs to."
)
CAPACITY = (
    "creating EC2 Instance: InsufficientInstanceCapacity: We currently do not have sufficient g5.xlarge "
    "capacity in the Availability Zone you requested (us-east-1a). Our system will be working on "
    "provisioning additional capacity."
)
LONG = {"gpubench:epochs": 30, "gpubench:params": "samples=2048,val_samples=64,hidden=64"}


@pytest.fixture(scope="module")
def story(moto_server, tmp_path_factory):
    from analysis.campaign import commands
    from analysis.progress import Printer

    mp = pytest.MonkeyPatch()
    for k, v in {
        "AWS_ENDPOINT_URL": moto_server.endpoint,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "GPUBENCH_STORAGE_RETRIES": "3",
        "GPUBENCH_STORAGE_BACKOFF": "0.05",
    }.items():
        mp.setenv(k, v)
    mp.delenv("AWS_ENDPOINT_URL_S3", raising=False)
    bucket = f"gpubench-{uuid.uuid4().hex[:12]}"
    create_s3_bucket(moto_server.endpoint, bucket)
    results = f"s3://{bucket}"
    tmp = tmp_path_factory.mktemp("campaign")
    project = make_project(
        tmp / "project",
        {
            "aws-g4dn-1x": {},
            "aws-g4dn-1x-spot": LONG,
            "aws-g5-12x": {},
            "aws-g5-1x-spot": {"gpubench:zone": "us-east-1a"},
        },
        results=results,
    )
    cloud = FakeCloud(project, tmp / "cloud", moto_server.endpoint)
    cloud.faults[("aws-g5-12x", None)] = QUOTA
    cloud.faults[("aws-g5-1x-spot", "us-east-1a")] = CAPACITY
    cloud.interrupt_on["aws-g4dn-1x-spot"] = "epoch_end"
    rec = {"cloud": cloud, "results": results, "project": project, "out": tmp / "report"}
    try:
        p1 = Printer(quiet=True)
        m1, r1 = commands.up(
            ["aws-g4dn-*", "aws-g5-12x"],
            results_url=results,
            concurrency=2,
            work_dir=project,
            backend_factory=cloud.backend,
            printer=p1,
        )
        rec.update(first=r1, first_lines=p1.lines, campaign_id=m1.campaign_id, peak_first=cloud.peak)
        rec["status_1"] = {s.stack: s for s in commands.status(m1.campaign_id, results_url=results)[1]}
        p2 = Printer(quiet=True)
        _, r2 = commands.up(
            ["aws-g4dn-*", "aws-g5-*"],
            results_url=results,
            campaign_id=m1.campaign_id,
            concurrency=2,
            work_dir=project,
            backend_factory=cloud.backend,
            printer=p2,
        )
        rec.update(second=r2, second_lines=p2.lines, ups=dict(cloud.ups), zones=dict(cloud.up_zones))
        p3 = Printer(quiet=True)
        with charts_described():  # the report's text is checked: its charts are described, not drawn
            manifest, outcome = commands.wait(
                m1.campaign_id,
                results_url=results,
                poll_seconds=0.5,
                timeout=150,
                out_dir=rec["out"],
                work_dir=project,
                backend_factory=cloud.backend,
                printer=p3,
            )
        rec.update(wait=outcome, wait_lines=p3.lines, manifest=manifest, running_after=cloud.running())
        rec["status_final"] = {s.stack: s for s in commands.status(m1.campaign_id, results_url=results)[1]}
        yield rec
    finally:
        cloud.shutdown()
        mp.undo()


def test_parallel_launch_respects_the_concurrency_bound(story):
    assert story["peak_first"] == 2  # three stacks, two at a time, and they did overlap
    assert story["cloud"].peak <= 2
    assert any(line.startswith("[aws-g4dn-1x] ") for line in story["first_lines"])
    assert any(line.startswith("[aws-g4dn-1x-spot] ") for line in story["first_lines"])


def test_a_stack_failing_to_launch_is_recorded_and_the_others_go_on(story):
    assert story["first"].actions == {"aws-g4dn-1x": "launched", "aws-g4dn-1x-spot": "launched", "aws-g5-12x": "failed"}
    failed = story["status_1"]["aws-g5-12x"]
    assert failed.state == "launch-failed"
    assert failed.failure["kind"] == "quota"
    assert "VcpuLimitExceeded" in failed.failure["message"] and "vCPU" in failed.failure["message"]
    assert story["wait"].statuses and {s.stack: s.state for s in story["wait"].statuses}["aws-g4dn-1x"] == "finished"


def test_restart_resumes_from_the_manifest_without_launching_twice(story):
    assert story["second"].actions == {
        "aws-g4dn-1x": "already-launched",
        "aws-g4dn-1x-spot": "already-launched",
        "aws-g5-12x": "skipped-failed",
        "aws-g5-1x-spot": "launched",
    }
    assert story["ups"] == {"aws-g4dn-1x": 1, "aws-g4dn-1x-spot": 1, "aws-g5-12x": 1, "aws-g5-1x-spot": 2}
    assert any("not launching again" in line for line in story["second_lines"])


def test_spot_capacity_is_retried_once_in_another_zone_of_the_region(story):
    zones = story["zones"]["aws-g5-1x-spot"]
    assert zones[0] == "us-east-1a" and zones[1] != "us-east-1a" and zones[1].startswith("us-east-1")
    entry = story["manifest"].stacks["aws-g5-1x-spot"]
    assert [a["outcome"] for a in entry["attempts"]] == ["failed", "launched"]
    assert entry["attempts"][0]["failure"]["kind"] == "no-capacity"
    assert "InsufficientInstanceCapacity" in entry["attempts"][0]["failure"]["message"]
    assert entry["zone"] == zones[1]
    assert story["status_final"]["aws-g5-1x-spot"].state == "finished"


def test_spot_interruption_mid_campaign(story):
    st = story["status_final"]["aws-g4dn-1x-spot"]
    assert st.state == "interrupted", st.detail
    assert story["cloud"].stacks["aws-g4dn-1x-spot"].destroyed_at  # an interrupted stack is cleaned up too
    assert st.waste_seconds is not None and st.waste_seconds >= 0


def test_wait_collects_tears_everything_down_and_reports(story):
    outcome, cloud = story["wait"], story["cloud"]
    assert outcome.done
    assert {s.stack: s.state for s in outcome.statuses} == {
        "aws-g4dn-1x": "finished",
        "aws-g4dn-1x-spot": "interrupted",
        "aws-g5-12x": "launch-failed",
        "aws-g5-1x-spot": "finished",
    }
    assert {o["stack"]: o["action"] for o in outcome.teardown} == {s: "destroyed" for s in cloud.stacks}
    assert dict(cloud.destroys) == {s: 1 for s in cloud.stacks}
    assert story["running_after"] == [] and all(s.resources == 0 for s in cloud.stacks.values())
    assert outcome.collect["campaign_runs"] == 3 and outcome.report_error is None and outcome.report_code == 0
    assert (story["out"] / "results.parquet").exists()
    assert outcome.teardown_error is None


def test_waste_is_time_billed_after_the_upload(story):
    from payload.timestamps import parse_time

    summary = json.loads((story["out"] / "campaign.json").read_text())
    rows = {r["stack"]: r for r in summary["stacks"]}
    for name in ("aws-g4dn-1x", "aws-g5-1x-spot"):
        row = rows[name]
        upload, destroyed = parse_time(row["uploaded_at"]), parse_time(row["destroyed_at"])
        assert row["waste_basis"] == "until destroyed"
        assert row["waste_seconds"] == pytest.approx((destroyed - upload).total_seconds(), abs=0.01)
        assert 0 < row["waste_seconds"] < 150
        # waste_usd is stored rounded to 6 decimals (status.py), so allow that half-unit
        assert row["waste_usd"] == pytest.approx(row["waste_seconds"] / 3600 * row["hourly_usd"], abs=5e-7)
        assert row["cost_usd"] > 0
    assert rows["aws-g5-12x"]["waste_seconds"] is None
    assert summary["totals"]["waste_seconds"] == pytest.approx(
        sum(r["waste_seconds"] or 0 for r in summary["stacks"]), abs=0.01
    )
    html = (story["out"] / "index.html").read_text()
    assert 'id="campaign-waste"' in html and "aws-g5-1x-spot" in html
    assert "waste" in (story["out"] / "campaign.txt").read_text()


def test_manifest_in_the_bucket_has_the_whole_story(story):
    from analysis.campaign.manifest import Manifest
    from payload.storage import open_store

    m = Manifest.require(open_store(story["results"]), story["campaign_id"])
    assert set(m.stacks) == {"aws-g4dn-1x", "aws-g4dn-1x-spot", "aws-g5-12x", "aws-g5-1x-spot"}
    for _name, entry in m.stacks.items():
        assert entry["teardown"]["action"] == "destroyed"
        if entry["state"] == "launched":
            assert entry["deadline"] and entry["launched_at"] and entry["hourly_usd"] > 0
            assert entry["price_source"] and entry["run_ids"]
    assert m.stacks["aws-g4dn-1x-spot"]["market"] == "spot"
    assert open_store(story["results"]).exists(f"campaigns/{story['campaign_id']}/summary.json")
