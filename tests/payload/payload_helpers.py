"""Helpers shared by the payload tests (a uniquely named module: several
conftest.py files in one session must not shadow each other)."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path
from types import SimpleNamespace

import pytest
from servers import closed_port_url
from user_state import USER_STATE_VARIABLES

from payload.layout import newest_versions
from payload.run import price_row
from payload.schema import validate_result


def isolate_payload_env(mp: pytest.MonkeyPatch, spool: Path) -> None:
    """No leaked GPUBENCH_* settings (the test's own per-user folders stay), a private spool, fast storage
    retries, no metadata service."""
    for key in list(os.environ):
        if key.startswith("GPUBENCH_") and key not in USER_STATE_VARIABLES:
            mp.delenv(key)
    mp.setenv("GPUBENCH_SPOOL", str(spool))
    mp.setenv("GPUBENCH_STORAGE_RETRIES", "2")
    mp.setenv("GPUBENCH_STORAGE_BACKOFF", "0.01")
    url = closed_port_url()
    mp.setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", url + "/")
    mp.setenv("GCE_METADATA_HOST", url.removeprefix("http://"))
    mp.setenv("TF_CPP_MIN_LOG_LEVEL", "2")


def run_payload(*args: str) -> int:
    """``python -m payload run ARGS`` in this process; returns the exit code."""
    from payload.cli import main

    return main(["run", *args])


def results_under(root: Path, stack: str) -> dict[str, dict]:
    """run-id -> the newest version of its result (result.json, or a resumed attempt's
    result.v<n>.json) for a file:// results directory."""
    keys = [p.relative_to(root).as_posix() for p in (root / "runs" / stack).glob("*/result*.json")]
    newest = {k: v for k, v in newest_versions(keys).items() if k.endswith("/result.json")}
    return {Path(k).parent.name: json.loads((root / v).read_text()) for k, v in sorted(newest.items())}


def only_result(root: Path, stack: str) -> tuple[Path, dict]:
    found = results_under(root, stack)
    assert len(found) == 1, f"expected one result under runs/{stack}, got {list(found)}"
    run_id, result = next(iter(found.items()))
    return root / "runs" / stack / run_id, result


def check_completed_run(run_dir: Path, result: dict, name: str) -> list[dict]:
    """What every completed benchmark run on this CPU leaves: a valid result, its timeline and events; the epoch rows."""
    validate_result(result)
    assert result["status"] == "completed", result["error"]
    assert result["exit_code"] == 0
    assert result["benchmark"]["name"] == name
    assert result["hardware"]["device"] == "CPU" and result["hardware"]["gpu_model"] is None
    assert result["metrics"]["gpu_utilization_mean"] is None  # no GPU: null, never invented
    assert result["metrics"]["samples_per_second"] > 0
    assert result["metrics"]["train_seconds"] > 0
    assert result["software"]["tensorflow"]
    events = [e["event"] for e in result["timeline"]]
    for e in ("run_start", "devices", "data_loaded", "train_start", "train_end", "upload"):
        assert e in events
    assert (run_dir / "events.jsonl").read_text().count("\n") == len(result["timeline"])
    return list(csv.DictReader((run_dir / "epochs.csv").open()))


def check_finished_outputs(run_dir: Path, out: str) -> None:
    """A finished run printed its MLLOG stops, and its newest checkpoint state says it is complete and points at
    no model, so nothing resumes it (models are write-once and expire by the bucket's lifecycle rule)."""
    assert ":::MLLOG {" in out and '"key": "run_stop"' in out and '"key": "epoch_stop"' in out
    states = sorted(run_dir.glob("checkpoints/state*.json"), key=lambda p: p.stat().st_mtime_ns)
    newest = json.loads(states[-1].read_text())
    assert newest["complete"] is True and newest["model_key"] is None


def launched_price(offering, market, hourly_usd, source, as_of, on_demand_hourly_usd=None):
    """payload.run.price_row of a run launched with these price options."""
    return price_row(
        SimpleNamespace(
            offering=offering,
            market=market,
            hourly_usd=hourly_usd,
            price_source=source,
            price_as_of=as_of,
            on_demand_hourly_usd=on_demand_hourly_usd,
        )
    )
