"""Runs whose results land in real-protocol buckets: moto S3 and gcp-storage-emulator.

Also: a bucket that is down at upload time (results spooled, delivered at
the start of the next run), and a spot interruption announced by a local
IMDSv2 server (checkpoint + interrupted result, then resume to completion).
"""

from __future__ import annotations

import csv
import io
import json
import threading
import time

from payload_helpers import run_payload

from payload import exitcodes
from payload.layout import newest_versions
from payload.run import find_resumable
from payload.schema import validate_result
from payload.storage import open_store

TINY_MLP = [
    "--benchmark",
    "mnist-mlp",
    "--data",
    "synthetic",
    "--epochs",
    "2",
    "--batch-size",
    "32",
    "--param",
    "samples=256,val_samples=64,hidden=32",
]


def _results(store, stack):
    keys = [o.key for o in store.list(f"runs/{stack}/")]
    return {k: json.loads(store.get_bytes(k)) for k in keys if k.endswith("/result.json")}, keys


def test_results_land_in_moto_s3(s3_bucket):
    url = f"s3://{s3_bucket}/gpubench"
    assert (
        run_payload(
            *TINY_MLP,
            "--results",
            url,
            "--stack",
            "aws-test",
            "--offering",
            "aws/p3.2xlarge",
            "--hourly-usd",
            "3.06",
            "--price-source",
            "test sheet",
            "--price-as-of",
            "2025-01-01",
        )
        == 0
    )
    results, keys = _results(open_store(url), "aws-test")
    assert len(results) == 1
    ((key, result),) = results.items()
    validate_result(result)
    prefix = key.rsplit("/", 1)[0]
    assert {f"{prefix}/events.jsonl", f"{prefix}/epochs.csv", f"{prefix}/checkpoints/state.json"} <= set(keys)
    price = result["price"]
    assert (price["hourly_usd"], price["source"], price["as_of"], price["origin"]) == (
        3.06,
        "test sheet",
        "2025-01-01",
        "env",
    )
    assert result["offering"]["market"] == "on-demand"
    assert result["offering"]["id"] == "aws/p3.2xlarge" and result["offering"]["provider"] == "aws"
    rows = list(csv.DictReader(io.StringIO(open_store(url).get_bytes(f"{prefix}/epochs.csv").decode())))
    assert len(rows) == 2


def test_results_land_in_gcs_emulator(gcs_bucket):
    url = f"gs://{gcs_bucket}"
    assert run_payload(*TINY_MLP, "--results", url, "--stack", "gcp-test") == 0
    results, _ = _results(open_store(url), "gcp-test")
    ((key, result),) = results.items()
    validate_result(result)
    assert result["status"] == "completed" and result["stack"] == "gcp-test"
    assert key.startswith("runs/gcp-test/") and result["run_id"] in key


def test_bucket_down_spools_then_next_run_delivers(tmp_path, moto_server, monkeypatch, capsys):
    from servers import ServerProcess, create_s3_bucket, find_tool

    exe = find_tool("moto_server")
    bucket_host = ServerProcess("moto", lambda p: [exe, "-H", "127.0.0.1", "-p", str(p)])
    for k, v in {
        "AWS_ENDPOINT_URL": bucket_host.endpoint,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(k, v)
    url = "s3://outage-bucket/r"
    rc = run_payload(*TINY_MLP, "--results", url, "--stack", "outage")
    assert rc == exitcodes.SPOOLED
    assert "spooled" in capsys.readouterr().err
    spooled = list((tmp_path / "spool").glob("*.json"))
    kinds = {json.loads(p.read_text())["key"].rsplit("/", 1)[-1] for p in spooled}
    assert {"result.json", "events.jsonl", "epochs.csv", "state.json"} <= kinds
    with bucket_host:  # the bucket is back
        create_s3_bucket(bucket_host.endpoint, "outage-bucket")
        assert run_payload(*TINY_MLP, "--results", url, "--stack", "after-outage") == 0
        store = open_store(url)
        first, _ = _results(store, "outage")
        second, _ = _results(store, "after-outage")
    assert len(first) == 1 and len(second) == 1
    validate_result(next(iter(first.values())))
    flush_events = [e for e in next(iter(second.values()))["timeline"] if e["event"] == "spool_flush"]
    assert flush_events and flush_events[0]["delivered"] >= 4
    assert list((tmp_path / "spool").glob("*.json")) == []


def _when_checkpoint_appears(store, stack, action):
    """Call ``action`` once the first checkpoint state of the run is in the bucket."""

    def loop():
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if any(o.key.endswith("checkpoints/state.json") for o in store.list(f"runs/{stack}/")):
                action()
                return
            time.sleep(0.05)

    t = threading.Thread(target=loop, daemon=True)
    t.start()
    return t


def test_spot_interruption_checkpoints_and_next_run_resumes(s3_bucket, metadata_server, monkeypatch, capsys):
    url, stack = f"s3://{s3_bucket}/res", "aws-p3-2x-spot"
    monkeypatch.setenv("GPUBENCH_WATCH_INTERVAL", "0.05")
    args = [
        "--benchmark",
        "mnist-mlp",
        "--data",
        "synthetic",
        "--epochs",
        "3",
        "--batch-size",
        "32",
        "--param",
        "samples=512,val_samples=64,hidden=64,steps_per_epoch=150",
        "--results",
        url,
        "--stack",
        stack,
    ]
    store = open_store(url)
    notice = {"action": "terminate", "time": "2025-01-01T00:02:00Z"}
    trigger = _when_checkpoint_appears(store, stack, lambda: setattr(metadata_server, "spot_action", notice))

    # attempt 1: the notice arrives after the first epoch's checkpoint
    assert run_payload(*args) == exitcodes.INTERRUPTED
    trigger.join(timeout=5)
    results, keys = _results(store, stack)
    ((key, first),) = results.items()
    validate_result(first)
    assert first["status"] == "interrupted" and first["exit_code"] == 75
    assert "spot instance-action" in first["error"]
    done = first["metrics"]["epochs_completed"]
    assert 1 <= done < 3
    assert first["attempts"][0]["status"] == "interrupted"
    assert first["offering"]["instance_id"] == metadata_server.instance_id
    assert first["offering"]["zone"] == "us-east-1a" and first["offering"]["provider"] == "aws"
    events = [e["event"] for e in first["timeline"]]
    assert "interruption_notice" in events and "checkpoint" in events
    state = json.loads(store.get_bytes(f"{key.rsplit('/', 1)[0]}/checkpoints/state.json"))
    assert state["complete"] is False and state["model_key"] in keys or store.exists(state["model_key"])
    # IMDSv2: a token was requested with a TTL and every GET carried it
    puts = [r for r in metadata_server.requests if r[0] == "PUT"]
    gets = [r for r in metadata_server.requests if r[0] == "GET" and "spot/instance-action" in r[1]]
    assert puts and all(r[2].get("x-aws-ec2-metadata-token-ttl-seconds") for r in puts)
    assert gets and all(r[2].get("x-aws-ec2-metadata-token") == metadata_server.TOKEN for r in gets)

    # attempt 2: no notice; resumes from the checkpoint and finishes 3 epochs in total
    metadata_server.spot_action = None
    metadata_server.instance_id = "i-second"
    assert run_payload(*args) == 0
    results, keys = _results(store, stack)
    assert list(results) == [key]  # same run id, and its first result.json is left as it was
    assert results[key] == first
    newest = newest_versions(keys)  # what every reader reads: the newest version of each file
    run_dir = key.rsplit("/", 1)[0]
    assert newest[key] == f"{run_dir}/result.v1.json"  # the resumed attempt's own result
    final = json.loads(store.get_bytes(newest[key]))
    validate_result(final)
    assert final["run_id"] == first["run_id"]
    assert final["status"] == "completed" and final["error"] is None
    assert final["metrics"]["epochs_completed"] == 3
    assert [a["status"] for a in final["attempts"]] == ["interrupted", "completed"]
    assert [a["instance_id"] for a in final["attempts"]] == ["i-0123456789abcdef0", "i-second"]
    assert final["metrics"]["train_seconds"] > first["metrics"]["train_seconds"]
    resume = [e for e in final["timeline"] if e["event"] == "resume"]
    assert resume and resume[0]["epochs_completed"] == done and resume[0]["attempt"] == 2
    rows = list(csv.DictReader(io.StringIO(store.get_bytes(newest[f"{run_dir}/epochs.csv"]).decode())))
    assert [int(r["epoch"]) for r in rows] == [1, 2, 3]
    # completed: the newest state says complete (no third resume); models are left to the lifecycle rule
    state = json.loads(store.get_bytes(newest[f"{run_dir}/checkpoints/state.json"]))
    assert state["complete"] is True and state["model_key"] is None
    assert find_resumable(store, stack, final["benchmark"]["fingerprint"]) is None
    assert "resume" not in [e["event"] for e in first["timeline"]]


def test_a_replacement_instance_skips_what_its_deployment_already_completed(tmp_path, capsys):
    """A spot replacement of the same `pulumi up` (same GPUBENCH_DEADLINE) reruns
    the suite: benchmarks already completed are not run (and billed) twice.
    A new deployment (another deadline) is a new repeat."""
    from payload.run import find_completed

    url, stack = f"file://{tmp_path}", "aws-g4dn-1x-spot"
    args = [*TINY_MLP, "--results", url, "--stack", stack, "--deadline", "2030-01-01T06:00:00Z"]
    assert run_payload(*args) == 0
    assert run_payload(*args) == 0
    assert "already completed in this deployment" in capsys.readouterr().err
    results, _ = _results(open_store(url), stack)
    assert len(results) == 1
    (fp,) = {r["benchmark"]["fingerprint"] for r in results.values()}
    store = open_store(url)
    from datetime import datetime, timezone

    deployment = datetime(2030, 1, 1, 6, tzinfo=timezone.utc).timestamp()
    assert find_completed(store, stack, fp, deployment) is not None
    assert find_completed(store, stack, fp, 1.0) is None  # another deployment's deadline
    assert find_completed(store, stack, fp, None) is None  # local runs: always a new repeat
