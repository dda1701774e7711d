"""Loopback emulators the tests drive: real protocols, no cloud account.

- ``ServerProcess`` / ``start_moto_server`` / ``start_gcs_emulator``: the
  moto S3 server and gcp-storage-emulator as subprocesses on a free
  127.0.0.1 port, stoppable and restartable on the same port (to emulate a
  bucket outage).
- ``MetadataServer``: a tiny in-process HTTP server speaking the AWS IMDSv2
  (token PUT, then GETs with the token header) and GCE metadata
  (``Metadata-Flavor: Google``) protocols, with switches for a spot
  interruption notice and GCE preemption.
- ``find_tool``: locate a console script next to the running interpreter or
  on PATH; under ``CI=true`` a missing tool is a failure, never a skip.

The pytest fixtures wrapping these live in ``tests/conftest.py``.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

__all__ = [
    "MetadataServer",
    "ServerProcess",
    "find_tool",
    "free_port",
    "in_ci",
    "missing_tool",
    "start_gcs_emulator",
    "start_moto_server",
    "wait_for_port",
]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def closed_port_url() -> str:
    """An http URL on loopback where nothing listens (connection refused)."""
    return f"http://127.0.0.1:{free_port()}"


def wait_for_port(port: int, timeout: float = 30.0, proc: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"server exited early with code {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise TimeoutError(f"nothing listening on 127.0.0.1:{port} after {timeout}s")


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def missing_tool(msg: str):
    """A tool the test needs is absent: skip it locally, FAIL under CI=true
    (CI installs every tool, so absence there is a broken install step)."""
    if in_ci():
        pytest.fail(msg + "; CI=true so a missing tool is a failure")
    pytest.skip(msg)


def find_tool(name: str, install: str = "pip install -e '.[dev]'") -> str:
    """Path of ``name``: a console script next to the running interpreter, or
    any program on PATH; missing_tool() when absent."""
    local = Path(sys.executable).parent / name
    path = str(local) if local.exists() else shutil.which(name)
    if path:
        return path
    missing_tool(f"{name} is not installed ({install})")


def require_module(name: str, install: str = "pip install -e '.[dev]'"):
    """The module `name`, imported; missing_tool() when absent (a failure under CI=true)."""
    import importlib

    try:
        return importlib.import_module(name)
    except ImportError:
        missing_tool(f"the {name} module is not installed ({install})")


class ServerProcess:
    """A subprocess server on a fixed loopback port; ``stop()``/``start()`` to emulate outages."""

    def __init__(self, name: str, argv_for_port, port: int | None = None, env: dict | None = None):
        self.name, self._argv_for_port = name, argv_for_port
        self.port = port or free_port()
        self.env = env
        self.proc: subprocess.Popen | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> ServerProcess:
        env = {**os.environ, **(self.env or {})}
        self.proc = subprocess.Popen(
            self._argv_for_port(self.port), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            wait_for_port(self.port, timeout, self.proc)
        except Exception:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self.proc = None
        # the port must really be free before a restart reuses it
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    time.sleep(0.1)
            except OSError:
                return

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def start_moto_server(port: int | None = None) -> ServerProcess:
    """moto's S3 (and EC2/IAM...) server on loopback. Point boto3 at ``.endpoint``."""
    exe = find_tool("moto_server")
    return ServerProcess("moto_server", lambda p: [exe, "-H", "127.0.0.1", "-p", str(p)], port).start()


def start_gcs_emulator(port: int | None = None) -> ServerProcess:
    """gcp-storage-emulator, in memory. Set ``STORAGE_EMULATOR_HOST=.endpoint``."""
    exe = find_tool("gcp-storage-emulator")
    return ServerProcess(
        "gcp-storage-emulator",
        lambda p: [exe, "start", "--host", "127.0.0.1", "--port", str(p), "--in-memory", "--quiet"],
        port,
    ).start()


def create_s3_bucket(endpoint: str, bucket: str) -> None:
    import boto3

    boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    ).create_bucket(Bucket=bucket)


def create_gcs_bucket(endpoint: str, bucket: str, project: str = "gpubench-test") -> None:
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import storage

    old = os.environ.get("STORAGE_EMULATOR_HOST")
    os.environ["STORAGE_EMULATOR_HOST"] = endpoint
    try:
        storage.Client(project=project, credentials=AnonymousCredentials()).create_bucket(bucket)
    finally:
        if old is None:
            os.environ.pop("STORAGE_EMULATOR_HOST", None)
        else:
            os.environ["STORAGE_EMULATOR_HOST"] = old


class MetadataServer:
    """AWS IMDSv2 + GCE metadata on one loopback port.

    Set ``spot_action`` (e.g. ``{"action": "terminate", "time": "..."}``) to
    announce an AWS spot interruption, ``preempted = True`` for GCE. Every
    request is appended to ``requests`` as ``(method, path, headers)`` with
    lower-cased header names.
    Env for the payload: ``aws_env()`` / ``gce_env()``.
    """

    TOKEN = "test-imds-token"

    def __init__(
        self,
        instance_id="i-0123456789abcdef0",
        zone="us-east-1a",
        instance_type="p3.2xlarge",
        gce_id="4242424242",
        gce_zone="us-central1-a",
        gce_machine_type="n1-standard-8",
    ):
        self.instance_id, self.zone, self.instance_type = instance_id, zone, instance_type
        self.gce_id, self.gce_zone, self.gce_machine_type = gce_id, gce_zone, gce_machine_type
        self.spot_action: dict | None = None
        self.preempted = False
        self.requests: list[tuple[str, str, dict]] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def aws_env(self) -> dict:
        return {"AWS_EC2_METADATA_SERVICE_ENDPOINT": self.endpoint + "/"}

    def gce_env(self) -> dict:
        return {"GCE_METADATA_HOST": f"127.0.0.1:{self.port}"}

    def start(self) -> MetadataServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def _aws_routes(self) -> dict:
        return {
            "/latest/meta-data/instance-id": self.instance_id,
            "/latest/meta-data/instance-type": self.instance_type,
            "/latest/meta-data/placement/availability-zone": self.zone,
            "/latest/meta-data/placement/region": self.zone[:-1],
            "/latest/meta-data/instance-life-cycle": "spot" if self.spot_action is not None else "on-demand",
            "/latest/meta-data/spot/instance-action": json.dumps(self.spot_action) if self.spot_action else None,
        }

    def _gce_routes(self) -> dict:
        return {
            "/computeMetadata/v1/instance/id": self.gce_id,
            "/computeMetadata/v1/instance/zone": f"projects/123456/zones/{self.gce_zone}",
            "/computeMetadata/v1/instance/machine-type": f"projects/123456/machineTypes/{self.gce_machine_type}",
            "/computeMetadata/v1/instance/preempted": "TRUE" if self.preempted else "FALSE",
            "/computeMetadata/v1/instance/scheduling/preemptible": "TRUE",
        }

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output clean
                pass

            def _send(self, code: int, body: str = "", headers: dict | None = None):
                data = body.encode()
                self.send_response(code)
                for k, v in {"Content-Type": "text/plain", **(headers or {})}.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_PUT(self):
                server.requests.append(("PUT", self.path, {k.lower(): v for k, v in self.headers.items()}))
                if self.path != "/latest/api/token":
                    return self._send(404, "not found")
                if not self.headers.get("X-aws-ec2-metadata-token-ttl-seconds"):
                    return self._send(400, "missing X-aws-ec2-metadata-token-ttl-seconds")
                self._send(200, server.TOKEN)

            def do_GET(self):
                server.requests.append(("GET", self.path, {k.lower(): v for k, v in self.headers.items()}))
                path = self.path.split("?")[0]
                if path.startswith("/latest/"):
                    if self.headers.get("X-aws-ec2-metadata-token") != server.TOKEN:
                        return self._send(401, "IMDSv2 token required")
                    value = server._aws_routes().get(path)
                elif path.startswith("/computeMetadata/"):
                    if self.headers.get("Metadata-Flavor") != "Google":
                        return self._send(403, "Missing Metadata-Flavor: Google header")
                    value = server._gce_routes().get(path)
                    if value is not None:
                        return self._send(200, value, {"Metadata-Flavor": "Google"})
                else:
                    value = None
                if value is None:
                    return self._send(404, "not found")
                self._send(200, value)

        return Handler


def http_get(url: str, headers: dict | None = None, timeout: float = 5) -> tuple[int, str]:
    """Small helper for tests that poke a server directly."""
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def interrupt_when_ready(script: str, args: list[str], cwd: Path, root: Path):
    """Run `python -c script args`, send SIGINT once it prints "ready"; return (lines before ready,
    the rest of stdout, stderr, seconds from SIGINT to exit, exit code)."""
    import signal

    proc = subprocess.Popen(
        [sys.executable, "-c", script, *args],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(root)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        lines = []
        while (line := proc.stdout.readline().strip()) != "ready":
            assert line, proc.stderr.read()
            lines.append(line)
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    return lines, out, err, time.monotonic() - sent, proc.returncode
