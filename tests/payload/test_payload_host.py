"""Metadata, identity, watcher, pricing, NVML sampling and exit codes (no training)."""

from __future__ import annotations

import sys
import time
import types
from datetime import date

import pytest
from payload_helpers import launched_price

from payload import exitcodes
from payload.gpu import GpuSampler
from payload.identity import (
    AwsImds,
    GceMetadata,
    Identity,
    MetadataUnavailable,
    PreemptionWatcher,
    detect_identity,
    make_run_id,
)
from payload.run import result_offering


def test_identity_from_aws_imdsv2(metadata_server):
    ident = detect_identity()
    assert (ident.provider, ident.instance_id, ident.zone, ident.region, ident.instance_type) == (
        "aws",
        "i-0123456789abcdef0",
        "us-east-1a",
        "us-east-1",
        "p3.2xlarge",
    )
    assert metadata_server.requests[0][0] == "PUT"  # token first


def test_identity_from_gce_when_aws_is_absent(metadata_server, monkeypatch):
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    ident = detect_identity()
    assert (ident.provider, ident.instance_id, ident.zone, ident.region, ident.instance_type, ident.lifecycle) == (
        "gcp",
        "4242424242",
        "us-central1-a",
        "us-central1",
        "n1-standard-8",
        "spot",
    )


def test_identity_falls_back_to_hostname_quickly():
    import socket

    t0 = time.monotonic()
    ident = detect_identity()
    assert ident.provider is None and ident.instance_id == socket.gethostname()
    assert time.monotonic() - t0 < 3


def test_run_id_is_utc_time_plus_instance():
    assert make_run_id(0, "i-0abc/x", "resnet50") == "19700101T000000Z-i-0abc-x-resnet50"


def test_imdsv2_requires_the_token_and_404_means_no_notice(metadata_server):
    from servers import http_get

    assert http_get(metadata_server.endpoint + "/latest/meta-data/instance-id")[0] == 401  # v1 refused
    imds = AwsImds()
    assert imds.get("spot/instance-action") is None
    metadata_server.spot_action = {"action": "stop", "time": "2025-01-01T00:00:00Z"}
    assert '"stop"' in imds.get("spot/instance-action")
    gce = GceMetadata()
    assert gce.get("instance/preempted") == "FALSE"
    assert http_get(gce.base + "/instance/preempted")[0] == 403  # header required


def test_an_expired_imdsv2_token_is_fetched_anew_after_its_401(metadata_server, monkeypatch):
    """The token is kept until IMDS refuses it: an expired one answers 401 (EC2 User Guide, "Use the Instance
    Metadata Service to access instance metadata"), and the same GET is made once more with a new token."""
    imds = AwsImds()
    assert imds.get("instance-id") == metadata_server.instance_id
    assert imds.get("instance-id") == metadata_server.instance_id  # the same token: one PUT so far
    monkeypatch.setattr(metadata_server, "TOKEN", "a-later-token")  # the first one expired
    assert imds.get("instance-id") == metadata_server.instance_id
    puts = [path for method, path, _ in metadata_server.requests if method == "PUT"]
    assert puts == ["/latest/api/token", "/latest/api/token"]


def test_watcher_sees_aws_spot_notice(metadata_server):
    w = PreemptionWatcher(interval=0.02).start()
    try:
        time.sleep(0.1)
        assert not w.notice.is_set()
        metadata_server.spot_action = {"action": "terminate", "time": "2025-01-01T00:02:00Z"}
        assert w.notice.wait(5)
        assert w.reason == "aws spot instance-action: terminate at 2025-01-01T00:02:00Z"
    finally:
        w.stop()


def test_watcher_sees_gce_preemption_and_drops_absent_aws(metadata_server, monkeypatch):
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    w = PreemptionWatcher(interval=0.02)
    assert w.poll_once() is None
    assert [name for name, _ in w._sources] == ["gce"]  # AWS never answered: not on AWS
    metadata_server.preempted = True
    assert w.poll_once() == "gce instance/preempted is TRUE"
    paths = [r[1] for r in metadata_server.requests if r[0] == "GET"]
    assert "/computeMetadata/v1/instance/preempted" in paths
    assert all(r[2].get("metadata-flavor") == "Google" for r in metadata_server.requests if r[0] == "GET")


def test_watcher_keeps_polling_a_source_through_transient_errors():
    calls = []

    def flaky():
        calls.append(1)
        if len(calls) == 2:
            raise MetadataUnavailable("blip")
        return "notice!" if len(calls) == 3 else None

    w = PreemptionWatcher(sources=[("aws", flaky)])
    assert w.poll_once() is None and w.poll_once() is None and w.poll_once() == "notice!"


def test_watcher_deadline_and_manual_trigger():
    now = [1000.0]
    w = PreemptionWatcher(deadline=1400.0, deadline_margin=300.0, sources=[], clock=lambda: now[0])
    assert w.poll_once() is None
    now[0] = 1100.0
    assert "deadline" in w.poll_once()
    w.trigger("SIGTERM received")
    w.trigger("second")
    assert w.notice.is_set() and w.reason == "SIGTERM received"


def test_watch_interval_comes_from_env(monkeypatch):
    from payload.config import resolve

    cfg = resolve({"benchmark": "mnist-mlp", "results": "/r", "stack": "s"}, {"GPUBENCH_WATCH_INTERVAL": "0.25"})
    assert cfg.watch_interval == 0.25


# -- pricing -------------------------------------------------------------------------


class FakeQuote:
    def __init__(self, hourly, source):
        self.hourly_usd, self.source, self.as_of = hourly, source, date(2025, 1, 15)


def test_launch_price_fills_the_launched_market():
    on_demand, warnings = launched_price("aws/p3.8xlarge", "on-demand", 12.0, "launch", "2025-02-01")
    assert (
        on_demand
        == {"hourly_usd": 12.0, "spot_hourly_usd": None, "source": "launch", "as_of": "2025-02-01", "origin": "env"}
        and warnings == []
    )
    spot, _ = launched_price("aws/p3.8xlarge", "spot", 4.5, "launch", "2025-02-01", 12.24)
    assert spot == {
        "hourly_usd": 12.24,
        "spot_hourly_usd": 4.5,
        "source": "launch",
        "as_of": "2025-02-01",
        "origin": "env",
    }


def test_no_launch_price_is_null_with_how_to_give_one():
    price, warnings = launched_price("aws/p9.huge", "on-demand", None, None, None)
    assert price["hourly_usd"] is None and price["origin"] is None
    assert "aws/p9.huge" in warnings[0] and "GPUBENCH_HOURLY_USD" in warnings[0]
    assert "this run" in launched_price(None, "on-demand", None, None, None)[1][0]


def test_offering_facts_come_from_the_launcher_unless_the_instance_says():
    from payload.config import resolve

    given = {"benchmark": "mnist-mlp", "results": "/r", "stack": "s", "market": "spot", "offering": "aws/p3.8xlarge"}
    cfg = resolve({**given, "offering_kind": "cloud", "instance_type": "p3.8xlarge"}, {})
    off_cloud = Identity(None, "host", None, None, None, None)
    facts = result_offering(cfg, off_cloud)
    assert (facts["provider"], facts["kind"], facts["instance_type"], facts["market"]) == (
        "aws",
        "cloud",
        "p3.8xlarge",
        "spot",
    )
    assert (
        result_offering(cfg, Identity("gcp", "1", "z", "r", "a2-highgpu-1g", None))["instance_type"] == "a2-highgpu-1g"
    )
    assert result_offering(resolve({**given, "offering": None}, {}), off_cloud)["provider"] is None


def test_payload_never_imports_the_catalog():
    """The payload is the bottom layer: it runs where only `payload` is installed."""
    import subprocess

    code = (
        "import sys, payload.run, payload.cli; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('infra', 'analysis')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"


# -- NVML ------------------------------------------------------------------------------


def test_sampler_without_nvml_reports_nulls():
    s = GpuSampler(interval=0.01).start()
    s.begin_window()
    time.sleep(0.05)
    s.stop()
    assert not s.available and "NVML" in s.error
    assert s.summary() == {
        "gpu_utilization_mean": None,
        "gpu_memory_peak_gb": None,
        "gpu_power_mean_w": None,
        "gpu_samples": None,
    }


def test_sampler_with_fake_nvml_averages_and_peaks(monkeypatch):
    state = {"t": 0}

    class Util:
        def __init__(self, gpu):
            self.gpu = gpu

    class Mem:
        total = 16 * 1024**3

        def __init__(self, used):
            self.used = used

    fake = types.SimpleNamespace(
        nvmlInit=lambda: None,
        nvmlShutdown=lambda: None,
        nvmlDeviceGetCount=lambda: 2,
        nvmlDeviceGetHandleByIndex=lambda i: i,
        nvmlDeviceGetUtilizationRates=lambda h: Util(80 if h == 0 else 60),
        nvmlDeviceGetMemoryInfo=lambda h: Mem((2 + h) * 1024**3),
        nvmlDeviceGetPowerUsage=lambda h: 250_000,
    )
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    s = GpuSampler(interval=0.01).start()
    time.sleep(0.05)
    assert s.util == []  # outside the training window nothing is recorded
    s.begin_window()
    time.sleep(0.1)
    s.end_window()
    s.stop()
    summary = s.summary()
    assert summary["gpu_utilization_mean"] == 70.0 and summary["gpu_memory_peak_gb"] == 3.0
    assert summary["gpu_power_mean_w"] == 250.0 and summary["gpu_samples"] >= 2
    del state


def test_exit_code_precedence():
    assert exitcodes.worst([]) == exitcodes.OK
    assert exitcodes.worst([exitcodes.OK, exitcodes.SPOOLED]) == exitcodes.SPOOLED
    assert exitcodes.worst([exitcodes.FAILED, exitcodes.INTERRUPTED, exitcodes.NO_GPU]) == exitcodes.INTERRUPTED
    assert (
        len(
            {
                exitcodes.OK,
                exitcodes.FAILED,
                exitcodes.USAGE,
                exitcodes.NO_GPU,
                exitcodes.SPOOLED,
                exitcodes.INTERRUPTED,
            }
        )
        == 6
    )


@pytest.mark.parametrize("steps_done, expect", [(0, (3, 0, 4, 10)), (4, (3, 1, 4, 10)), (6, (2, 1, 4, 10))])
def test_fit_plan_for_throughput_resumes_at_the_step(steps_done, expect):
    from payload.training import fit_plan

    p = fit_plan("throughput", {"steps": 10}, 0, steps_done, chunk=4)
    assert (p.epochs, p.initial_epoch, p.steps_per_epoch, p.total_steps) == expect
    e = fit_plan("epochs", {"epochs": 4, "steps_per_epoch": None}, 2, 0, chunk=4)
    assert (e.epochs, e.initial_epoch, e.steps_per_epoch, e.total_steps) == (4, 2, None, None)
