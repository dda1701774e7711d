"""The payload never loses a result: bad inputs are refused before training,
host events with offsets are kept, an unwritable spool falls back, SIGINT
checkpoints like SIGTERM, and flush keeps the object tags."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from payload_helpers import isolate_payload_env, only_result, run_payload

from payload import exitcodes
from payload.events import Timeline
from payload.schema import validate_result
from payload.spool import Spool, SpoolingStore
from payload.storage import open_store

QUICK = ["--data", "synthetic", "--epochs", "1", "--batch-size", "16", "--param", "samples=32,val_samples=16"]


@pytest.mark.parametrize(
    "args, env, needles",
    [
        (["--stack", "../other"], {}, ["--stack='../other'", "slug"]),
        (["--stack", "a/b"], {}, ["'a/b'", "no '/'"]),
        (["--stack", "has space"], {}, ["--stack='has space'", "slug"]),
        (["--results", "ftp://host/x"], {}, ["ftp://host/x", "s3://"]),
        (["--results", "s3://My_Bucket/x"], {}, ["'My_Bucket'", "lowercase"]),
        (["--results", "s3://ab"], {}, ["'ab'", "3 to 63"]),
        (["--results", "gs://google-results"], {}, ["'google-results'", "google"]),
        (["--results", "s3:///prefix"], {}, ["no bucket"]),
        (["--results", "file://host/dir"], {}, ["file:///absolute/path"]),
        (["--param", "samples=-5"], {}, ["samples='-5'", ">= 1"]),
        (["--param", "hidden=0"], {}, ["hidden='0'", ">= 1"]),
        (["--param", "warmup_steps=-1"], {}, ["warmup_steps='-1'", ">= 0"]),
        (["--param", "samples=nan"], {}, ["samples='nan'", "finite"]),
        (["--hourly-usd", "inf"], {}, ["--hourly-usd='inf'", "finite"]),
        ([], {"GPUBENCH_PRICE_AS_OF": "last tuesday"}, ["GPUBENCH_PRICE_AS_OF='last tuesday'", "ISO 8601"]),
    ],
)
def test_bad_inputs_are_usage_errors_naming_the_value(args, env, needles, monkeypatch, capsys, tmp_path):
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    base = ["--benchmark", "mnist-mlp", "--results", str(tmp_path), "--stack", "s"]
    rc = run_payload(*base, *args)
    err = capsys.readouterr().err
    assert rc == exitcodes.USAGE, err
    for needle in needles:
        assert needle in err
    assert "Traceback" not in err
    assert not (tmp_path / "runs").exists() and not (tmp_path.parent / "other").exists()


def test_host_events_with_offsets_are_normalised_and_bad_lines_reported(tmp_path):
    events = tmp_path / "events.jsonl"
    events.write_text(
        "\n".join(
            [
                '{"time": "2025-01-31T12:00:00+02:00", "event": "instance_launch"}',
                '{"time": "2025-01-31T10:00:05", "event": "boot_done"}',  # no offset: UTC
                "not json",
                "[1, 2]",
                '{"time": 1e300, "event": "far"}',
                '{"time": "2025-13-01T00:00:00Z", "event": "bad month"}',
                '{"event": "no time"}',
            ]
        )
        + "\n"
    )
    t = Timeline()
    warnings = t.merge_host_events(events)
    assert [e["time"] for e in t.events] == ["2025-01-31T10:00:00.000Z", "2025-01-31T10:00:05.000Z"]
    assert [w.split(": skipped")[0] for w in warnings] == [f"{events}:{n}" for n in range(3, 8)]


def test_a_run_with_offset_host_events_keeps_its_result(tmp_path):
    host = tmp_path / "host.jsonl"
    host.write_text('{"time": "2025-01-31T12:00:00+02:00", "event": "instance_launch"}\n{oops\n')
    out = tmp_path / "out"
    rc = run_payload(
        "--benchmark", "mnist-mlp", "--results", str(out), "--stack", "tz", *QUICK, "--host-events", str(host)
    )
    assert rc == exitcodes.OK
    _, result = only_result(out, "tz")
    validate_result(result)
    assert result["timeline"][0] == {
        **result["timeline"][0],
        "event": "instance_launch",
        "time": "2025-01-31T10:00:00.000Z",
    }
    assert any("host.jsonl:2" in w for w in result["warnings"])


def _env(tmp_path: Path, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUBENCH_")}
    return {**env, "GPUBENCH_STORAGE_RETRIES": "1", "GPUBENCH_STORAGE_BACKOFF": "0", **extra}


def test_unwritable_bucket_and_spool_put_the_result_in_the_fallback(tmp_path, monkeypatch, capsys):
    """The results directory and the spool both sit under a plain file, so neither
    can be created (this holds even for root). The result goes to
    $TMPDIR/gpubench-fallback/, the exit code is STRANDED, and flush delivers it.
    The run is in this process (TensorFlow is loaded here already), `flush` a command."""
    blocker = tmp_path / "blocker"
    blocker.write_text("a file, not a directory")
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    isolate_payload_env(monkeypatch, blocker / "spool")
    monkeypatch.setenv("TMPDIR", str(tmpdir))
    monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir() reads TMPDIR again, as a new process would
    monkeypatch.chdir(tmp_path)
    rc = run_payload("--benchmark", "mnist-mlp", "--stack", "fb", *QUICK, "--results", str(blocker / "results"))
    err = capsys.readouterr().err
    assert rc == exitcodes.STRANDED, err[-3000:]
    assert "Traceback" not in err
    fallback = tmpdir / "gpubench-fallback"
    assert f"flush --spool {fallback}" in err
    items = Spool(fallback, fallbacks=[]).pending()
    assert {i["key"].rsplit("/", 1)[-1] for i in items} >= {"result.json", "events.jsonl", "epochs.csv"}
    # deliver them somewhere that works: the spool keeps the destination, so point it back at a writable one
    good = tmp_path / "good"
    for meta in fallback.glob("*.json"):
        item = json.loads(meta.read_text())
        item["url"] = good.as_uri()
        meta.write_text(json.dumps(item))
    env = _env(tmp_path, TMPDIR=str(tmpdir))
    flushed = subprocess.run(
        [sys.executable, "-m", "payload", "flush", "--spool", str(fallback)], env=env, capture_output=True, text=True
    )
    assert flushed.returncode == exitcodes.OK, flushed.stderr
    _, result = only_result(good, "fb")
    validate_result(result)
    assert result["status"] == "completed"


def test_no_directory_at_all_prints_the_result_to_stderr(tmp_path, capsys):
    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    down = open_store(str(blocker / "results"), retries=1, backoff=0)
    store = SpoolingStore(down, Spool(blocker / "spool", fallbacks=[blocker / "fb1", blocker / "fb2"]))
    assert store.put_bytes("runs/s/r/result.json", b'{"status": "completed"}', "application/json") is False
    assert store.put_bytes("runs/s/r/checkpoints/model.bin", b"\xff\x00" * 10) is False
    err = capsys.readouterr().err
    assert "LOST-FILE-BEGIN" in err and '{"status": "completed"}' in err
    assert store.stranded == ["runs/s/r/result.json", "runs/s/r/checkpoints/model.bin"]
    assert store.lost == ["runs/s/r/checkpoints/model.bin"]


def test_flush_uploads_with_the_same_tags_as_a_direct_upload(tmp_path, moto_server, s3_bucket):
    """A checkpoint spooled while its bucket was missing keeps gpubench:kind=checkpoint when flushed,
    so the bucket's lifecycle rule still expires it."""
    import boto3
    from servers import create_s3_bucket

    from payload.builtin import CHECKPOINT_TAGS

    later = s3_bucket + "-later"
    spool = Spool(tmp_path / "spool", fallbacks=[])
    store = SpoolingStore(open_store(f"s3://{later}/p", retries=1, backoff=0), spool)
    assert store.put_bytes("runs/s/r/checkpoints/m.keras", b"model", tags=CHECKPOINT_TAGS) is False
    assert store.put_bytes("runs/s/r/result.json", b"{}", "application/json") is False
    create_s3_bucket(moto_server.endpoint, later)
    env = {**os.environ, "GPUBENCH_SPOOL": str(spool.dir)}
    out = subprocess.run([sys.executable, "-m", "payload", "flush"], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    s3 = boto3.client("s3", endpoint_url=moto_server.endpoint)
    tags = s3.get_object_tagging(Bucket=later, Key="p/runs/s/r/checkpoints/m.keras")["TagSet"]
    assert {t["Key"]: t["Value"] for t in tags} == CHECKPOINT_TAGS
    assert s3.get_object_tagging(Bucket=later, Key="p/runs/s/r/result.json")["TagSet"] == []


def test_sigint_checkpoints_and_exits_75_like_sigterm(tmp_path):
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "payload",
            "run",
            "--benchmark",
            "mnist-mlp",
            "--results",
            str(tmp_path),
            "--stack",
            "int",
            "--data",
            "synthetic",
            "--epochs",
            "50",
            "--batch-size",
            "16",
            "--param",
            "samples=256,val_samples=16,hidden=16,steps_per_epoch=40",
        ],
        env={**os.environ, "GPUBENCH_WATCH_INTERVAL": "0.05"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not list(tmp_path.glob("runs/int/*/checkpoints/state.json")):
            assert proc.poll() is None, proc.stderr.read()[-2000:]
            assert time.monotonic() < deadline, "no checkpoint within 120 s"
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        rc = proc.wait(timeout=60)
        err = proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
    assert rc == exitcodes.INTERRUPTED, err[-2000:]
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    _, result = only_result(tmp_path, "int")
    validate_result(result)
    assert result["status"] == "interrupted" and "SIGINT" in result["error"]
