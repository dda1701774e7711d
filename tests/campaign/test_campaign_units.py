"""Campaign pieces without payload processes: selection, failure kinds, zone retry, launcher
bookkeeping against a stub backend, status rules, cost and waste, manifest, CLI."""

from __future__ import annotations

import json
import threading
import time
from datetime import datetime, timedelta, timezone

import pytest
from campaign_project import make_project

NOW = datetime(2025, 1, 6, 12, 0, tzinfo=timezone.utc)


# --- a stub backend: in-memory stacks, planned failures, no processes ---------------------------


class StubStack:
    def __init__(self, backend, name):
        self.b, self.name = backend, name

    def up(self, on_output=None):
        b = self.b
        zone = b.config.get(self.name, {}).get("gpubench:zone") or b.zones.get(self.name)
        with b.lock:
            b.ups.append((self.name, zone))
            b.active += 1
            b.peak = max(b.peak, b.active)
        try:
            time.sleep(b.delay)
            message = b.faults.get((self.name, zone)) or b.faults.get((self.name, None))
            if message:
                raise RuntimeError(f"code: 255\nstdout: Updating ({self.name}):\n    error: {message}\n")
            b.outputs[self.name] = {"deadline": "2099-01-01T00:00:00Z", "zone": zone}
            if on_output:
                on_output("+ 10 created\n")

            class Result:
                outputs = {k: type("OV", (), {"value": v})() for k, v in b.outputs[self.name].items()}

            return Result()
        finally:
            with b.lock:
                b.active -= 1

    def outputs(self):
        return dict(self.b.outputs.get(self.name, {}))

    def destroy(self, on_output=None):
        self.b.destroyed.append(self.name)

    def history(self, page_size=None):
        return []

    def set_config(self, key, value):
        self.b.config.setdefault(self.name, {})[key] = value

    def get_config(self, key):
        return self.b.config.get(self.name, {}).get(key)


class StubBackend:
    def __init__(self, delay=0.0, faults=None, zones=None):
        self.delay, self.faults, self.zones = delay, dict(faults or {}), dict(zones or {})
        self.ups, self.destroyed, self.outputs, self.config = [], [], {}, {}
        self.active = self.peak = 0
        self.lock = threading.Lock()

    def select_stack(self, name):
        return StubStack(self, name)

    def list_stacks(self):
        return []

    def factory(self, work_dir):
        return self


def _up(tmp_path, names, stub, concurrency=2, campaign_id="c1", project=None, **kw):
    from analysis.campaign import commands
    from analysis.progress import Printer

    project = project or make_project(tmp_path / "project", {n: {} for n in names}, tiny=False)
    printer = Printer(quiet=True)
    manifest, report = commands.up(
        kw.pop("patterns", names),
        results_url=(tmp_path / "bucket").as_uri(),
        campaign_id=campaign_id,
        concurrency=concurrency,
        work_dir=project,
        backend_factory=stub.factory,
        printer=printer,
        **kw,
    )
    return manifest, report, printer, project


# --- selection -------------------------------------------------------------------------------


def test_selection_by_name_and_glob_keeps_order_and_skips_results_stacks(tmp_path):
    from analysis.campaign.commands import select
    from payload.exitcodes import UsageError

    project = make_project(
        tmp_path,
        {
            n: {}
            for n in ("aws-p3-2x", "aws-p3-8x", "aws-p3-8x-spot", "gcp-t4-1x-spot", "gcp-v100-1x-spot", "gcp-v100-1x")
        },
        tiny=False,
    )
    (project / "stacks" / "Pulumi.aws-results.yaml").write_text("config: {gpubench:stackType: results}\n")
    (project / "stacks" / "Pulumi.aws-ssh-box.yaml").write_text("config: {gpubench:offering: onprem/box}\n")
    stacks = project / "stacks"
    assert select(["aws-p3-*"], stacks) == ["aws-p3-2x", "aws-p3-8x", "aws-p3-8x-spot"]
    assert select(["gcp-*-spot", "aws-p3-8x"], stacks) == ["gcp-t4-1x-spot", "gcp-v100-1x-spot", "aws-p3-8x"]
    assert select(["aws-*"], stacks) == ["aws-p3-2x", "aws-p3-8x", "aws-p3-8x-spot"]  # no results or SSH stacks
    with pytest.raises(UsageError, match="results stack"):
        select(["aws-results"], stacks)
    with pytest.raises(UsageError, match="Did you mean: aws-p3-8x"):
        select(["aws-p3-8y"], stacks)


# --- failure kinds ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text,kind,zone",
    [
        (
            "error: creating EC2 Instance: InsufficientInstanceCapacity: We currently do not have sufficient p3.8xlarge "
            "capacity in the Availability Zone you requested (us-east-1c).",
            "no-capacity",
            "us-east-1c",
        ),
        (
            "error: creating EC2 Instance: SpotMaxPriceTooLow: Your Spot request price of 0.5 is lower than the minimum "
            "required Spot request fulfillment price of 0.9.",
            "no-capacity",
            None,
        ),
        (
            "error: waiting for EC2 Spot Instance Request: capacity-not-available: There is no capacity available",
            "no-capacity",
            None,
        ),
        (
            "error: Error waiting for instance to create: The zone 'projects/p/zones/us-central1-a' does not have enough "
            "resources available to fulfill the request. '(resource type:compute)'. ZONE_RESOURCE_POOL_EXHAUSTED",
            "no-capacity",
            "us-central1-a",
        ),
        ("error: googleapi: Error 503: STOCKOUT in europe-west4-b", "no-capacity", "europe-west4-b"),
        (
            "error: creating EC2 Instance: VcpuLimitExceeded: You have requested more vCPU capacity than your current "
            "vCPU limit of 0 allows",
            "quota",
            None,
        ),
        (
            "error: googleapi: Error 403: Quota 'NVIDIA_V100_GPUS' exceeded. Limit: 0.0 in region us-central1., "
            "quotaExceeded",
            "quota",
            None,
        ),
        (
            "error: creating EC2 Instance: Unsupported: Your requested instance type (p3.8xlarge) is not supported in your "
            "requested Availability Zone (us-east-1e).",
            "gpu-not-in-zone",
            "us-east-1e",
        ),
        (
            "error: googleapi: Error 400: Invalid value for field 'resource.guestAccelerators[0].acceleratorType': "
            "'projects/p/zones/us-central1-f/acceleratorTypes/nvidia-tesla-k80'. Accelerator type not found",
            "gpu-not-in-zone",
            "us-central1-f",
        ),
        ("error: NoCredentialProviders: no valid providers in chain", "other", None),
    ],
)
def test_failures_are_classified_with_the_provider_message(text, kind, zone):
    from analysis.launch_failures import classify

    f = classify("Updating (s):\n  aws:ec2:Instance instance creating failed\n    " + text + "\nResources: 3 created\n")
    assert (f.kind, f.zone) == (kind, zone)
    assert text.split("error: ", 1)[1][:40] in f.message and not f.message.startswith("error:")
    assert f.retryable == (kind == "no-capacity")


def test_retry_zone_never_picks_the_failed_or_a_tried_zone():
    from analysis.launch_failures import retry_zone

    gcp = ("us-central1-a", "us-central1-b", "us-central1-c", "us-west1-a")
    assert retry_zone("us-central1-a", [], "gcp", "us-central1", gcp)[0] == "us-central1-b"
    assert retry_zone("us-central1-b", ["us-central1-a"], "gcp", "us-central1", gcp)[0] == "us-central1-c"
    assert retry_zone("us-central1-a", ["us-central1-b", "us-central1-c"], "gcp", "us-central1", gcp)[0] is None
    assert retry_zone("us-east-1a", [], "aws", "us-east-1", ())[0] == "us-east-1b"
    zone, why = retry_zone(None, [], "aws", "us-east-1", ())
    assert zone is None and "gpubench:zone" in why


# --- launcher ---------------------------------------------------------------------------------


def test_concurrency_bound_holds_and_every_stack_launches(tmp_path):
    names = ["aws-g4dn-1x", "aws-g4dn-2x", "aws-g5-1x", "aws-g5-2x", "aws-g6-1x", "aws-p3-2x"]
    stub = StubBackend(delay=0.15)
    manifest, report, printer, _ = _up(tmp_path, names, stub, concurrency=2)
    assert stub.peak == 2 and report.max_concurrent == 2
    assert set(report.actions.values()) == {"launched"}
    assert all(manifest.stacks[n]["state"] == "launched" for n in names)
    assert all(manifest.stacks[n]["deadline"] == "2099-01-01T00:00:00Z" for n in names)


def test_gcp_stockout_retries_once_in_another_zone_of_the_region_then_gives_up(tmp_path):
    stub = StubBackend(
        faults={("gcp-t4-1x-spot", None): "ZONE_RESOURCE_POOL_EXHAUSTED: The zone does not have enough resources"},
        zones={"gcp-t4-1x-spot": "us-central1-a"},
    )  # the stack file's gcp:zone
    manifest, report, printer, _ = _up(tmp_path, ["gcp-t4-1x-spot"], stub)
    zones = [z for _, z in stub.ups]
    assert len(zones) == 2, "exactly one retry"
    assert zones[0] == "us-central1-a" and zones[1] != zones[0] and zones[1].startswith("us-central1-")
    entry = manifest.stacks["gcp-t4-1x-spot"]
    assert entry["state"] == "launch-failed" and entry["failure"]["kind"] == "no-capacity"
    assert [a["zone"] for a in entry["attempts"]] == zones
    assert report.actions == {"gcp-t4-1x-spot": "failed"}


def test_quota_and_unknown_zone_capacity_are_not_retried(tmp_path):
    stub = StubBackend(
        faults={
            ("aws-g5-12x", None): "VcpuLimitExceeded: limit of 0",
            ("aws-g5-1x-spot", None): "capacity-not-available: There is no Spot capacity available",
        }
    )
    manifest, report, printer, _ = _up(tmp_path, ["aws-g5-12x", "aws-g5-1x-spot"], stub)
    assert sorted(n for n, _ in stub.ups) == ["aws-g5-12x", "aws-g5-1x-spot"]
    assert manifest.stacks["aws-g5-1x-spot"]["failure"]["kind"] == "no-capacity"
    assert any("zone that ran out of capacity is unknown" in line for line in printer.lines)


def test_retry_failed_and_adopting_a_stack_caught_mid_launch(tmp_path):
    from analysis.campaign.manifest import Manifest
    from payload.storage import open_store

    stub = StubBackend(faults={("aws-g5-12x", None): "VcpuLimitExceeded"})
    manifest, _, _, project = _up(tmp_path, ["aws-g5-12x", "aws-g4dn-1x"], stub)
    # the orchestrator "died" while aws-g4dn-1x was deploying: the manifest still says launching
    manifest.update("aws-g4dn-1x", state="launching")
    stub.faults.clear()
    stub.ups.clear()
    manifest, report, _, _ = _up(tmp_path, ["aws-g5-12x", "aws-g4dn-1x"], stub, project=project, retry_failed=True)
    assert report.actions == {"aws-g5-12x": "launched", "aws-g4dn-1x": "adopted"}
    assert [n for n, _ in stub.ups] == ["aws-g5-12x"]
    stored = Manifest.require(open_store((tmp_path / "bucket").as_uri()), "c1")
    assert {n: e["state"] for n, e in stored.stacks.items()} == {"aws-g5-12x": "launched", "aws-g4dn-1x": "launched"}
    assert len(stored.data["selections"]) == 2


def test_a_bad_stack_file_fails_that_stack_only(tmp_path):
    project = make_project(
        tmp_path / "project", {"aws-g4dn-1x": {}, "aws-g5-1x": {"gpubench:precision": "fp64"}}, tiny=False
    )
    stub = StubBackend()
    manifest, report, _, _ = _up(tmp_path, ["aws-g4dn-1x", "aws-g5-1x"], stub, project=project)
    assert report.actions == {"aws-g4dn-1x": "launched", "aws-g5-1x": "skipped-failed"}
    assert manifest.stacks["aws-g5-1x"]["failure"]["kind"] == "config"
    assert "precision" in manifest.stacks["aws-g5-1x"]["failure"]["message"]


# --- status, cost, waste ------------------------------------------------------------------------


def _entry(**kw):
    base = {
        "state": "launched",
        "offering": "aws/g4dn.xlarge",
        "market": "on-demand",
        "suite": ["mnist-mlp", "mnist-cnn"],
        "hourly_usd": 0.526,
        "up_started_at": "2025-01-06T10:00:00Z",
        "launched_at": "2025-01-06T10:01:00Z",
        "deadline": "2025-01-06T16:00:00Z",
    }
    return {**base, **kw}


def _obs(*runs, last=None, in_progress=()):
    from analysis.observe import RunView, StackObservation

    views = [RunView(f"r-{b}", b, s, NOW - timedelta(hours=1), t, t) for b, s, t in runs]
    return StackObservation(runs=views, in_progress=list(in_progress), last_event=last)


T1 = NOW - timedelta(minutes=30)


@pytest.mark.parametrize(
    "entry,obs,now,state",
    [
        (_entry(state="pending"), _obs(), NOW, "pending"),
        (
            _entry(state="launch-failed", failure={"kind": "quota", "message": "VcpuLimitExceeded"}),
            _obs(),
            NOW,
            "launch-failed",
        ),
        (_entry(), _obs(), NOW, "launched"),
        (
            _entry(),
            _obs(last={"event": "epoch_end", "time": "2025-01-06T11:59:00Z"}, in_progress=["r"]),
            NOW,
            "running",
        ),
        (_entry(), _obs(("mnist-mlp", "completed", T1), last={"event": "upload", "time": "x"}), NOW, "running"),
        (_entry(), _obs(("mnist-mlp", "completed", T1), ("mnist-cnn", "completed", T1)), NOW, "finished"),
        (_entry(), _obs(("mnist-mlp", "completed", T1), ("mnist-cnn", "failed", T1)), NOW, "failed"),
        (_entry(), _obs(("mnist-mlp", "interrupted", T1)), NOW, "interrupted"),
        (_entry(), _obs(), NOW + timedelta(hours=5), "expired"),
    ],
)
def test_status_rules(entry, obs, now, state):
    from analysis.stack_status import stack_status

    assert stack_status("aws-g4dn-1x", entry, obs, now).state == state


def test_cost_so_far_and_waste_figures():
    from analysis.stack_status import stack_status

    done = _obs(("mnist-mlp", "completed", T1), ("mnist-cnn", "completed", T1 + timedelta(minutes=10)))
    upload = T1 + timedelta(minutes=10)
    st = stack_status("s", _entry(), done, NOW)
    assert st.billed_seconds == (upload - datetime(2025, 1, 6, 10, tzinfo=timezone.utc)).total_seconds()
    assert st.cost_usd == pytest.approx(st.billed_seconds / 3600 * 0.526, rel=1e-6)
    assert (st.waste_seconds, st.waste_basis) == (1200.0, "so far (not destroyed yet)")
    destroyed = _entry(teardown={"action": "destroyed", "at": "2025-01-06T11:45:00Z"})
    st = stack_status("s", destroyed, done, NOW)
    assert (st.waste_seconds, st.waste_basis) == (300.0, "until destroyed")
    assert st.waste_usd == pytest.approx(300 / 3600 * 0.526, abs=1e-6)
    late = stack_status("s", _entry(deadline="2025-01-06T11:50:00Z"), done, NOW)
    assert (late.waste_seconds, late.waste_basis) == (600.0, "until the deadline")
    expired = stack_status("s", _entry(deadline="2025-01-06T11:00:00Z"), _obs(), NOW)
    assert expired.state == "expired" and expired.billed_seconds == 3600 and expired.waste_seconds is None


def test_observe_reads_results_events_and_ignores_earlier_launches(tmp_path):
    from analysis.observe import observe
    from payload.storage import open_store

    store = open_store(tmp_path.as_uri())
    old = {
        "benchmark": {"name": "mnist-mlp"},
        "status": "completed",
        "started_at": "2025-01-01T00:00:00Z",
        "finished_at": "2025-01-01T00:10:00Z",
        "timeline": [],
    }
    new = {
        "benchmark": {"name": "mnist-mlp"},
        "status": "completed",
        "started_at": "2025-01-06T10:05:00Z",
        "finished_at": "2025-01-06T10:20:00Z",
        "timeline": [
            {"event": "train_end", "time": "2025-01-06T10:19:00Z"},
            {"event": "upload", "time": "2025-01-06T10:19:30Z"},
        ],
    }
    store.put_bytes("runs/s/old/result.json", json.dumps(old).encode())
    store.put_bytes("runs/s/new/result.json", json.dumps(new).encode())
    store.put_bytes("runs/s/new/events.jsonl", b'{"event": "upload", "time": "2025-01-06T10:19:30Z"}\n')
    state = {"started_at": "2025-01-06T10:30:00Z", "timeline": [{"event": "epoch_end", "time": "2025-01-06T10:40:00Z"}]}
    store.put_bytes("runs/s/cur/checkpoints/state.json", json.dumps(state).encode())
    obs = observe(store, "s", datetime(2025, 1, 6, 10, tzinfo=timezone.utc))
    assert [r.run_id for r in obs.runs] == ["new"] and obs.in_progress == ["cur"]
    assert obs.last_upload == datetime(2025, 1, 6, 10, 19, 30, tzinfo=timezone.utc)
    assert obs.last_event["event"] == "epoch_end"


# --- manifest and CLI ----------------------------------------------------------------------------


def test_campaign_ids_are_utc_timestamps_and_bad_ids_are_refused():
    from analysis.campaign.manifest import ManifestError, check_id, new_campaign_id

    assert new_campaign_id(NOW) == "20250106T120000Z"
    with pytest.raises(ManifestError, match="bucket key"):
        check_id("../x")


def test_cli_help_documents_campaign():
    from analysis.cli import build_parser as parser

    text = parser().format_help()
    assert "campaign" in text
    sub = next(a for a in parser()._subparsers._group_actions)  # noqa: SLF001
    helptext = sub.choices["campaign"].format_help()
    for word in ("up", "status", "wait", "run", "schedule", "waste", "never the zone that failed"):
        assert word in helptext


def test_cli_up_and_status_json(tmp_path, monkeypatch, capsys):
    from analysis.campaign import cli as campaign_cli
    from analysis.cli import main

    project = make_project(tmp_path / "project", {"aws-g4dn-1x": {}, "aws-g5-12x": {}}, tiny=False)
    stub = StubBackend(faults={("aws-g5-12x", None): "VcpuLimitExceeded: limit 0"})
    monkeypatch.setattr(campaign_cli, "BACKEND_FACTORY", stub.factory)
    results = (tmp_path / "bucket").as_uri()
    code = main(
        [
            "campaign",
            "up",
            "aws-*",
            "--results",
            results,
            "--campaign-id",
            "cli1",
            "--project-dir",
            str(project),
            "--json",
        ]
    )
    out = json.loads(capsys.readouterr().out)
    assert code == 1 and out["actions"] == {"aws-g4dn-1x": "launched", "aws-g5-12x": "failed"}
    assert main(["campaign", "status", "cli1", "--results", results, "--json"]) == 0
    states = {s["stack"]: s["state"] for s in json.loads(capsys.readouterr().out)["stacks"]}
    assert states == {"aws-g4dn-1x": "launched", "aws-g5-12x": "launch-failed"}
    assert main(["campaign", "status", "nope", "--results", results]) == 2
    assert "no campaign 'nope'" in capsys.readouterr().err


def test_wait_refuses_when_a_stack_never_launched(tmp_path):
    from analysis.campaign import commands
    from analysis.campaign.manifest import Manifest
    from analysis.progress import Printer
    from payload.storage import open_store

    store = open_store((tmp_path / "b").as_uri())
    m = Manifest.open_or_create(store, "w1", store.url_for(""))
    m.ensure("aws-g4dn-1x", {"suite": ["mnist-mlp"]})
    m.save()
    _, outcome = commands.wait(
        "w1",
        results_url=(tmp_path / "b").as_uri(),
        poll_seconds=0,
        timeout=1,
        work_dir=tmp_path,
        printer=Printer(quiet=True),
    )
    assert not outcome.done and outcome.never_launched == ["aws-g4dn-1x"]


def test_without_the_pulumi_cli_up_says_how_to_install_and_writes_nothing(tmp_path, monkeypatch, capsys):
    import infra.workspace as pulumi_ws
    from analysis.cli import main

    monkeypatch.setattr(pulumi_ws.shutil, "which", lambda name: None)
    project = make_project(tmp_path / "project", {"aws-g4dn-1x": {}}, tiny=False)
    code = main(
        ["campaign", "up", "aws-g4dn-1x", "--results", (tmp_path / "bucket").as_uri(), "--project-dir", str(project)]
    )
    assert code == 3 and "get.pulumi.com" in capsys.readouterr().err
    assert not (tmp_path / "bucket").exists()


def test_pulumi_backend_selects_stacks_through_the_automation_api(tmp_path, monkeypatch):
    import pulumi.automation as auto

    import infra.workspace as pulumi_ws
    from infra.workspace import PulumiWorkspace

    calls = []

    class Stack:
        def set_config(self, key, value, path=False):
            calls.append(("set_config", key, value.value))

    monkeypatch.setattr(pulumi_ws.shutil, "which", lambda name: "/usr/bin/pulumi")
    monkeypatch.setattr(auto, "create_or_select_stack", lambda **kw: calls.append(("select", kw)) or Stack())
    handle = PulumiWorkspace(tmp_path).select_stack("aws-g4dn-1x-spot")
    handle.set_config("gpubench:zone", "us-east-1b")
    assert calls == [
        ("select", {"stack_name": "aws-g4dn-1x-spot", "work_dir": str(tmp_path)}),
        ("set_config", "gpubench:zone", "us-east-1b"),
    ]
