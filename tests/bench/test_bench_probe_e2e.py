"""`gpubench bench --probe 2` over six candidates through the stand-in cloud (the real Pulumi program under
mocks, the real payload running a tiny fake job of known rate against moto S3): two probed first, the rest
predicted, the candidates whose predicted interval reaches the leader's probed before the answer, nothing
left running, every row labelled with its basis; then a later bench of the same task sets the first one's
predictions beside its own measurement."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from bench_fakes import NO_GPU, BenchCloud, project, run_bench, write_task

from analysis.bench.candidates import cloud_candidates
from analysis.bench.record import BenchRecord
from payload import exitcodes

RATE = 2000.0  # the fake job's samples per second, whatever the machine: the datasheets mislead the model
SIX = ("T4:1", "L4:1", "A10G:1", "L40S:1", "H100:1", "T4:4")


def six_candidates():
    task = SimpleNamespace(resources=SimpleNamespace(accelerators=(), providers=("aws",)), path="t.yaml")
    found, unmatched = cloud_candidates(task, gpus=",".join(SIX), spot=False)
    assert len(found) == 6 and not unmatched
    return found


@pytest.fixture
def env(tmp_path, moto_server, s3_bucket, monkeypatch):
    monkeypatch.setenv("GPUBENCH_STORAGE_RETRIES", "3")
    monkeypatch.setenv("GPUBENCH_STORAGE_BACKOFF", "0.05")
    cloud = BenchCloud(tmp_path / "cloud", moto_server.endpoint)
    cands = six_candidates()
    try:
        yield {
            "cloud": cloud,
            "candidates": cands,
            "task": write_task(tmp_path / "task", accelerators=SIX, rate=RATE),
            "root": project(tmp_path / "project", {c.name: NO_GPU for c in cands}),
            "results": f"s3://{s3_bucket}/bench",
        }
    finally:
        cloud.shutdown()


def run(env, **kw):
    return run_bench(env, 0.3, **kw)


def test_probe_two_of_six_predicts_the_rest_and_probes_what_is_in_doubt_before_answering(env):
    cloud = env["cloud"]
    outcome, text = run(env, probe=2)
    assert outcome.exit_code == exitcodes.OK, text
    doc = json.loads(json.dumps(outcome.doc))  # as --json prints it
    probing = doc["probing"]
    first, *later = probing["rounds"]
    assert len(first) == 2 and later, probing  # two first, then at least one candidate in doubt
    # launched in that order: round one's two stacks before any other
    by_offering = {c.name: c.offering for c in env["candidates"]}
    launched = [next(o for n, o in by_offering.items() if up.startswith(n)) for up in cloud.ups]
    assert sorted(launched[:2]) == sorted(first) and sorted(launched[2:]) == sorted(o for r in later for o in r)
    rows = {r["offering"]: r for r in doc["candidates"]}
    assert len(rows) == 6
    probed = set(probing["probed"])
    for offering, row in rows.items():
        if offering in probed:
            assert row["status"] == "measured" and row["probe_usd"] > 0
            assert row["samples_per_second"] == pytest.approx(RATE, rel=0.1)
            assert "predicted" not in row["basis"].values()
        else:
            assert row["status"] == "predicted" and row["probe_usd"] is None, row
            assert set(row["basis"].values()) == {"predicted"} and row["est_usd_low"] <= row["est_usd"]
    assert set(probing["predicted"]) == set(rows) - probed
    assert probing["boots_avoided"] == 6 - len(probed) == len(probing["predicted"])
    assert probing["all_probe_bound_usd"] > probing["probe_bound_usd"] > 0
    assert probing["model"]["name"] == "spec-ratio" and probing["model"]["calibration"]["sources"]
    # each candidate probed after round one had a prediction whose interval reached the leader's: judged now
    checks = {c["offering"]: c for c in doc["prediction_checks"]}
    assert set(checks) == {o for r in later for o in r}
    for offering, check in checks.items():
        assert check["measured"] == rows[offering]["samples_per_second"] and check["predicted_by"] == doc["bench_id"]
        assert check["error_pct"] == pytest.approx(100 * (check["predicted"] / check["measured"] - 1))
        assert f"prediction vs measurement: {offering}: predicted" in text
    # the answer names what was predicted, and the page labels it
    assert f"Probed {len(probed)} of 6 candidates" in doc["answer"]["sentence"]
    page = outcome.page.read_text()
    assert 'class="basis predicted"' in page and "Predictions against measurements" in page
    assert f"{probing['boots_avoided']} boot(s) avoided" in page
    assert cloud.leftovers() == {} and cloud.running() == []
    assert set(cloud.destroys) == set(cloud.ups) and cloud.stacks == {}
    recorded = BenchRecord.load(outcome.workspace).data["predictions"]
    assert {p["offering"] for p in recorded} == set(probing["predicted"])

    # a later bench of the same task measures one of the predicted candidates: prediction beside measurement
    target = next(c for c in env["candidates"] if c.offering == probing["predicted"][0])
    again, text = run(env, gpus=f"{target.gpu}:{target.gpu_count}")
    assert again.exit_code == exitcodes.OK, text
    (check,) = again.doc["prediction_checks"]
    before = next(p for p in recorded if p["offering"] == target.offering)
    assert check["offering"] == target.offering and check["predicted_by"] == doc["bench_id"]
    assert check["predicted"] == before["samples_per_second"]
    assert check["measured"] == again.doc["candidates"][0]["samples_per_second"]
    assert "Predictions against measurements" in again.page.read_text()
    assert cloud.leftovers() == {} and cloud.running() == []
