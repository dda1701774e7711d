"""Who and where we are: instance id, zone, region, type; and the run id.

The run id is derived at boot so the Pulumi program stays
deterministic: ``<UTC boot time>-<instance id>-<benchmark>``. The instance
id comes from the AWS or GCE metadata service when one answers, else from
the hostname (SSH hosts, laptops, CI).
"""

from __future__ import annotations

import re
import socket
from dataclasses import dataclass

from payload.metadata import AwsImds, GceMetadata, MetadataUnavailable
from payload.timestamps import stamp


@dataclass(frozen=True)
class Identity:
    provider: str | None  # "aws" | "gcp" | None (off-cloud)
    instance_id: str
    zone: str | None
    region: str | None
    instance_type: str | None
    lifecycle: str | None  # "spot" | "on-demand" when the metadata says so


def _last(path_value: str | None) -> str | None:
    """GCE returns projects/123/zones/us-central1-a; keep the last part."""
    return path_value.rsplit("/", 1)[-1] if path_value else None


def _aws(timeout: float) -> Identity:
    imds = AwsImds(timeout=timeout)
    iid = imds.get("instance-id")
    if not iid:
        raise MetadataUnavailable("no instance-id")
    zone = imds.get("placement/availability-zone")
    region = imds.get("placement/region") or (zone[:-1] if zone else None)
    lifecycle = imds.get("instance-life-cycle")
    return Identity(
        "aws",
        iid,
        zone,
        region,
        imds.get("instance-type"),
        {"spot": "spot", "on-demand": "on-demand", "normal": "on-demand"}.get(lifecycle or ""),
    )


def _gce(timeout: float) -> Identity:
    md = GceMetadata(timeout=timeout)
    iid = md.get("instance/id")
    if not iid:
        raise MetadataUnavailable("no instance/id")
    zone = _last(md.get("instance/zone"))
    region = zone.rsplit("-", 1)[0] if zone else None
    preemptible = (md.get("instance/scheduling/preemptible") or "").upper() == "TRUE"
    return Identity(
        "gcp", iid, zone, region, _last(md.get("instance/machine-type")), "spot" if preemptible else "on-demand"
    )


_PROBES = (_aws, _gce)


def detect_identity(timeout: float = 1.0) -> Identity:
    """First metadata service that answers wins; otherwise the hostname."""
    for probe in _PROBES:
        try:
            return probe(timeout)
        except MetadataUnavailable:
            continue
    return Identity(None, socket.gethostname() or "localhost", None, None, None, None)


def make_run_id(boot_time: float, instance_id: str, benchmark: str, launch: str | None = None) -> str:
    """`<boot time>-<instance>-<benchmark>`, after `<launch>-` when the launcher gave one: a launch's
    instance may write only under runs/<stack>/<launch>-* (docs/security.md)."""
    safe = re.sub(r"[^A-Za-z0-9.]+", "-", instance_id).strip("-")[:63] or "host"
    return f"{launch_prefix(launch)}{stamp(boot_time)}-{safe}-{benchmark}"


def launch_prefix(launch: str | None) -> str:
    """What every run id of a launch starts with ('' without a launch)."""
    return f"{launch}-" if launch else ""
