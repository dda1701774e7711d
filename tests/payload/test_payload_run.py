"""The run orchestrator (payload.run.Run) with a fake job: the shared lifecycle, whatever the kind of job."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from payload_helpers import launched_price

from payload import exitcodes
from payload.config import resolve
from payload.gpu import host_facts, software_facts
from payload.identity import Identity, PreemptionWatcher
from payload.result import METRICS
from payload.run import RESULT_FILES, JobReport, Run, SuiteContext, fingerprint
from payload.schema import validate_result
from payload.spool import Spool, SpoolingStore
from payload.storage import open_store

STACK = "fake-stack"


class FakeJob:
    """A job that records which hooks the run called, in order, and does what it is told."""

    extra_files = ("fake.txt",)

    def __init__(self, run: Run, *, fail: Exception | None = None, resume: dict | None = None, outcome=None):
        self.run, self.calls = run, []
        self.name, self.run_name = "fake-bench", "fake"
        self.fingerprint = fingerprint(STACK, self.name, {"n": 1}, "fp32", None, "synthetic")
        self._fail, self._resume = fail, resume
        self._outcome = outcome or ("completed", exitcodes.OK)
        self.steps = 0

    def restore(self):
        self.calls.append("restore")
        if self._resume:
            self.run.attempts = list(self._resume["attempts"])
        return self._resume

    def begin(self, resume):
        self.calls.append("begin")

    def execute(self):
        self.calls.append("execute")
        self.run.timeline.add("fake_work", steps=3)
        self.steps = 3
        if self._fail is not None:
            raise self._fail
        if self._outcome[0] == "interrupted":
            self.run.close_attempt("interrupted")  # early, as a job does before saving its state
        return self._outcome

    def failure(self, exc):
        self.calls.append("failure")
        return f"fake failure: {exc}", exitcodes.NO_GPU

    def end_attempt(self):
        self.calls.append("end_attempt")
        return {"steps_completed": self.steps}

    def settle(self, status):
        self.calls.append(f"settle:{status}")
        deadline = self.run.cfg.deadline  # a run of a deployment leaves its completion state
        return (
            {"fingerprint": self.fingerprint, "run_id": self.run.run_id, "deployment": deadline} if deadline else None
        )

    def write_extras(self):
        self.calls.append("write_extras")
        self.run.ctx.store.put_bytes(self.run.writer.key("fake.txt"), b"extra\n", "text/plain")

    def report(self, status, nv):
        self.calls.append("report")
        metrics = {**dict.fromkeys(METRICS), "steps_completed": self.steps}
        hardware = {
            "device": "CPU",
            "gpu_model": None,
            "gpu_count": 0,
            "gpu_memory_gb": None,
            "driver_version": None,
            **host_facts(),
        }
        benchmark = {
            "name": self.name,
            "kind": "throughput",
            "params": {"n": 1},
            "data": "synthetic",
            "precision": "fp32",
            "per_gpu_batch_size": 4,
            "global_batch_size": 4,
            "replicas": 1,
            "fingerprint": self.fingerprint,
        }
        return JobReport(
            hardware=hardware,
            software=software_facts(),
            benchmark=benchmark,
            metrics=metrics,
            artifacts=self.run.writer.artifacts(),
            warnings=["fake warning", "suite warning"],
        )

    def epoch_rows(self):
        self.calls.append("epoch_rows")
        return [{"epoch": 1, "loss": 0.5}]


@pytest.fixture
def suite(tmp_path):
    """A suite context over a file:// bucket, as payload.cli.run_suite builds it."""
    cfg = resolve({"benchmark": "mnist-mlp", "results": str(tmp_path / "bucket"), "stack": STACK}, environ={})
    cfg.market = "on-demand"
    store = SpoolingStore(open_store(cfg.results), Spool(str(tmp_path / "spool")))
    identity = Identity(None, "i-fake", "zone-a", None, None, None)
    watcher = PreemptionWatcher(60, sources=[])
    price, warnings = launched_price(None, "on-demand", None, None, None)
    return SuiteContext(cfg, time.time(), identity, store, watcher, price, [*warnings, "suite warning"])


def _files(tmp_path, run: Run) -> dict[str, bytes]:
    root = tmp_path / "bucket" / run.writer.prefix
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_a_completed_job_goes_through_every_step_in_order(suite, tmp_path, capsys):
    run = Run(suite, FakeJob)
    assert run.execute() == exitcodes.OK
    assert run.job.calls == [
        "restore",
        "begin",
        "execute",
        "end_attempt",
        "settle:completed",
        "write_extras",
        "report",
        "epoch_rows",
    ]
    files = _files(tmp_path, run)
    assert sorted(files) == sorted(["fake.txt", *RESULT_FILES])
    result = validate_result(json.loads(files["result.json"]))
    assert result["status"] == "completed" and result["exit_code"] == exitcodes.OK and result["error"] is None
    assert result["run_id"] == run.run_id and run.run_id.endswith("-i-fake-fake")
    events = [e["event"] for e in result["timeline"]]
    assert events == ["run_start", "fake_work", "upload"]
    start = result["timeline"][0]
    assert start["benchmark"] == "fake-bench" and start["resumed"] is False
    assert start["fingerprint"] == run.job.fingerprint
    assert result["timeline"][-1]["files"] == ["fake.txt", *RESULT_FILES]
    [attempt] = result["attempts"]
    assert attempt["status"] == "completed" and attempt["steps_completed"] == 3 and attempt["instance_id"] == "i-fake"
    assert attempt["end"] is not None
    assert result["warnings"].count("suite warning") == 1 and "fake warning" in result["warnings"]
    assert files["epochs.csv"].decode().splitlines()[0].startswith("epoch")
    assert f"fake-bench: completed -> {suite.store.url_for(run.writer.prefix)}" in capsys.readouterr().err


def test_an_exception_becomes_a_failed_result_with_the_jobs_exit_code(suite, tmp_path, capsys):
    run = Run(suite, lambda r: FakeJob(r, fail=RuntimeError("no device")))
    assert run.execute() == exitcodes.NO_GPU
    assert run.job.calls[:4] == ["restore", "begin", "execute", "failure"]
    assert "settle:failed" in run.job.calls
    result = validate_result(json.loads(_files(tmp_path, run)["result.json"]))
    assert result["status"] == "failed" and result["exit_code"] == exitcodes.NO_GPU
    assert result["error"] == "fake failure: no device"
    errors = [e for e in result["timeline"] if e["event"] == "error"]
    assert [e["error"] for e in errors] == ["no device"]
    assert result["attempts"][0]["status"] == "failed"
    assert run.sampler._stop.is_set()  # stopped even though the job raised
    assert "[gpubench] fake-bench failed: no device" in capsys.readouterr().err


def test_an_attempt_closed_early_by_the_job_is_closed_once(suite, tmp_path):
    run = Run(suite, lambda r: FakeJob(r, outcome=("interrupted", exitcodes.INTERRUPTED)))
    assert run.execute() == exitcodes.INTERRUPTED
    assert run.job.calls.count("end_attempt") == 1
    result = json.loads(_files(tmp_path, run)["result.json"])
    assert result["status"] == "interrupted" and result["attempts"][0]["status"] == "interrupted"


def test_a_resumed_job_keeps_its_run_id_and_counts_the_attempt(suite, tmp_path):
    earlier = {
        "attempt": 1,
        "instance_id": "i-before",
        "zone": "zone-b",
        "start": "2026-01-01T00:00:00.000Z",
        "end": "2026-01-01T00:10:00.000Z",
        "status": "interrupted",
    }
    resume = {"run_id": "20260101T000000Z-i-before-fake", "attempts": [earlier]}
    run = Run(suite, lambda r: FakeJob(r, resume=resume))
    assert run.execute() == exitcodes.OK
    assert run.run_id == resume["run_id"]
    files = _files(tmp_path, run)
    # the second attempt writes the run's files again under new names: nothing is overwritten
    assert sorted(files) == ["epochs.v1.csv", "events.v1.jsonl", "fake.v1.txt", "result.v1.json"]
    result = validate_result(json.loads(files["result.v1.json"]))
    assert result["artifacts"]["result"] == run.writer.prefix + "result.v1.json"
    assert [a["attempt"] for a in result["attempts"]] == [1, 2]
    assert [a["instance_id"] for a in result["attempts"]] == ["i-before", "i-fake"]
    start = next(e for e in result["timeline"] if e["event"] == "run_start")
    assert start["resumed"] is True and start["attempt"] == 2


def test_a_job_completed_in_this_deployment_is_not_run_again(suite, tmp_path, capsys):
    suite.cfg.deadline = 1_900_000_000.0
    first = Run(suite, FakeJob)
    first.execute()  # completed: the run marks its job's state complete
    again = Run(suite, FakeJob)
    assert again.execute() == exitcodes.OK
    assert again.job.calls == []
    assert f"already completed in this deployment (run {first.run_id})" in capsys.readouterr().err


def test_only_the_first_run_of_a_process_claims_the_host_events(suite, tmp_path):
    host = tmp_path / "host-events.jsonl"
    host.write_text(json.dumps({"time": "2026-01-01T00:00:00.000Z", "event": "instance_launch"}) + "\n")
    suite.cfg.host_events = str(host)
    first, second = Run(suite, FakeJob), Run(suite, FakeJob)
    first.execute()
    second.execute()
    assert "instance_launch" in [e["event"] for e in first.timeline.ordered()]
    assert "instance_launch" not in [e["event"] for e in second.timeline.ordered()]


def test_the_orchestrator_and_the_workloads_do_not_import_the_suite():
    """Imports go one way: payload.cli -> payload.builtin / payload.workloads -> payload.run."""
    code = (
        "import sys, payload.run, payload.workloads; "
        "print(sorted(m for m in sys.modules if m in ('payload.cli', 'payload.builtin', 'keras', 'tensorflow')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"
