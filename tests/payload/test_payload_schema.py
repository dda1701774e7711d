"""The result schema, the writer and the timeline/MLLOG helpers (no TensorFlow)."""

from __future__ import annotations

import csv
import io
import json

import pytest

from payload.events import Timeline, mllog
from payload.result import RunWriter, new_result
from payload.schema import SCHEMA_VERSION, ResultValidationError, load_schema, validate_result
from payload.spool import Spool, SpoolingStore
from payload.storage import open_store
from payload.timestamps import iso


def sample_result(**over) -> dict:
    now = iso()
    r = new_result(
        run_id="20250101T000000Z-i-abc-mnist-mlp",
        stack="aws-p3-2x",
        status="completed",
        started_at=now,
        finished_at=now,
        offering={
            "id": "aws/p3.2xlarge",
            "provider": "aws",
            "kind": "cloud",
            "region": "us-east-1",
            "zone": "us-east-1a",
            "instance_type": "p3.2xlarge",
            "instance_id": "i-abc",
            "market": "on-demand",
        },
        price={"hourly_usd": 3.06, "spot_hourly_usd": None, "source": "test", "as_of": "2025-01-01", "origin": "env"},
        hardware={"device": "CPU", "gpu_model": None, "gpu_count": 0, "gpu_memory_gb": None, "driver_version": None},
        software={"payload_version": "0.1.0", "python": "3.11", "tensorflow": None, "image": None},
        benchmark={
            "name": "mnist-mlp",
            "kind": "epochs",
            "params": {"epochs": 1},
            "data": "synthetic",
            "precision": "fp32",
            "per_gpu_batch_size": 128,
            "global_batch_size": 128,
            "replicas": 1,
            "fingerprint": "abc",
        },
        attempts=[
            {
                "attempt": 1,
                "instance_id": "i-abc",
                "zone": "us-east-1a",
                "start": now,
                "end": now,
                "status": "completed",
            }
        ],
        timeline=[{"time": now, "event": "run_start"}],
        metrics={"train_seconds": 1.5, "epochs_completed": 1},
    )
    r.update(over)
    return r


def test_schema_is_valid_and_versioned():
    schema = load_schema()
    assert schema["properties"]["schema_version"]["const"] == SCHEMA_VERSION == 1
    # every top-level section is documented
    for name, prop in schema["properties"].items():
        assert "description" in prop or "$ref" in prop, name
    validate_result(sample_result())


@pytest.mark.parametrize(
    "mutate, needle",
    [
        (lambda r: r.update(status="done"), "status"),
        (lambda r: r["metrics"].pop("train_seconds"), "train_seconds"),
        (lambda r: r.update(schema_version=2), "schema_version"),
        (lambda r: r["price"].update(hourly_usd="3.06"), "price/hourly_usd"),
        (lambda r: r.update(attempts=[]), "attempts"),
        (lambda r: r["hardware"].update(device="TPU"), "hardware/device"),
        (lambda r: r.update(surprise=1), "surprise"),
        (lambda r: r.update(started_at="yesterday"), "started_at"),
    ],
)
def test_invalid_results_are_rejected_with_their_path(mutate, needle):
    r = sample_result()
    mutate(r)
    with pytest.raises(ResultValidationError) as err:
        validate_result(r)
    assert needle in str(err.value)


def test_writer_validates_the_json_it_writes(tmp_path):
    """A value a library hands over as a str subclass (torch.__version__) is written as a string and passes."""

    class Version(str):
        pass

    store = SpoolingStore(open_store(tmp_path.as_uri()), Spool(tmp_path / "spool"))
    result = sample_result()
    result["run_id"] = Version(result["run_id"])
    assert RunWriter(store, "aws-p3-2x", "rid").write_all(result, Timeline(), [])
    assert json.loads((tmp_path / "runs/aws-p3-2x/rid/result.json").read_text())["run_id"] == result["run_id"]


def test_writer_validates_before_upload(tmp_path):
    store = SpoolingStore(open_store(tmp_path.as_uri()), Spool(tmp_path / "spool"))
    w = RunWriter(store, "aws-p3-2x", "rid")
    bad = sample_result(status="bogus")
    with pytest.raises(ResultValidationError):
        w.write_all(bad, Timeline(), [])
    assert not (tmp_path / "runs/aws-p3-2x/rid/result.json").exists()
    tl = Timeline()
    tl.add("run_start")
    tl.add("train_end", seconds=1.0)
    rows = [{"epoch": 1, "elapsed": 1.2, "loss": 0.5, "acc": 0.9, "val_loss": None, "val_acc": 0.8}]
    assert w.write_all(sample_result(), tl, rows)
    got = json.loads((tmp_path / "runs/aws-p3-2x/rid/result.json").read_text())
    assert got == sample_result() | {
        "started_at": got["started_at"],
        "finished_at": got["finished_at"],
        "attempts": got["attempts"],
        "timeline": got["timeline"],
    }
    lines = (tmp_path / "runs/aws-p3-2x/rid/events.jsonl").read_text().splitlines()
    assert [json.loads(x)["event"] for x in lines] == ["run_start", "train_end"]
    rows_back = list(csv.DictReader(io.StringIO((tmp_path / "runs/aws-p3-2x/rid/epochs.csv").read_text())))
    assert list(rows_back[0]) == ["epoch", "elapsed", "loss", "acc", "val_loss", "val_acc"]
    assert rows_back[0]["val_loss"] == "" and rows_back[0]["val_acc"] == "0.8"


def test_host_events_are_merged_in_time_order(tmp_path):
    host = tmp_path / "host-events.jsonl"
    host.write_text(
        '{"time": "2020-01-01T00:00:00Z", "event": "instance_launch"}\n'
        "not json\n"
        '{"time": 1577836805.0, "event": "boot_done"}\n'
    )
    tl = Timeline()
    tl.add("run_start")
    warnings = tl.merge_host_events(host)
    assert len(warnings) == 1 and "host-events.jsonl:2" in warnings[0]
    events = [e["event"] for e in tl.ordered()]
    assert events == ["instance_launch", "boot_done", "run_start"]
    assert tl.ordered()[0]["source"] == "host"
    assert "does not exist" in tl.merge_host_events(tmp_path / "missing.jsonl")[0]


def test_mllog_line_format(capsys):
    mllog("epoch_stop", metadata={"epoch_num": 3})
    mllog("eval_accuracy", 0.5)
    out = capsys.readouterr().out.splitlines()
    assert all(line.startswith(":::MLLOG {") for line in out)
    first = json.loads(out[0].removeprefix(":::MLLOG "))
    assert first["event_type"] == "INTERVAL_END" and first["metadata"]["epoch_num"] == 3
    assert set(first) == {"namespace", "time_ms", "event_type", "key", "value", "metadata"}
    assert json.loads(out[1].removeprefix(":::MLLOG "))["value"] == 0.5
