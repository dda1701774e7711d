"""The docker runtime end to end, on a host whose `docker`, `nvidia-smi` and `nvidia-ctk` are stand-ins.

The fake `docker run` maps the bind mounts back to host paths and runs the real payload with the
arguments the runtime built, so the command line (image, --gpus, --user, mounts, payload options)
is exercised for real; only the container isolation is missing. With the public image the runtime
starts `bash -c "pip install <bundle> && exec python3 -m payload run ..."`: the fake records that
command and runs the payload part (this checkout stands in for the installed bundle).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from infra.cli import main

REPO = Path(__file__).resolve().parents[2]

FAKE_DOCKER = r"""#!{python}
import json, os, shlex, sys
args = sys.argv[1:]
if args[:1] == ["info"]:
    print(json.dumps({{name: {{}} for name in {runtimes!r}}})); sys.exit(0)
if args[:2] == ["image", "inspect"] or args[:1] in (["pull"], ["stop"]):
    sys.exit(0)
assert args[0] == "run", args
mounts, env, flags, i = {{}}, {{}}, {{}}, 1
while args[i].startswith("-"):
    if args[i] == "--rm":
        i += 1; continue
    flag, value = args[i], args[i + 1]
    if flag == "-v":
        src, dst = value.split(":")[:2]; mounts[dst] = src
    elif flag == "-e":
        k, v = value.split("=", 1); env[k] = v
    else:
        flags[flag] = value
    i += 2
image, payload = args[i], args[i + 1:]
command = None
if flags.get("--entrypoint") == "/bin/bash" and payload[:1] == ["-c"]:
    command = payload[1]
    payload = shlex.split(command.split("exec python3 -m payload run ", 1)[1])
def host_path(a):
    for dst, src in mounts.items():
        for prefix in ("file://" + dst, dst):
            if a.startswith(prefix):
                return a.replace(dst, src, 1)
    return a
payload = [host_path(a) for a in payload]
with open(os.path.join(mounts["/gpubench/results"], "..", "docker-run.json"), "w") as f:
    json.dump({{"image": image, "flags": flags, "env": env, "mounts": mounts, "payload": payload,
               "command": command}}, f)
os.environ["PYTHONPATH"] = {repo!r}
os.execv(sys.executable, [sys.executable, "-m", "payload", "run", *payload])
"""


def write_tools(bin_dir: Path, gpu: bool = True) -> Path:
    bin_dir.mkdir(parents=True, exist_ok=True)
    runtimes = ["nvidia", "runc"] if gpu else ["runc"]
    tools = {"docker": FAKE_DOCKER.format(python=sys.executable, repo=str(REPO), runtimes=runtimes)}
    if gpu:
        tools["nvidia-smi"] = "#!/bin/sh\necho 'NVIDIA GeForce GTX 1080, 8192 MiB, 470.82.01'\n"
        tools["nvidia-ctk"] = "#!/bin/sh\necho 'NVIDIA Container Toolkit CLI version 1.14.3'\n"
    for name, text in tools.items():
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    return bin_dir


def test_docker_runtime_runs_the_image_with_gpus_and_a_mounted_bucket(ssh_stack, sshd_with_path, tmp_path, capsys):
    server = sshd_with_path(write_tools(tmp_path / "bin"))
    stack, stacks_dir = ssh_stack(
        runtime="docker",
        port=server.port,
        identityFile=server.client_key,
        remotePython=None,
        offering="softlayer/bm-4xk80",
        expectGpu=False,
        gpus=None,
    )
    code = main(["ssh", stack, "--stacks-dir", str(stacks_dir), "--json", "--poll", "0.2"])
    out, err = capsys.readouterr()
    report = json.loads(out)
    assert code == 0, err
    checks = {c["name"]: c for c in report["checks"]}
    assert (
        checks["gpu"]["found"] == 1
        and "1 x NVIDIA GeForce GTX 1080 (8192 MiB), driver 470.82.01" in checks["gpu"]["detail"]
    )
    # fewer GPUs than the catalog row: a warning, not a blocker
    assert (
        not checks["gpu"]["ok"]
        and not checks["gpu"]["required"]
        and "catalog row has 4 x K80" in checks["gpu"]["detail"]
    )
    assert checks["docker"]["ok"] and checks["nvidia-container-toolkit"]["ok"]
    (run_dir,) = (tmp_path / "remote" / "runs" / stack).glob("2*")
    docker = json.loads((run_dir / "docker-run.json").read_text())
    # K80: the legacy public TensorFlow image, the bundle installed with the payload-legacy extra
    assert docker["image"] == "tensorflow/tensorflow:2.11.0-gpu"
    # installed as the cloud hosts install it: the extra's requirements, the sources on sys.path (Python 3.8)
    assert "PIP_USER=1 bash /opt/gpubench/gpubench/infra/install-payload.sh" in docker["command"]
    assert "/opt/gpubench/gpubench requirements payload-legacy" in docker["command"]
    assert docker["mounts"]["/opt/gpubench"].startswith(str(tmp_path / "remote" / "src"))
    assert docker["flags"]["--gpus"] == "all" and docker["flags"]["--user"].replace(":", "").isdigit()
    assert docker["mounts"]["/gpubench/results"] == str(run_dir / "results")
    (result,) = (tmp_path / "bucket" / "runs" / stack).glob("*/result.json")
    assert json.loads(result.read_text())["status"] == "completed"


def test_docker_host_without_the_nvidia_toolkit_is_refused(ssh_stack, sshd_with_path, tmp_path, capsys):
    server = sshd_with_path(write_tools(tmp_path / "bin", gpu=False))
    stack, stacks_dir = ssh_stack(
        runtime="docker", port=server.port, identityFile=server.client_key, remotePython=None, expectGpu=True
    )
    code = main(["ssh", stack, "--stacks-dir", str(stacks_dir), "--json", "--check"])
    out, err = capsys.readouterr()
    report = json.loads(out)
    assert code == 3 and report["status"] == "host"
    assert "gpu, nvidia-container-toolkit" in report["message"] and "nvidia-ctk runtime configure" in report["message"]
    assert "MISSING nvidia-container-toolkit" in err
