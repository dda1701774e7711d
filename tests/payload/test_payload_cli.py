"""The command line: help, env-var configuration, clear errors, list, --expect-gpu."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from payload_helpers import only_result, run_payload

from payload import exitcodes
from payload.cli import main
from payload.config import OPTIONS, ConfigError, resolve
from payload.schema import validate_result


def test_run_help_names_every_env_variable(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["run", "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    for opt in OPTIONS:
        assert opt.cli in out and opt.env in out
    contract = [
        "GPUBENCH_BENCHMARK",
        "GPUBENCH_RESULTS",
        "GPUBENCH_STACK",
        "GPUBENCH_OFFERING",
        "GPUBENCH_MARKET",
        "GPUBENCH_EPOCHS",
        "GPUBENCH_STEPS",
        "GPUBENCH_BATCH_SIZE",
        "GPUBENCH_PRECISION",
        "GPUBENCH_GPUS",
        "GPUBENCH_DATA",
        "GPUBENCH_EXPECT_GPU",
        "GPUBENCH_HOURLY_USD",
        "GPUBENCH_PRICE_SOURCE",
        "GPUBENCH_PRICE_AS_OF",
        "GPUBENCH_HOST_EVENTS",
        "GPUBENCH_DEADLINE",
    ]
    assert set(contract) <= {o.env for o in OPTIONS}
    assert "75 interrupted" in out


@pytest.mark.parametrize(
    "args, env, needles",
    [
        (["--precision", "fp16"], {}, ["--precision='fp16'", "fp32, mixed"]),
        ([], {"GPUBENCH_EPOCHS": "abc"}, ["GPUBENCH_EPOCHS='abc'", "positive integer"]),
        (["--epochs", "0"], {}, ["--epochs='0'"]),
        (["--benchmark", "resnet5"], {}, ["'resnet5'", "did you mean resnet50"]),
        (["--gpus", "-1"], {}, ["--gpus='-1'", "from 0 to 16"]),
        (["--gpus", "1000000000000"], {}, ["--gpus='1000000000000'", "the most GPUs one machine"]),
        (["--data", "/nonexistent/dir"], {}, ["/nonexistent/dir", "synthetic"]),
        (["--epochs", "2", "--steps", "3"], {}, ["mutually exclusive"]),
        ([], {"GPUBENCH_EXPECT_GPU": "maybe"}, ["GPUBENCH_EXPECT_GPU='maybe'", "1/0"]),
        (["--market", "reserved"], {}, ["'reserved'", "on-demand, spot"]),
        (["--param", "nonsense=1"], {}, ["'nonsense'", "mnist-mlp"]),
        (["--param", "hidden=big"], {}, ["hidden='big'"]),
        ([], {"GPUBENCH_DEADLINE": "tomorrow"}, ["GPUBENCH_DEADLINE='tomorrow'", "ISO 8601"]),
    ],
)
def test_bad_values_exit_2_and_name_the_value(args, env, needles, monkeypatch, capsys, tmp_path):
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    base = ["--benchmark", "mnist-mlp", "--results", str(tmp_path), "--stack", "s"]
    rc = run_payload(*base, *args)
    err = capsys.readouterr().err
    assert rc == exitcodes.USAGE
    for needle in needles:
        assert needle in err
    assert not (tmp_path / "runs").exists()


def test_missing_required_option_names_flag_and_env(capsys):
    assert run_payload("--benchmark", "mnist-mlp", "--stack", "s") == exitcodes.USAGE
    err = capsys.readouterr().err
    assert "--results" in err and "GPUBENCH_RESULTS" in err


def test_cli_beats_env_beats_default(monkeypatch):
    env = {
        "GPUBENCH_BENCHMARK": "mnist-mlp,vgg16",
        "GPUBENCH_RESULTS": "/r",
        "GPUBENCH_STACK": "env-stack",
        "GPUBENCH_BATCH_SIZE": "64",
        "GPUBENCH_EXPECT_GPU": "1",
        "GPUBENCH_PARAMS": "hidden=8,samples=10",
        "GPUBENCH_DEADLINE": "2030-01-01T00:00:00Z",
    }
    cfg = resolve({"stack": "cli-stack"}, env)
    assert cfg.benchmark == ["mnist-mlp", "vgg16"] and cfg.stack == "cli-stack" and cfg.batch_size == 64
    assert cfg.expect_gpu is True and cfg.precision == "fp32" and cfg.param == {"hidden": "8", "samples": "10"}
    assert cfg.deadline == 1893456000.0 and cfg.data.mode == "download"
    with pytest.raises(ConfigError, match="GPUBENCH_STACK"):
        resolve({}, {k: v for k, v in env.items() if k != "GPUBENCH_STACK"})


def test_run_configured_only_through_env(monkeypatch, tmp_path):
    """cloud-init hands the container an env file: no arguments at all."""
    for k, v in {
        "GPUBENCH_BENCHMARK": "mnist-mlp",
        "GPUBENCH_RESULTS": tmp_path.as_uri(),
        "GPUBENCH_STACK": "env-only",
        "GPUBENCH_DATA": "synthetic",
        "GPUBENCH_EPOCHS": "1",
        "GPUBENCH_BATCH_SIZE": "16",
        "GPUBENCH_PARAMS": "samples=64,val_samples=16,hidden=8",
        "GPUBENCH_IMAGE": "ghcr.io/example/gpubench-payload:0.1.0",
        "GPUBENCH_MARKET": "spot",
        "GPUBENCH_HOURLY_USD": "0.9",
        "GPUBENCH_PRICE_SOURCE": "env file",
        "GPUBENCH_PRICE_AS_OF": "2025-02-03",
    }.items():
        monkeypatch.setenv(k, v)
    host_events = tmp_path / "host-events.jsonl"
    host_events.write_text(
        '{"time": "2020-01-01T00:00:00Z", "event": "instance_launch"}\n'
        '{"time": "2020-01-01T00:01:00Z", "event": "boot_done"}\n'
        '{"time": "2020-01-01T00:01:30Z", "event": "container_start"}\n'
    )
    monkeypatch.setenv("GPUBENCH_HOST_EVENTS", str(host_events))
    assert main(["run"]) == 0
    _, result = only_result(tmp_path, "env-only")
    validate_result(result)
    assert result["software"]["image"] == "ghcr.io/example/gpubench-payload:0.1.0"
    assert result["offering"]["market"] == "spot"
    # a spot launch price is the spot price; no offering, so no on-demand price to add
    assert result["price"]["spot_hourly_usd"] == 0.9 and result["price"]["hourly_usd"] is None
    assert result["price"]["origin"] == "env" and result["price"]["source"] == "env file"
    assert result["benchmark"]["params"]["samples"] == 64 and result["benchmark"]["params"]["epochs"] == 1
    events = [e["event"] for e in result["timeline"]]
    assert events[:4] == ["instance_launch", "boot_done", "container_start", "run_start"]


def test_suite_bills_instance_launch_to_its_first_benchmark_only(monkeypatch, tmp_path):
    """One container runs the whole suite: the host's instance_launch opens the
    first benchmark's billed window only; later benchmarks are billed from their
    own start, so the suite's windows never overlap (no instance time twice)."""
    from analysis.dataset.row import billing_windows

    for k, v in {
        "GPUBENCH_BENCHMARK": "mnist-mlp,mnist-cnn",
        "GPUBENCH_RESULTS": tmp_path.as_uri(),
        "GPUBENCH_STACK": "suite",
        "GPUBENCH_DATA": "synthetic",
        "GPUBENCH_EPOCHS": "1",
        "GPUBENCH_BATCH_SIZE": "16",
        "GPUBENCH_PARAMS": "samples=32,val_samples=16",
    }.items():
        monkeypatch.setenv(k, v)
    host_events = tmp_path / "host-events.jsonl"
    host_events.write_text('{"time": "2020-01-01T00:00:00Z", "event": "instance_launch"}\n')
    monkeypatch.setenv("GPUBENCH_HOST_EVENTS", str(host_events))
    assert main(["run"]) == 0
    results = sorted(
        (json.loads(p.read_text()) for p in (tmp_path / "runs" / "suite").glob("*/result.json")),
        key=lambda r: r["started_at"],
    )
    assert [r["benchmark"]["name"] for r in results] == ["mnist-mlp", "mnist-cnn"]
    launches = [[e for e in r["timeline"] if e["event"] == "instance_launch"] for r in results]
    assert len(launches[0]) == 1 and launches[1] == []
    first, second = (billing_windows(r)[0] for r in results)
    assert first["start"].startswith("2020-01-01T00:00:00") and second["start"] >= first["end"]


def test_list_text_and_json(capsys):
    assert main(["list"]) == 0
    text = capsys.readouterr().out
    assert "bilstm-sentiment" in text and "seed 000" in text
    assert main(["list", "--json"]) == 0
    items = json.loads(capsys.readouterr().out)
    by_name = {b["name"]: b for b in items}
    assert len(by_name) == 11
    assert by_name["resnet50"]["kind"] == "throughput" and by_name["resnet50"]["params"]["image_size"] == 224
    assert by_name["text-lstm"]["kind"] == "epochs"


def test_list_does_not_import_tensorflow():
    code = "import sys; from payload.cli import main; main(['list']); assert 'tensorflow' not in sys.modules"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr


def test_expect_gpu_fails_clearly_without_a_gpu(tmp_path):
    """This machine has no GPU: exit 3 at once, with a failed result uploaded."""
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "payload",
            "run",
            "--benchmark",
            "mnist-mlp,vgg16",
            "--results",
            str(tmp_path),
            "--stack",
            "gpu-expected",
            "--expect-gpu",
            "--data",
            "synthetic",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == exitcodes.NO_GPU, out.stderr[-2000:]
    assert "--expect-gpu is set but TensorFlow sees no GPU" in out.stderr
    results = sorted((tmp_path / "runs" / "gpu-expected").glob("*/result.json"))
    assert len(results) == 2  # one failed result per requested benchmark
    for path in results:
        r = validate_result(json.loads(path.read_text()))
        assert r["status"] == "failed" and r["exit_code"] == exitcodes.NO_GPU
        assert "TensorFlow sees no GPU" in r["error"]
        assert r["hardware"]["device"] == "CPU" and r["metrics"]["train_seconds"] == 0
        assert "data_loaded" not in [e["event"] for e in r["timeline"]]  # failed before touching data
