"""`gpubench bench` end to end with a tiny fake job of known throughput (tests/bench/bench_fakes.py):

- through the stand-in cloud (the real Pulumi program rendered under mocks, the REAL payload started
  locally against moto S3): three candidates launched at once, one refused for lack of capacity and named
  with the provider's reason while the others are probed, read back from the bucket, extrapolated and
  destroyed, with nothing left in the stand-in; Ctrl-C mid-bench leaves no stack behind;
- through --local (the command, with --json on stdout and progress on stderr);
- through an SSH host stack on the loopback sshd.
"""

from __future__ import annotations

import io
import json

import pytest
from bench_fakes import NO_GPU, BenchCloud, project, run_bench, write_task

from analysis.bench.answer import ROW_FIELDS
from analysis.bench.run import bench
from analysis.cli import main
from payload import exitcodes
from payload.storage import open_store

RATE = 2000.0  # the fake job's steady samples per second
PROBE_MINUTES = 0.3  # 18 s at most; the fake job is steady within a few seconds
CAPACITY = (
    "creating EC2 Instance: InsufficientInstanceCapacity: We currently do not have sufficient g5.xlarge "
    "capacity in the Availability Zone you requested (us-east-1a). Our system will be working on "
    "provisioning additional capacity."
)
STACKS = {"aws-g4dn-1x": NO_GPU, "aws-g6-1x": NO_GPU, "aws-g5-1x": NO_GPU}


def _cloud_env(tmp, moto_endpoint, bucket, mp):
    mp.setenv("GPUBENCH_STORAGE_RETRIES", "3")
    mp.setenv("GPUBENCH_STORAGE_BACKOFF", "0.05")
    return {
        "cloud": BenchCloud(tmp / "cloud", moto_endpoint),
        "task": write_task(tmp / "task", accelerators=("T4:1", "L4:1", "A10G:1"), rate=RATE),
        "root": project(tmp / "project", STACKS),
        "results": f"s3://{bucket}/bench",
    }


@pytest.fixture
def cloud_env(tmp_path, moto_server, s3_bucket, monkeypatch):
    env = _cloud_env(tmp_path, moto_server.endpoint, s3_bucket, monkeypatch)
    try:
        yield env
    finally:
        env["cloud"].shutdown()


@pytest.fixture(scope="module")
def refused_and_probed(tmp_path_factory, moto_server, module_s3_bucket):
    """One bench of the three candidates, g5's launch refused for capacity: (env, outcome, progress text),
    shared by the tests of its rows, its JSON document and what it left (each bench probes for seconds)."""
    with pytest.MonkeyPatch.context() as mp:
        env = _cloud_env(tmp_path_factory.mktemp("bench-cloud"), moto_server.endpoint, module_s3_bucket, mp)
        try:
            env["cloud"].prefix_faults["aws-g5-1x"] = CAPACITY
            yield (env, *run_cloud(env))
        finally:
            env["cloud"].shutdown()


def run_cloud(env, **kw):
    return run_bench(env, PROBE_MINUTES, **kw)


def check_rate(row):
    assert row["samples_per_second_low"] <= row["samples_per_second"] <= row["samples_per_second_high"]
    assert row["samples_per_second"] == pytest.approx(RATE, rel=0.1)


def test_cloud_probes_run_in_parallel_a_refused_launch_is_named_and_nothing_is_left(refused_and_probed):
    cloud_env, outcome, text = refused_and_probed
    cloud = cloud_env["cloud"]
    assert outcome.exit_code == exitcodes.OK, text
    rows = {r["offering"]: r for r in outcome.doc["candidates"]}
    assert set(rows) == {"aws/g4dn.xlarge", "aws/g6.xlarge", "aws/g5.xlarge"}
    refused = rows["aws/g5.xlarge"]
    assert refused["status"] == "launch-failed" and refused["est_hours"] is None
    assert refused["reason"].startswith("no-capacity: ") and "InsufficientInstanceCapacity" in refused["reason"]
    assert any(u["offering"] == "aws/g5.xlarge" for u in outcome.doc["answer"]["unmeasured"])
    for offering in ("aws/g4dn.xlarge", "aws/g6.xlarge"):
        row = rows[offering]
        assert row["status"] == "measured", row
        check_rate(row)
        assert row["est_hours"] > 0 and row["est_usd"] > 0 and row["probe_usd"] > 0
    # launched together: the launches overlapped, and so did the instances' lives (both booted before either
    # was destroyed). Instance lives, not the payloads' run times: a payload's start waits on its TensorFlow
    # import, which other test workers on the same two cores can delay past the other probe's end.
    assert cloud.peak >= 2
    lives = [(booted, destroyed) for name, booted, destroyed in cloud.lifetimes if not name.startswith("aws-g5-1x")]
    assert len(lives) == 2 and max(b for b, _ in lives) < min(d for _, d in lives)
    store = open_store(cloud_env["results"])
    results = [json.loads(store.get_bytes(k.key)) for k in store.list("runs/") if k.key.endswith("/result.json")]
    assert len(results) == 2 and all(r["probe"]["stopped_by"] in ("steady", "time-limit") for r in results)
    # destroyed, every one, the refused one too (a failed up may leave resources)
    assert cloud.leftovers() == {} and cloud.running() == []
    assert set(cloud.destroys) == set(cloud.ups) and len(cloud.ups) == 3
    assert sorted(cloud.removed) == sorted(cloud.ups) and cloud.stacks == {}  # removed, not left as empty stacks
    assert outcome.page is not None and outcome.page.is_file()


def test_json_document_has_the_documented_fields(refused_and_probed):
    _, outcome, _ = refused_and_probed
    doc = json.loads(json.dumps(outcome.doc))
    assert {"task", "candidates", "answer", "probe_total_usd"} <= set(doc)
    for row in doc["candidates"]:
        assert set(ROW_FIELDS) <= set(row)
    assert {"cheapest", "fastest", "frontier", "unmeasured", "sentence"} <= set(doc["answer"])
    assert "within_deadline" not in doc["answer"] and "within_budget" not in doc["answer"]
    assert doc["probe_total_usd"] == pytest.approx(sum(r["probe_usd"] or 0 for r in doc["candidates"]), abs=1e-6)
    assert doc["answer"]["cheapest"]["offering"] == "aws/g4dn.xlarge"


def test_ctrl_c_mid_bench_leaves_no_stack_behind(cloud_env):
    class CtrlC(io.StringIO):
        fired = False

        def write(self, s):
            if not self.fired and "waiting for the probe result" in s:
                CtrlC.fired = True
                raise KeyboardInterrupt
            return super().write(s)

    outcome, text = run_cloud(cloud_env, gpus="T4,L4", progress=CtrlC())
    cloud = cloud_env["cloud"]
    assert CtrlC.fired and outcome.exit_code == exitcodes.CANCELLED
    assert outcome.left == [] and "nothing left running" in text
    assert cloud.leftovers() == {} and cloud.running() == []
    assert set(cloud.destroys) == set(cloud.ups)
    assert sorted(cloud.removed) == sorted(cloud.ups) and cloud.stacks == {}


def test_local_bench_through_the_command(tmp_path, capsys, no_metadata):
    task = write_task(tmp_path / "task", rate=RATE)
    results = tmp_path / "results"
    argv = ["bench", str(task), "--local", "--yes", "--json", "--probe-minutes", str(PROBE_MINUTES)]
    code = main([*argv, "--results", str(results), "--project-dir", str(tmp_path), "--hourly-usd", "0.5"])
    out, err = capsys.readouterr()
    assert code == exitcodes.OK, err
    doc = json.loads(out)  # stdout is the JSON document only; progress went to stderr
    (row,) = doc["candidates"]
    assert row["kind"] == "local" and row["status"] == "measured"
    check_rate(row)
    assert row["name"] == f"local-{doc['bench_id']}" and f"[{row['name']}]" in err and "probe at most" in err
    (result,) = (results / "runs" / row["name"]).glob("*/result.json")
    doc = json.loads(result.read_text())
    steady = doc["probe"]["steady"]
    assert steady["steady"] is True
    # the whole job: the payload's start to the first step, the warm-up as measured, the rest at the steady
    # rate, and the job's end to the payload's exit. The rate (the row's) and the warm-up's seconds are on
    # the wall's clock: when the job's lines arrived slower than its own clock says (a loaded machine),
    # the probe recorded by how much, and the warm-up's job-clock seconds are stretched by it.
    assert row["finish_seconds"] > 0 and row["basis"]["finish_seconds"] == "measured"
    assert 0 < steady["warmup_samples"] < 7.2e6
    wall_per_job_second = max(1.0, doc["probe"].get("wall_per_job_second") or 1.0)
    seconds = (
        row["overhead_seconds"]
        + row["finish_seconds"]
        + steady["warmup_seconds"] * wall_per_job_second
        + (7.2e6 - steady["warmup_samples"]) / row["samples_per_second"]
    )
    assert row["est_hours"] == pytest.approx(seconds / 3600)
    # the overhead counts the payload process's own start: its timeline opens with the probe's process_start
    first, run_start = doc["timeline"][0], next(e for e in doc["timeline"] if e["event"] == "run_start")
    assert first["event"] == "process_start" and first["time"] < run_start["time"]


def test_ssh_host_bench(tmp_path, ssh_host):
    name, stacks, bucket = ssh_host.name, ssh_host.stacks, ssh_host.bucket
    task = write_task(tmp_path / "task", rate=RATE)
    out = io.StringIO()
    outcome = bench(
        task,
        hosts=[name],
        yes=True,
        probe_minutes=PROBE_MINUTES,
        stacks_dir=stacks,
        work_dir=tmp_path,
        progress=out,
        poll_seconds=0.5,
    )
    assert outcome.exit_code == exitcodes.OK, out.getvalue()
    (row,) = outcome.doc["candidates"]
    assert row["kind"] == "ssh" and row["status"] == "measured" and row["name"] == name
    check_rate(row)
    (result,) = (bucket / "runs" / name).glob("*/result.json")
    assert json.loads(result.read_text())["probe"]["limit_seconds"] == pytest.approx(PROBE_MINUTES * 60, abs=1)
