"""A dry boot of the rendered user-data: every script of a stack runs, in cloud-init's and
systemd's order, on a fake host whose tools are recording stand-ins (docker, apt-get, nvidia-ctk,
nvidia-smi, systemctl, shutdown, the clouds' CLIs) and whose metadata server and cloud APIs are one
loopback HTTP server (GCE_METADATA_HOST, AWS_EC2_METADATA_SERVICE_ENDPOINT; a curl stand-in sends
the Google API hosts there). No Docker, no network, no sleeping.

One boot per host family and backend: AWS Deep Learning AMI, GCP Deep Learning VM, the legacy K80
image on each cloud. Each checks that the code fetch outlasts a grant still propagating (403, then
200), that a host without Docker or the NVIDIA toolkit gets them, that the container starts with
every GPU, that the machine ends itself the cloud's way (a GCE VM deletes itself, an EC2 instance
powers off into termination), and that a failure leaves a named event in the bucket first.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlparse

import pytest
import yaml

from infra import cloud_init
from infra.bundle import build_bundle
from infra.images import public_image

HOST_PATHS = {  # where the rendered files go on the fake host
    cloud_init.LIB_DIR: "lib",
    cloud_init.STATE_DIR: "state",
    "/etc/gpubench": "etc",
    "/etc/systemd/system": "systemd",
}
GCE = {"name": "gpubench-vm-1", "zone": "projects/123/zones/us-central1-a", "project": "my-proj", "id": "4242"}
AWS_INSTANCE = "i-0abc123"
TOKEN = "tok-123"


class FakeCloud(BaseHTTPRequestHandler):
    """The metadata servers, the Compute API and the GCS upload API, on loopback; `calls` records."""

    calls: list  # set per server
    bucket: Path

    def log_message(self, *args):  # quiet
        pass

    def _send(self, code: int, body: str = "") -> None:
        data = body.encode()
        self.send_response(code)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _bearer(self) -> bool:
        return self.headers.get("Authorization") == f"Bearer {TOKEN}"

    def do_PUT(self):
        self.calls.append(("PUT", self.path))
        if self.path == "/latest/api/token" and self.headers.get("X-aws-ec2-metadata-token-ttl-seconds"):
            return self._send(200, "imds-token")
        self._send(404)

    def do_GET(self):
        self.calls.append(("GET", self.path))
        if self.path == "/latest/meta-data/instance-id":
            ok = self.headers.get("X-aws-ec2-metadata-token") == "imds-token"
            return self._send(200, AWS_INSTANCE) if ok else self._send(401)
        if self.path.startswith("/computeMetadata/v1/"):
            if self.headers.get("Metadata-Flavor") != "Google":
                return self._send(403)
            answers = {
                "instance/name": GCE["name"],
                "instance/zone": GCE["zone"],
                "instance/id": GCE["id"],
                "project/project-id": GCE["project"],
                "instance/service-accounts/default/token": json.dumps(
                    {"access_token": TOKEN, "expires_in": 3599, "token_type": "Bearer"}
                ),
            }
            key = self.path.removeprefix("/computeMetadata/v1/")
            return self._send(200, answers[key]) if key in answers else self._send(404)
        self._send(404)

    def do_DELETE(self):
        self.calls.append(("DELETE", self.path))
        ok = self.path.startswith("/compute-api/compute/v1/projects/") and self._bearer()
        self._send(200, '{"kind": "compute#operation", "status": "RUNNING"}') if ok else self._send(403)

    def do_POST(self):
        url = urlparse(self.path)
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.calls.append(("POST", self.path))
        bucket = url.path.removeprefix("/storage-api/upload/storage/v1/b/").split("/")[0]
        query = parse_qs(url.query)
        if not self._bearer() or query.get("ifGenerationMatch") != ["0"]:
            return self._send(403)
        target = self.bucket / bucket / unquote(query["name"][0])
        if target.exists():
            return self._send(412)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(body)
        self._send(200, "{}")


@pytest.fixture
def cloud(tmp_path):
    calls: list = []
    handler = type("Handler", (FakeCloud,), {"calls": calls, "bucket": tmp_path / "bucket"})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1], calls
    server.shutdown()
    server.server_close()


STUBS = {
    # docker: `info` shows the nvidia runtime once nvidia-ctk configured it; every call is logged
    "docker": """#!/bin/bash
echo "docker $*" >> {root}/calls.log
if [ "$1" = info ]; then
  if [ -e {root}/nvidia-configured ]; then echo '{{"nvidia":{{}},"runc":{{}}}}'; else echo '{{"runc":{{}}}}'; fi
  exit 0
fi
if [ "$1" = run ]; then printf '%s\\n' "$@" > {root}/docker-run-args; exit "$(cat {root}/container-exit 2>/dev/null || echo 0)"; fi
exit 0
""",
    "nvidia-ctk": """#!/bin/bash
echo "nvidia-ctk $*" >> {root}/calls.log
[ "$*" = "runtime configure --runtime=docker" ] && touch {root}/nvidia-configured
""",
    # apt-get install puts the stand-ins of what it installs on PATH (unless told to fail)
    "apt-get": """#!/bin/bash
echo "apt-get $*" >> {root}/calls.log
[ -e {root}/apt-fails ] && exit 100
for a in "$@"; do
  case "$a" in
    docker.io) cp {root}/available/docker {root}/bin/docker ;;
    nvidia-container-toolkit) cp {root}/available/nvidia-ctk {root}/bin/nvidia-ctk ;;
  esac
done
""",
    "apt-cache": "#!/bin/bash\nexit 0\n",
    "nvidia-smi": "#!/bin/bash\necho 'GPU 0: NVIDIA (UUID: GPU-1)'\n",
    "systemctl": '#!/bin/bash\necho "systemctl $*" >> {root}/calls.log\n',
    "systemd-run": '#!/bin/bash\necho "systemd-run $*" >> {root}/calls.log\n',
    "shutdown": '#!/bin/bash\necho "shutdown $*" >> {root}/calls.log\n',
    "sleep": '#!/bin/bash\necho "sleep $*" >> {root}/calls.log\n',
    # the clouds' copy commands: a 403 while `fetch-denials` says so, then the object from the bucket
    "aws": """#!/bin/bash
echo "aws $*" >> {root}/calls.log
if [ "$1 $2" = "s3 cp" ]; then
  n="$(cat {root}/fetch-denials 2>/dev/null || echo 0)"
  if [ "$n" -gt 0 ]; then echo $((n - 1)) > {root}/fetch-denials; echo "fatal error: An error occurred (403) when calling the HeadObject operation: Forbidden" >&2; exit 1; fi
  src="${{4#s3://}}"; cp "{root}/bucket/$src" "$5"; exit $?
fi
if [ "$1 $2" = "s3api put-object" ]; then
  while [ $# -gt 0 ]; do
    case "$1" in --bucket) b="$2"; shift ;; --key) k="$2"; shift ;; --body) f="$2"; shift ;; --if-none-match) inm="$2"; shift ;; esac
    shift
  done
  [ "$inm" = '*' ] || exit 1
  mkdir -p "$(dirname "{root}/bucket/$b/$k")"; cp "$f" "{root}/bucket/$b/$k"; exit $?
fi
exit 2
""",
    "gcloud": """#!/bin/bash
echo "gcloud $*" >> {root}/calls.log
n="$(cat {root}/fetch-denials 2>/dev/null || echo 0)"
if [ "$n" -gt 0 ]; then echo $((n - 1)) > {root}/fetch-denials; echo "ERROR: HTTPError 403: does not have storage.objects.get access" >&2; exit 1; fi
src="${{4#gs://}}"; cp "{root}/bucket/$src" "$5"
""",
    # curl: Google's API hosts go to the loopback server; nothing else leaves the machine
    "curl": """#!/bin/bash
args=()
for a in "$@"; do
  a="${{a//https:\\/\\/compute.googleapis.com/http://127.0.0.1:{port}/compute-api}}"
  a="${{a//https:\\/\\/storage.googleapis.com/http://127.0.0.1:{port}/storage-api}}"
  case "$a" in https://*) echo "curl stand-in: no network ($a)" >&2; exit 7 ;; esac
  args+=("$a")
done
exec /usr/bin/curl "${{args[@]}}"
""",
}


def _host(root: Path, port: int, user_data: str, have: set[str]) -> dict:
    """Lay the rendered files and the stand-ins out under `root`; `have`: host tools present at boot."""
    bin_dir, available = root / "bin", root / "available"
    for d in (bin_dir, available, root / "bucket", *(root / v for v in HOST_PATHS.values())):
        d.mkdir(parents=True, exist_ok=True)
    for name, text in STUBS.items():
        target = available / name if name in ("docker", "nvidia-ctk") else bin_dir / name
        target.write_text(text.format(root=root, port=port))
        target.chmod(0o755)
        if name in have:
            (bin_dir / name).write_text(target.read_text())
            (bin_dir / name).chmod(0o755)
    doc = yaml.safe_load(_on_host(user_data, root))
    for f in doc["write_files"]:
        path = Path(f["path"])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f["content"])
        path.chmod(int(f["permissions"], 8))
    return doc


def _on_host(text: str, root: Path) -> str:
    for path, sub in HOST_PATHS.items():
        text = text.replace(path, f"{root}/{sub}")
    return text


def _run(argv: list[str], env: dict, extra: dict | None = None) -> subprocess.CompletedProcess:
    argv = ["docker" if a == "/usr/bin/docker" else a for a in argv]
    return subprocess.run(argv, env={**env, **(extra or {})}, capture_output=True, text=True, timeout=60)


def _boot(root: Path, doc: dict, env: dict) -> str:
    """cloud-init's runcmd, then the payload unit as systemd runs it; returns the unit's result."""
    for argv in doc["runcmd"]:
        assert _run(argv, env).returncode == 0, argv
    unit = (root / "systemd" / cloud_init.UNIT).read_text()
    lines = [ln.split("=", 1) for ln in unit.splitlines() if ln.startswith("Exec")]
    result, status = "success", 0
    for key, command in lines:
        if key not in ("ExecStartPre", "ExecStart"):
            continue
        optional = command.startswith("-")
        proc = _run(shlex.split(command.lstrip("-")), env)
        if proc.returncode != 0 and not optional:
            result, status = "exit-code", proc.returncode
            break
    for key, command in lines:
        if key == "ExecStopPost":
            _run(shlex.split(command), env, {"SERVICE_RESULT": result, "EXIT_STATUS": str(status)})
    if result != "success":  # OnFailure=: the second path, which must not end the run twice
        _run([f"{root}/lib/poweroff.sh"], env)
    return result


def _env(root: Path, port: int) -> dict:
    return {
        "PATH": f"{root}/bin:/usr/bin:/bin",
        "HOME": str(root),
        "GCE_METADATA_HOST": f"127.0.0.1:{port}",
        "AWS_EC2_METADATA_SERVICE_ENDPOINT": f"http://127.0.0.1:{port}/",
    }


def _fetches(log: str, tool: str) -> int:
    return sum(1 for line in log.splitlines() if line.startswith(f"{tool} ") and " cp " in line)


def _events(path: Path) -> list[str]:
    return [json.loads(line)["event"] for line in path.read_text().splitlines()]


def _prepare(rendered, stack: str, tmp_path: Path, port: int, have: set[str]):
    user_data = rendered[stack].user_data
    root = tmp_path  # the fake cloud keeps its bucket in tmp_path / "bucket" too
    doc = _host(root, port, user_data, have)
    code_env = dict(line.split("=", 1) for line in (root / "etc" / "code.env").read_text().splitlines())
    bundle = build_bundle()
    assert code_env["CODE_SHA256"] == bundle.sha256
    target = root / "bucket" / code_env["CODE_URL"].split("://", 1)[1]
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(bundle.data)  # what `pulumi up` uploads
    env = dict(line.split("=", 1) for line in (root / "etc" / "payload.env").read_text().splitlines())
    return root, doc, env


FAMILIES = {  # stack -> (the cloud's copy command, the generation's image)
    "aws-g4dn-1x": "aws",  # Deep Learning Base OSS Nvidia Driver AMI, T4
    "aws-p2-1x": "aws",  # legacy K80 AMI
    "gcp-l4-1x": "gcloud",  # Deep Learning VM, L4
    "gcp-k80-1x": "gcloud",  # legacy K80 Deep Learning VM
}


@pytest.mark.parametrize("stack", sorted(FAMILIES))
def test_a_boot_fetches_through_a_403_installs_docker_runs_the_gpus_and_ends_the_machine(
    rendered, catalog, cloud, tmp_path, stack
):
    port, calls = cloud
    root, doc, payload_env = _prepare(rendered, stack, tmp_path, port, have={FAMILIES[stack]})
    (root / "fetch-denials").write_text("2")  # the read grant propagates after two tries
    assert _boot(root, doc, _env(root, port)) == "success"

    log = (root / "calls.log").read_text()
    assert _fetches(log, FAMILIES[stack]) == 3 and (root / "fetch-denials").read_text().strip() == "0"
    assert "apt-get -q -y -o DPkg::Lock::Timeout=300 install docker.io nvidia-container-toolkit" in log
    assert "nvidia-ctk runtime configure --runtime=docker" in log and "systemctl restart docker" in log
    args = (root / "docker-run-args").read_text().splitlines()
    offering, _ = catalog.cloud_stacks()[stack]
    assert public_image(offering.image_generation).image in args
    assert args[args.index("--gpus") + 1] == "all" and "--network" in args
    events = _events(root / "state" / "events.jsonl")
    assert ["host_install", "host_ready", "container_start", "container_exit", "shutdown_requested"] == [
        e
        for e in events
        if e in ("host_install", "host_ready", "container_start", "container_exit", "shutdown_requested")
    ]
    assert not (root / "bucket" / payload_env["GPUBENCH_RESULTS"].split("://", 1)[1] / "runs").exists()
    if stack.startswith("gcp-"):
        zone = GCE["zone"].rsplit("/", 1)[1]
        delete = f"/compute-api/compute/v1/projects/{GCE['project']}/zones/{zone}/instances/{GCE['name']}"
        assert ("DELETE", delete) in calls and "self_delete_requested" in events
        # it waits for the deletion, and powers off only behind it
        assert log.index("sleep 300") < log.rindex("systemctl --no-block poweroff")
    else:
        assert not any(method == "DELETE" for method, _ in calls)
        assert log.rstrip().endswith("systemctl --no-block poweroff")  # shutdown behaviour: terminate


@pytest.mark.parametrize("stack", sorted(FAMILIES))
def test_a_fetch_that_never_gets_through_leaves_its_event_in_the_bucket(rendered, cloud, tmp_path, stack):
    port, calls = cloud
    root, doc, payload_env = _prepare(rendered, stack, tmp_path, port, have={FAMILIES[stack], "docker", "nvidia-ctk"})
    (root / "nvidia-configured").touch()
    (root / "fetch-denials").write_text("1000")
    assert _boot(root, doc, _env(root, port)) == "exit-code"

    log = (root / "calls.log").read_text()
    assert _fetches(log, FAMILIES[stack]) == cloud_init.FETCH_TRIES  # bounded
    assert not (root / "docker-run-args").exists()
    results = root / "bucket" / payload_env["GPUBENCH_RESULTS"].split("://", 1)[1]
    uploaded = list(results.glob(f"runs/{payload_env['GPUBENCH_STACK']}/*/events.jsonl"))
    assert len(uploaded) == 1, uploaded
    run_id = uploaded[0].parent.name
    instance = GCE["id"] if stack.startswith("gcp-") else AWS_INSTANCE
    assert run_id.startswith(payload_env["GPUBENCH_LAUNCH_ID"] + "-") and run_id.endswith(f"-{instance}-boot")
    assert "code_fetch_failed" in _events(uploaded[0])
    # ended once, though both systemd paths (ExecStopPost, OnFailure) ran
    assert _events(root / "state" / "events.jsonl").count("shutdown_requested") == 1
    assert ("DELETE" in {m for m, _ in calls}) == stack.startswith("gcp-")


def test_a_host_that_cannot_get_docker_says_so_in_the_bucket(rendered, cloud, tmp_path):
    port, calls = cloud
    root, doc, payload_env = _prepare(rendered, "gcp-l4-1x", tmp_path, port, have={"gcloud"})
    (root / "apt-fails").touch()
    assert _boot(root, doc, _env(root, port)) == "exit-code"
    results = root / "bucket" / payload_env["GPUBENCH_RESULTS"].split("://", 1)[1]
    (uploaded,) = results.glob("runs/*/*/events.jsonl")
    lines = [json.loads(line) for line in uploaded.read_text().splitlines()]
    failed = [e for e in lines if e["event"] == "host_prepare_failed"]
    assert failed and "docker.io nvidia-container-toolkit" in failed[0]["detail"]
    assert not (root / "docker-run-args").exists() and "gcloud" not in (root / "calls.log").read_text()


def test_the_in_guest_deadline_ends_the_run_the_clouds_way_before_halting(rendered):
    doc = yaml.safe_load(rendered["gcp-l4-1x"].user_data)
    deadline = next(f["content"] for f in doc["write_files"] if f["path"].endswith("/deadline.sh"))
    end_run = deadline.index(f"{cloud_init.LIB_DIR}/end-run.sh")
    assert "systemd-run" in deadline[:end_run] and deadline.index("shutdown -h") > end_run
