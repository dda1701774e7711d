"""Workloads you bring: spec validation and hashing, metrics read from recorded
MLPerf logs and the GPUBENCH_METRICS line, and real runs through the local
runtime (the PyTorch example on the CPU wheel, a failing job, a job with no
metrics, a job stopped at the deadline) priced, collected and reported."""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from run_files import final_log_tail
from servers import closed_port_url, require_module

from payload.cli import main as payload_main
from payload.layout import newest_versions
from payload.schema import validate_result
from payload.workloads.jobvenv import INHERIT_ENV, envs_root
from payload.workloads.metrics import MetricsReader, parse_json_line, parse_mllog_line
from payload.workloads.spec import WorkloadSpecError, load_spec

REPO = Path(__file__).resolve().parents[2]
DATA = Path(__file__).parent / "data"
NVIDIA_LOG = DATA / "mllog_nvidia_resnet_v1.0.txt"
# The real example, scaled down for two shared CPU cores (one thread: no oversubscription).
TINY = {"EPOCHS": "2", "SAMPLES": "128", "IMAGE_SIZE": "16", "WIDTH": "8", "BATCH_SIZE": "32", "OMP_NUM_THREADS": "1"}


def write_spec(tmp_path: Path, doc: dict, files: dict[str, str] | None = None) -> Path:
    wd = tmp_path / "job"
    wd.mkdir(exist_ok=True)
    for name, text in (files or {}).items():
        (wd / name).write_text(text)
    doc = {"workdir": "job", **doc}
    path = tmp_path / "workload.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def torch_spec(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **env) -> Path:
    require_module("torch")  # the dev extra pins the CPU wheel; CI installs it
    monkeypatch.setenv(INHERIT_ENV, "1")  # the job's environment sees this one's torch: no 700 MB install
    wd = tmp_path / "resnet"
    shutil.copytree(REPO / "examples" / "pytorch-resnet", wd)
    doc = yaml.safe_load((wd / "workload.yaml").read_text())
    doc["env"] = {**doc["env"], **TINY, **env}
    (wd / "workload.yaml").write_text(yaml.safe_dump(doc))
    return wd / "workload.yaml"


def run_payload(spec: Path, bucket: Path, *extra: str) -> int:
    return payload_main(
        [
            "run",
            "--workload",
            str(spec),
            "--results",
            str(bucket),
            "--stack",
            "local-workload",
            "--offering",
            "local/this-machine",
            "--hourly-usd",
            "0.40",
            "--price-source",
            "test flat rate",
            "--price-as-of",
            "2026-01-01",
            *extra,
        ]
    )


def only_result(bucket: Path) -> tuple[dict, Path]:
    (path,) = sorted(bucket.glob("runs/*/*/result.json"))
    return validate_result(json.loads(path.read_text())), path.parent


# --- the spec ---------------------------------------------------------------------------------------------


def test_spec_fields_hash_and_examples(tmp_path):
    path = write_spec(tmp_path, {"name": "job", "run": "python t.py", "env": {"A": 1}}, {"t.py": "print(1)\n"})
    spec = load_spec(path)
    assert spec.workdir == str(tmp_path / "job") and spec.cwd == spec.workdir
    assert spec.env == {"A": "1"} and spec.metrics == ("json", "mllog", "keras", "hf", "tqdm")
    assert spec.benchmark_name == f"workload:job@{spec.sha256[:12]}" and len(spec.sha256) == 64
    assert load_spec(path).sha256 == spec.sha256  # same content, same hash
    (tmp_path / "job" / "t.py").write_text("print(2)\n")
    edited = load_spec(path)
    assert edited.sha256 != spec.sha256 and edited.workdir_sha256 != spec.workdir_sha256
    moved = tmp_path / "elsewhere"
    shutil.copytree(tmp_path, moved, ignore=shutil.ignore_patterns("elsewhere"))
    assert load_spec(moved / "workload.yaml").sha256 == edited.sha256  # where it lives does not count
    (tmp_path / "job" / "__pycache__").mkdir()
    (tmp_path / "job" / "__pycache__" / "t.cpython-311.pyc").write_bytes(b"x")
    assert load_spec(path).sha256 == edited.sha256  # caches are not part of the job
    for example in ("pytorch-resnet", "keras-mnist"):
        ex = load_spec(REPO / "examples" / example / "workload.yaml")
        assert ex.image and ex.run and Path(ex.cwd, "train.py").is_file()


def test_a_variable_named_in_env_takes_the_environments_value_and_the_hash_covers_it(tmp_path):
    files = {"t.py": "print(1)\n"}
    spec = load_spec(write_spec(tmp_path, {"name": "job", "run": "python t.py", "env": {"DATA": "synthetic"}}, files))
    same = spec.with_environment({"DATA": "synthetic", "HOME": "/home/x", "OTHER": "1"})
    assert same.sha256 == spec.sha256 and same.env_from_environment == ()  # unnamed variables do not count
    real = spec.with_environment({"DATA": "download"})
    assert real.env == {"DATA": "download"} and real.env_from_environment == ("DATA",)
    assert real.sha256 != spec.sha256 and real.benchmark_name != spec.benchmark_name
    # the value used is what counts: written in the spec, it is the same workload as set in the shell
    other = tmp_path / "other"
    other.mkdir()
    written = load_spec(write_spec(other, {"name": "job", "run": "python t.py", "env": {"DATA": "download"}}, files))
    assert written.sha256 == real.sha256


def test_local_run_records_the_environments_value_and_what_the_job_imported(tmp_path, monkeypatch):
    job = (
        "import json, os\n"
        "print('GPUBENCH_METRICS ' + json.dumps({'samples': 10, 'seconds': 1.0, 'data': os.environ['DATA']}))\n"
    )
    doc = {"name": "envjob", "image": "pytorch/pytorch:2.7.0-cuda12.8-cudnn9-runtime", "run": "python job.py"}
    spec = write_spec(tmp_path, {**doc, "env": {"DATA": "synthetic"}, "metrics": ["json"]}, {"job.py": job})
    monkeypatch.setenv("DATA", "download")
    assert run_payload(spec, tmp_path / "bucket") == 0
    result, _ = only_result(tmp_path / "bucket")
    w, sw = result["benchmark"]["workload"], result["software"]
    assert w["reported"]["json"]["data"] == "download"  # the job got the shell's value
    assert w["env"] == {"DATA": "download"} and w["env_from_environment"] == ["DATA"]
    assert w["sha256"] == load_spec(spec).with_environment({"DATA": "download"}).sha256 != load_spec(spec).sha256
    # what ran: this machine's Python, no container, and no framework imported (torch is installed here)
    assert sw["frameworks_from"] == "imported" and sw["job_python_version"]
    assert all(sw[k] is None for k in ("torch", "tensorflow", "keras", "jax", "jaxlib"))
    assert sw["image"] is None and w["image"] is None and w["spec_image"] == doc["image"]
    assert result["hardware"]["cpu_model"] is not None or result["hardware"]["cpu_count"]


def test_the_jobs_own_sitecustomize_still_runs_and_a_job_without_python_records_what_is_installed(
    tmp_path, monkeypatch
):
    monkeypatch.delenv("PYTHONPATH", raising=False)  # else the shell's value would replace the spec's (the env rule)
    job = "import json\nprint('GPUBENCH_METRICS ' + json.dumps({'samples': 4, 'seconds': 1.0}))\n"
    own = "print('own sitecustomize ran')\n"
    doc = {"name": "own-site", "run": "python job.py", "env": {"PYTHONPATH": "site"}, "metrics": ["json"]}
    spec = write_spec(tmp_path, doc, {"job.py": job})
    (tmp_path / "job" / "site").mkdir()
    (tmp_path / "job" / "site" / "sitecustomize.py").write_text(own)
    assert run_payload(load_spec(spec).path, tmp_path / "b1") == 0
    result, run_dir = only_result(tmp_path / "b1")
    assert "own sitecustomize ran" in final_log_tail(run_dir)
    assert result["software"]["frameworks_from"] == "imported"
    # no Python process at all: the versions installed for the python3 on its PATH stand in
    doc = {"name": "no-python", "run": 'echo \'GPUBENCH_METRICS {"samples": 4, "seconds": 1}\'', "metrics": ["json"]}
    assert run_payload(write_spec(tmp_path, doc), tmp_path / "b2") == 0
    result, _ = only_result(tmp_path / "b2")
    assert result["software"]["frameworks_from"] == "installed" and result["software"]["job_python"]


def test_the_job_gets_the_runs_python_even_where_bashrc_would_put_another_first(tmp_path, monkeypatch):
    """Started over SSH (SSH_CLIENT set, a top-level shell), bash reads ~/.bashrc even to run
    one command; a .bashrc with `pyenv init` or `conda activate` would hand the job, and a
    `pip install` in its setup, the user's base Python instead of the run's."""
    home = tmp_path / "home"
    (home / "bin").mkdir(parents=True)
    (home / ".bashrc").write_text('export PATH="$HOME/bin:$PATH"\necho "bashrc was read"\n')
    other = home / "bin" / "python"  # the base environment's interpreter, as a .bashrc would put it first
    other.write_text('#!/bin/sh\necho \'GPUBENCH_METRICS {"samples": 1, "seconds": 1, "python": "bashrc"}\'\n')
    other.chmod(0o755)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("SSH_CLIENT", "127.0.0.1 50022 22")
    monkeypatch.delenv("SHLVL", raising=False)
    job = "import json, sys\nprint('GPUBENCH_METRICS ' + json.dumps({'samples': 4, 'seconds': 1.0, 'python': sys.executable}))\n"
    doc = {"name": "which-python", "setup": "command -v python", "run": "python job.py", "metrics": ["json"]}
    assert run_payload(write_spec(tmp_path, doc, {"job.py": job}), tmp_path / "bucket") == 0
    result, run_dir = only_result(tmp_path / "bucket")
    job_python = result["benchmark"]["workload"]["reported"]["json"]["python"]
    assert Path(job_python).is_relative_to(envs_root())  # the task's own environment, not gpubench's
    tail = final_log_tail(run_dir)
    assert "bashrc was read" not in tail and str(other) not in tail
    assert job_python in tail  # setup's `command -v python`


def test_import_record_reads_interpreters_and_first_versions_and_skips_a_cut_line(tmp_path):
    from payload.workloads.imports import read_imports

    record = tmp_path / "imports.jsonl"
    record.write_text(
        '{"python": "/usr/bin/python3", "python_version": "3.11.7", "pid": 1}\n'
        '{"module": "torch", "key": "torch", "version": "2.13.0+cpu", "origin": "/x/torch/__init__.py"}\n'
        '{"module": "torch", "key": "torch", "version": "9.9"}\n'
        '{"module": "keras", "key": "ker'
    )
    seen = read_imports(record)
    assert seen.pythons and seen.pythons[0]["python_version"] == "3.11.7"
    assert seen.frameworks == {"torch": "2.13.0+cpu"}
    assert not read_imports(tmp_path / "absent.jsonl").pythons


@pytest.mark.parametrize(
    "doc, field, fix",
    [
        ({"run": "x"}, "'name'", "required"),
        ({"name": "a"}, "'run'", "required"),
        ({"name": "a b", "run": "x"}, "'name'", "letters, digits"),
        ({"name": "a", "run": "x", "envs": {"A": 1}}, "'envs'", "SkyPilot's `envs` is `env` here"),
        ({"name": "a", "run": "x", "resources": {}}, "'resources'", "come from the stack's offering"),
        ({"name": "a", "run": "x", "gpus": -1}, "'gpus'", "integer from 0 to 16"),
        ({"name": "a", "run": "x", "metrics": ["csv"]}, "'metrics'", "json, mllog"),
        ({"name": "a", "run": "x", "env": ["A=1"]}, "'env'", "mapping NAME: value"),
        ({"name": "a", "run": "x", "env": {"GPUBENCH_STACK": "s"}}, "'env'", "set by gpubench itself"),
        ({"name": "a", "run": "x", "workdir": "nope"}, "'workdir'", "relative to the spec file"),
        ({"name": "a", "run": "x", "image": "two words"}, "'image'", "not an image reference"),
    ],
)
def test_spec_errors_name_the_field_and_the_fix(tmp_path, doc, field, fix):
    path = tmp_path / "w.yaml"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(WorkloadSpecError) as exc:
        load_spec(path)
    assert str(path) in str(exc.value) and field in str(exc.value) and fix in str(exc.value)


def test_bad_spec_is_a_usage_error_before_anything_runs(tmp_path, capsys):
    path = tmp_path / "w.yaml"
    path.write_text("name: a\nrun: x\ngpus: many\n")
    assert run_payload(path, tmp_path / "bucket") == 2
    err = capsys.readouterr().err
    assert "field 'gpus'" in err and "Traceback" not in err
    assert not (tmp_path / "bucket").exists()
    assert (
        payload_main(["run", "--workload", str(path), "--benchmark", "mnist-mlp", "--results", "x", "--stack", "s"])
        == 2
    )
    assert "drop one" in capsys.readouterr().err


# --- metrics from recorded output ---------------------------------------------------------------------------


def test_mllog_recorded_nvidia_resnet_run():
    reader = MetricsReader(("mllog",))
    noise = [
        "RESULT,IMAGE_CLASSIFICATION,,1772,root,2021-05-15 03:43:35 PM",
        "2021-05-15 16:12:51,033 Node[0] Epoch[34] Validation-accuracy=0.764960",
    ]
    for line in noise + NVIDIA_LOG.read_text().splitlines():
        reader.feed(line)
    assert reader.mllog_lines == 24 and reader.found() == ["mllog"] and reader.missing() is None
    assert reader.run_status == "success" and reader.train_samples == 1281167 and reader.global_batch_size == 3264
    s = reader.summary(wall_seconds=9999.0)
    assert s["train_seconds"] == 1724.542 and s["_time_source"] == "MLLOG run_start..run_stop"
    assert s["final_accuracy"] == 0.76066
    assert s["samples_per_second"] == 15982.399  # the logged `throughput`, not a derived figure
    assert s["epochs_completed"] == 1 and s["samples_trained"] == 1281167  # one epoch_stop in the excerpt
    assert reader.epoch_rows()[0] == {"epoch": 1, "elapsed": 80.161, "val_acc": None}


def test_mllog_prefixes_and_negatives():
    bert = (
        ' 0: :::MLLOG {"namespace": "", "time_ms": 1719843792116, "event_type": "POINT_IN_TIME", "key": '
        '"tracked_stats", "value": {"throughput": 14214.65962521748}, "metadata": {"file": '
        '"/workspace/bert/run_pretraining.py", "lineno": 1850, "epoch_num": 799502}}'
    )
    bracket = (
        '[0] :::MLLOG {"namespace": "", "time_ms": 0, "event_type": "POINT_IN_TIME", "key": "cache_clear", '
        '"value": true, "metadata": {"file": "clean.sh", "lineno": 5}}'
    )
    custom = (
        ':::MLLOG {"namespace": "", "time_ms": 1775725581676, "event_type": "POINT_IN_TIME", "key": "train_loss", '
        '"value": 11.846, "metadata": {"samples_count": 0, "lr": 3.125e-06}}'
    )
    assert parse_mllog_line(bert)["value"] == {"throughput": 14214.65962521748}
    assert parse_mllog_line(bracket)["key"] == "cache_clear"
    assert parse_mllog_line(custom)["metadata"] == {"samples_count": 0, "lr": 3.125e-06}
    assert parse_mllog_line(":::MLLOG {not json}") is None and parse_mllog_line("MLLOG run_start") is None
    reader = MetricsReader(("mllog",))
    reader.feed(bert)
    assert reader.throughput == 14214.65962521748 and reader.missing() and "run_start and run_stop" in reader.missing()
    aborted = [
        ':::MLLOG {"namespace": "", "time_ms": 1000, "event_type": "INTERVAL_START", "key": "run_start", "value": null, "metadata": {"file": "x.py", "lineno": 1}}',
        ':::MLLOG {"namespace": "", "time_ms": 4000, "event_type": "INTERVAL_END", "key": "run_stop", "value": null, "metadata": {"file": "x.py", "lineno": 1, "status": "aborted"}}',
    ]
    for line in aborted:
        reader.feed(line)
    assert reader.run_status == "aborted" and reader.summary(0)["train_seconds"] == 3.0


def test_json_line_convention():
    line = 'GPUBENCH_METRICS {"samples_per_second": 812.5, "samples": 50000, "accuracy": 0.91, "model": "r18"}'
    assert parse_json_line(line)["samples"] == 50000
    assert parse_json_line("[rank0] " + line)["accuracy"] == 0.91  # one launcher prefix word is fine
    assert (
        parse_json_line('echo GPUBENCH_METRICS {"a": 1} done') is None
        and parse_json_line("GPUBENCH_METRICS [1]") is None
    )
    reader = MetricsReader(("json",))
    reader.feed(line)
    reader.feed('GPUBENCH_METRICS {"accuracy": 0.95, "seconds": 61.5, "loss": "low"}')  # later keys win
    reader.feed("GPUBENCH_METRICS {broken")
    s = reader.summary(wall_seconds=70.0)
    assert s["samples_per_second"] == 812.5 and s["final_accuracy"] == 0.95 and s["train_seconds"] == 61.5
    assert s["final_loss"] is None and any("loss='low'" in w for w in reader.warnings)
    assert any("unreadable GPUBENCH_METRICS" in w for w in reader.warnings)
    assert reader.reported()["json"]["model"] == "r18"
    only_samples = MetricsReader(("json",))
    only_samples.feed('GPUBENCH_METRICS {"samples": 600}')
    assert only_samples.summary(wall_seconds=2.0)["samples_per_second"] == 300.0  # derived over the run's wall time


# --- real runs through the local runtime ---------------------------------------------------------------------
@pytest.mark.usefixtures("charts_described")  # about the figures: the charts are described, not drawn
def test_pytorch_example_runs_priced_collected_and_reported(tmp_path, capsys, monkeypatch):
    from analysis.cli import main as analysis_main

    spec = torch_spec(tmp_path, monkeypatch)
    bucket = tmp_path / "bucket"
    assert run_payload(spec, bucket) == 0
    result, run_dir = only_result(bucket)
    w = result["benchmark"]["workload"]
    assert result["status"] == "completed" and result["benchmark"]["kind"] == "workload"
    assert result["benchmark"]["name"] == load_spec(spec).benchmark_name
    assert w["sha256"] == load_spec(spec).sha256 == result["benchmark"]["params"]["workload_sha256"]
    assert w["metrics_found"] == ["json", "mllog"] and w["time_source"] == "GPUBENCH_METRICS seconds"
    m = result["metrics"]
    reported = w["reported"]["json"]
    assert m["samples_trained"] == 256 == reported["samples"] and m["epochs_completed"] == 2
    assert m["samples_per_second"] == reported["samples_per_second"] > 0
    assert 0 <= m["final_accuracy"] <= 1 and reported["torch"].startswith("2.13")
    assert result["benchmark"]["global_batch_size"] == 32
    assert w["reported"]["mllog"]["run_stop_ms"] > w["reported"]["mllog"]["run_start_ms"]
    events = [e["event"] for e in result["timeline"]]
    assert (
        events.index("setup_start")
        < events.index("setup_end")
        < events.index("train_start")
        < events.index("train_end")
    )
    assert result["price"]["hourly_usd"] == 0.40 and result["price"]["origin"] == "env"
    # what ran on this machine: the torch the job imported, no container, not the spec's image
    sw = result["software"]
    assert sw["frameworks_from"] == "imported" and sw["torch"] == reported["torch"]
    assert sw["tensorflow"] is None and sw["jax"] is None  # installed here, never imported by the job
    assert sw["job_python_version"] and sw["job_python"]
    assert sw["image"] is None and w["image"] is None and w["spec_image"] == load_spec(spec).image
    assert "image" not in result["benchmark"]["params"]
    tail_key = result["artifacts"]["log_tail"]  # the final tail: the newest version of log-tail.txt
    tails = [p.relative_to(bucket).as_posix() for p in run_dir.glob("log-tail*.txt")]
    assert tail_key == newest_versions(tails)[f"{run_dir.relative_to(bucket).as_posix()}/log-tail.txt"]
    tail = (bucket / tail_key).read_text()
    assert "GPUBENCH_METRICS" in tail
    assert [r.split(",")[0] for r in (run_dir / "epochs.csv").read_text().splitlines()] == ["epoch", "1", "2"]

    out = tmp_path / "report"
    capsys.readouterr()
    assert analysis_main(["collect", "--results", str(bucket), "--table", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["new"] == 1
    assert (
        analysis_main(["report", "--table", str(out), "--out", str(out), "--base", "local/this-machine", "--json"]) == 0
    )
    report = json.loads(capsys.readouterr().out)
    rows = [r for r in report["summary"] if r["benchmark"] == result["benchmark"]["name"]]
    assert len(rows) == 1 and rows[0]["offering_id"] == "local/this-machine"
    # local/this-machine bills per started second (infra/catalog/data/billing.toml [[local]])
    assert rows[0]["train_cost_usd"] == pytest.approx(math.ceil(m["train_seconds"]) / 3600 * 0.40, rel=1e-6)
    assert (out / "index.html").read_text().count(result["benchmark"]["name"]) >= 1


def test_failing_workload_is_a_failed_result_with_its_log_tail(tmp_path):
    script = "import sys\nfor i in range(300):\n    print('step', i)\nprint('CUDA out of memory', file=sys.stderr)\nsys.exit(3)\n"
    spec = write_spec(tmp_path, {"name": "oom", "run": "python fail.py", "metrics": ["json"]}, {"fail.py": script})
    assert run_payload(spec, tmp_path / "bucket") == 1
    result, run_dir = only_result(tmp_path / "bucket")
    assert result["status"] == "failed" and result["exit_code"] == 1
    assert result["error"].startswith("`run` exited with status 3") and result["error"].endswith("CUDA out of memory")
    assert result["benchmark"]["workload"]["run_exit_code"] == 3
    assert result["metrics"]["samples_per_second"] is None and result["metrics"]["train_seconds"] >= 0
    tail = (tmp_path / "bucket" / result["artifacts"]["log_tail"]).read_text().splitlines()
    assert len(tail) == 200 and tail[-1] == "CUDA out of memory" and tail[0] == "step 101"
    assert result["benchmark"]["workload"]["log_tail_lines"] == 200


def test_setup_failure_and_missing_metrics_fail(tmp_path):
    spec = write_spec(tmp_path, {"name": "nosetup", "setup": "echo installing; exit 7", "run": "echo never"})
    assert run_payload(spec, tmp_path / "b1") == 1
    result, _ = only_result(tmp_path / "b1")
    assert result["error"].startswith("`setup` exited with status 7") and "installing" in result["error"]
    assert "never" not in (tmp_path / "b1").joinpath(result["artifacts"]["log_tail"]).read_text()
    spec = write_spec(tmp_path, {"name": "quiet", "run": "echo trained, said nothing", "metrics": ["json", "mllog"]})
    assert run_payload(spec, tmp_path / "b2") == 1
    result, _ = only_result(tmp_path / "b2")
    assert result["error"].startswith("missing metric:") and "GPUBENCH_METRICS" in result["error"]
    assert "trained, said nothing" in result["error"]


def test_workload_stopped_at_the_deadline_is_a_timeout(tmp_path):
    spec = write_spec(tmp_path, {"name": "slow", "run": "echo started; sleep 120", "metrics": ["json"]})
    # the watcher stops runs 300 s before the deadline: this one is 2 s past that margin
    deadline = (dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=302)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert run_payload(spec, tmp_path / "bucket", "--deadline", deadline, "--watch-interval", "0.2") == 1
    result, _ = only_result(tmp_path / "bucket")
    assert result["status"] == "failed" and result["error"].startswith("timeout: `run` was stopped at the run deadline")
    assert result["benchmark"]["workload"]["run_seconds"] < 60


def test_expect_gpu_without_a_gpu_fails_before_the_job_starts(tmp_path):
    spec = write_spec(tmp_path, {"name": "gpu-job", "run": "touch ran", "metrics": ["json"]})
    assert run_payload(spec, tmp_path / "bucket", "--expect-gpu") == 3  # this machine has no NVIDIA GPU
    result, _ = only_result(tmp_path / "bucket")
    assert result["status"] == "failed" and result["error"].startswith("--expect-gpu: no GPU visible")
    assert not (tmp_path / "job" / "ran").exists()


def test_keras_example_runs_as_a_workload(tmp_path, monkeypatch):
    monkeypatch.setenv(INHERIT_ENV, "1")  # the job's environment sees this one's TensorFlow
    wd = tmp_path / "keras"
    shutil.copytree(REPO / "examples" / "keras-mnist", wd)
    doc = yaml.safe_load((wd / "workload.yaml").read_text())
    doc["env"].update(EPOCHS="1", SAMPLES="512", OMP_NUM_THREADS="1", TF_CPP_MIN_LOG_LEVEL="2")
    (wd / "workload.yaml").write_text(yaml.safe_dump(doc))
    assert run_payload(wd / "workload.yaml", tmp_path / "bucket") == 0
    result, _ = only_result(tmp_path / "bucket")
    reported = result["benchmark"]["workload"]["reported"]["json"]
    assert reported["data"] == "synthetic"  # offline by default: the spec's own DATA
    assert reported["backend"] == "tensorflow" and result["metrics"]["samples_trained"] == 512
    assert result["software"]["frameworks_from"] == "imported" and result["software"]["tensorflow"]
    assert result["metrics"]["samples_per_second"] > 0 and 0 <= result["metrics"]["final_accuracy"] <= 1
    assert result["software"]["torch"] is None  # installed here, not imported by a tensorflow job


def test_keras_example_without_a_network_says_so_in_one_line(tmp_path):
    """DATA=download with no way out (a proxy on a closed port): a message naming the offline fix, no traceback."""
    require_module("keras")
    proxy = closed_port_url()
    env = {
        **os.environ,
        "DATA": "download",
        "EPOCHS": "1",
        "KERAS_HOME": str(tmp_path / "keras"),
        "HTTPS_PROXY": proxy,
        "https_proxy": proxy,
        "TF_CPP_MIN_LOG_LEVEL": "2",
    }
    train = REPO / "examples" / "keras-mnist" / "train.py"
    done = subprocess.run([sys.executable, str(train)], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1
    assert "DATA=download could not fetch MNIST" in done.stderr and "DATA=synthetic" in done.stderr
    assert "Traceback" not in done.stderr


# --- MLPerf train_samples / eval_samples in result.metrics -------------------------------------------------


def test_mllog_train_and_eval_samples_reach_the_summary():
    reader = MetricsReader(("mllog",))
    for line in NVIDIA_LOG.read_text().splitlines():
        reader.feed(line)
    s = reader.summary(wall_seconds=1.0)
    assert s["train_samples"] == 1281167 and s["eval_samples"] == 50000
    assert reader.reported()["mllog"]["eval_samples"] == 50000
    assert MetricsReader(("json",)).summary(1.0)["train_samples"] is None  # not logged: null, never invented


def test_mllog_train_samples_line_lands_in_result_metrics(tmp_path):
    def line(key, value=None, **meta):
        rec = {"namespace": "", "time_ms": 1000, "event_type": "POINT_IN_TIME", "key": key, "value": value}
        return "echo '0: :::MLLOG " + json.dumps({**rec, "metadata": meta}) + "'"

    run = [line("run_start"), line("train_samples", 4096), line("eval_samples", 512)]
    run += [line("epoch_start", epoch_num=1), line("epoch_stop", epoch_num=1), line("run_stop", status="success")]
    spec = write_spec(tmp_path, {"name": "mllog-job", "run": run, "metrics": ["mllog"]})
    assert run_payload(spec, tmp_path / "bucket") == 0
    result, _ = only_result(tmp_path / "bucket")
    m = result["metrics"]
    assert result["status"] == "completed" and m["train_samples"] == 4096 and m["eval_samples"] == 512
    assert m["samples_trained"] == 4096 and "probe" not in result
