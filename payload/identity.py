"""What the instance metadata says: who and where we are, the run id, and spot/preemption notices.

AWS IMDSv2 (a token from ``PUT /latest/api/token`` sent back with every GET) and the GCE metadata server
(``Metadata-Flavor: Google``), urllib with short timeouts so that off-cloud they fail in a second;
endpoints as the SDKs read them (AWS_EC2_METADATA_SERVICE_ENDPOINT, AWS_EC2_METADATA_DISABLED,
GCE_METADATA_HOST); a 404 is "no such value" (None). Off-cloud the hostname is the instance id.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass

from payload.timestamps import stamp


class MetadataUnavailable(RuntimeError):
    """The metadata service cannot be reached (not on this cloud, or down)."""


def _request(method: str, url: str, headers: dict, timeout: float) -> str | None:
    req = urllib.request.Request(url, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return None
        raise MetadataUnavailable(f"{method} {url}: HTTP {exc.code}") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise MetadataUnavailable(f"{method} {url}: {exc}") from None


class AwsImds:
    """AWS instance metadata, IMDSv2 (session token) only; a token that expired (401) is fetched anew."""

    TTL = 21600

    def __init__(self, endpoint: str | None = None, timeout: float = 1.0):
        self.endpoint = (
            endpoint or os.environ.get("AWS_EC2_METADATA_SERVICE_ENDPOINT") or "http://169.254.169.254/"
        ).rstrip("/")
        self.disabled = os.environ.get("AWS_EC2_METADATA_DISABLED", "").lower() in ("1", "true", "yes")
        self.timeout = timeout
        self._token: str | None = None

    def _get_token(self) -> str:
        if not self._token:
            ttl = {"X-aws-ec2-metadata-token-ttl-seconds": str(self.TTL)}
            self._token = _request("PUT", f"{self.endpoint}/latest/api/token", ttl, self.timeout)
        if not self._token:
            raise MetadataUnavailable(f"{self.endpoint}: no IMDSv2 token")
        return self._token

    def get(self, path: str) -> str | None:
        """GET /latest/meta-data/<path>; None on 404."""
        if self.disabled:
            raise MetadataUnavailable("AWS_EC2_METADATA_DISABLED is set")
        url = f"{self.endpoint}/latest/meta-data/{path.lstrip('/')}"
        try:
            return _request("GET", url, {"X-aws-ec2-metadata-token": self._get_token()}, self.timeout)
        except MetadataUnavailable as exc:
            if "HTTP 401" not in str(exc):
                raise
            self._token = None
            return _request("GET", url, {"X-aws-ec2-metadata-token": self._get_token()}, self.timeout)


class GceMetadata:
    """GCE metadata server (computeMetadata/v1)."""

    def __init__(self, host: str | None = None, timeout: float = 1.0):
        host = host or os.environ.get("GCE_METADATA_HOST") or "metadata.google.internal"
        self.base = (host if host.startswith("http") else f"http://{host}").rstrip("/") + "/computeMetadata/v1"
        self.timeout = timeout

    def get(self, path: str) -> str | None:
        """GET /computeMetadata/v1/<path>; None on 404."""
        return _request("GET", f"{self.base}/{path.lstrip('/')}", {"Metadata-Flavor": "Google"}, self.timeout)


@dataclass(frozen=True)
class Identity:
    provider: str | None  # "aws" | "gcp" | None (off-cloud)
    instance_id: str
    zone: str | None
    region: str | None
    instance_type: str | None
    lifecycle: str | None  # "spot" | "on-demand" when the metadata says so


def _last(path_value: str | None) -> str | None:
    """The last part of GCE's projects/123/zones/us-central1-a."""
    return path_value.rsplit("/", 1)[-1] if path_value else None


def _aws(timeout: float) -> Identity:
    imds = AwsImds(timeout=timeout)
    iid = imds.get("instance-id")
    if not iid:
        raise MetadataUnavailable("no instance-id")
    zone = imds.get("placement/availability-zone")
    region = imds.get("placement/region") or (zone[:-1] if zone else None)
    lifecycle = {"spot": "spot", "on-demand": "on-demand", "normal": "on-demand"}.get(imds.get("instance-life-cycle"))
    return Identity("aws", iid, zone, region, imds.get("instance-type"), lifecycle)


def _gce(timeout: float) -> Identity:
    md = GceMetadata(timeout=timeout)
    iid = md.get("instance/id")
    if not iid:
        raise MetadataUnavailable("no instance/id")
    zone = _last(md.get("instance/zone"))
    region = zone.rsplit("-", 1)[0] if zone else None
    market = "spot" if (md.get("instance/scheduling/preemptible") or "").upper() == "TRUE" else "on-demand"
    return Identity("gcp", iid, zone, region, _last(md.get("instance/machine-type")), market)


def detect_identity(timeout: float = 1.0) -> Identity:
    """First metadata service that answers wins; otherwise the hostname."""
    for probe in (_aws, _gce):
        with contextlib.suppress(MetadataUnavailable):
            return probe(timeout)
    return Identity(None, socket.gethostname() or "localhost", None, None, None, None)


def make_run_id(boot_time: float, instance_id: str, benchmark: str, launch: str | None = None) -> str:
    """`<boot time>-<instance>-<benchmark>`, after `<launch>-` when the launcher gave one: a launch's
    instance may write only under runs/<stack>/<launch>-* (docs/security.md)."""
    safe = re.sub(r"[^A-Za-z0-9.]+", "-", instance_id).strip("-")[:63] or "host"
    return f"{launch_prefix(launch)}{stamp(boot_time)}-{safe}-{benchmark}"


def launch_prefix(launch: str | None) -> str:
    """What every run id of a launch starts with ('' without a launch)."""
    return f"{launch}-" if launch else ""


def aws_spot_notice(imds: AwsImds) -> str | None:
    body = imds.get("spot/instance-action")
    if not body:
        return None
    try:
        info = json.loads(body)
    except ValueError:
        return f"aws spot instance-action: {body.strip()[:200]}"
    return f"aws spot instance-action: {info.get('action')} at {info.get('time')}"


def gce_preempted_notice(md: GceMetadata) -> str | None:
    preempted = (md.get("instance/preempted") or "").strip().upper() == "TRUE"
    return "gce instance/preempted is TRUE" if preempted else None


class PreemptionWatcher:
    """Polls the notice sources every `interval` s in a daemon thread and sets ``notice`` (an Event: free to
    read every step) on the first: AWS ``spot/instance-action`` (two minutes' notice), GCE
    ``instance/preempted`` (about 30 s), the run deadline less a margin; ``trigger()`` serves the stop
    signals. A source that never answered is dropped at its first failure (not this cloud)."""

    def __init__(
        self,
        interval: float = 5.0,
        deadline: float | None = None,
        deadline_margin: float = 300.0,
        sources: list[tuple[str, Callable[[], str | None]]] | None = None,
        clock: Callable[[], float] = time.time,
    ):
        self.interval = interval
        self.deadline, self.deadline_margin = deadline, deadline_margin
        self.clock = clock
        if sources is None:
            imds, gce = AwsImds(), GceMetadata()
            sources = [("aws", lambda: aws_spot_notice(imds)), ("gce", lambda: gce_preempted_notice(gce))]
        self._sources = list(sources)
        self._answered: set[str] = set()
        self.notice = threading.Event()
        self.reason: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="gpubench-preemption-watcher", daemon=True)

    def start(self) -> PreemptionWatcher:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def trigger(self, reason: str) -> None:
        if not self.notice.is_set():
            self.reason = reason
            self.notice.set()

    def poll_once(self) -> str | None:
        """One round over all sources; returns the notice text if any."""
        if self.deadline is not None and self.clock() >= self.deadline - self.deadline_margin:
            return f"run deadline {self.deadline:.0f} is less than {self.deadline_margin:.0f}s away"
        for name, check in list(self._sources):
            try:
                text = check()
                self._answered.add(name)
            except MetadataUnavailable:
                if name not in self._answered:
                    self._sources.remove((name, check))  # not on this cloud
                continue
            if text:
                return text
        return None

    def _run(self) -> None:
        while not self._stop.is_set() and not self.notice.is_set():
            text = self.poll_once()
            if text:
                self.trigger(text)
                return
            self._stop.wait(self.interval)
