"""Why a launch failed, in the provider's words, and where a capacity retry may go.

`classify(text)` reads the Pulumi transcript of a failed `up` (a CommandError's
message holds the provider's error) and returns the failure kind, the provider's
own line, and the zone it names. Kinds:

- quota: an account limit (vCPU, GPU, spot instance count); waiting or a quota
  increase fixes it, another zone does not;
- no-capacity: the zone has no (spot) capacity right now; the campaign retries once
  in another zone of the same region, never the zone that just failed (SkyPilot #10021);
- gpu-not-in-zone: the instance type or accelerator is not offered in that zone;
- config: the stack's config did not parse (recorded before any `up`);
- other: anything else (credentials, permissions, ...).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from infra import clouds
from infra.catalog import region_zones

KINDS = ("quota", "no-capacity", "gpu-not-in-zone")


def _patterns() -> tuple[tuple[str, tuple[str, ...]], ...]:
    """(kind, every cloud's error codes / phrases for it). First kind with a match wins; order
    matters: quota codes can appear next to capacity words in one transcript."""
    table = {kind: [] for kind in KINDS}
    for cloud in clouds.all_clouds():
        for kind, patterns in cloud.FAILURE_PATTERNS:
            table[kind].extend(patterns)
    return tuple((kind, tuple(table[kind])) for kind in KINDS)


PATTERNS = _patterns()
RETRY_KINDS = frozenset({"no-capacity"})
# Pulumi's own summary lines, never the reason.
GENERIC = ("update failed", "preview failed", "destroy failed")


@dataclass(frozen=True)
class Failure:
    kind: str  # quota | no-capacity | gpu-not-in-zone | config | other
    message: str  # the provider's line, else the transcript's last line
    zone: str | None  # a zone the message names, if any

    @property
    def retryable(self) -> bool:
        return self.kind in RETRY_KINDS

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _provider_line(text: str, pattern: str) -> str:
    for line in text.splitlines():
        if re.search(pattern, line):
            return line.split("error: ", 1)[-1].strip()[:1000]  # drop Pulumi's resource prefix
    return text.strip().splitlines()[-1][:1000] if text.strip() else ""


def _zone_in(text: str) -> str | None:
    for cloud in clouds.all_clouds():
        m = re.search(rf"\b({cloud.ZONE_PATTERN.pattern})\b", text)
        if m:
            return m.group(1)
    return None


def classify(text: str) -> Failure:
    """Failure kind, provider message and named zone of a failed `up` transcript."""
    for kind, patterns in PATTERNS:
        for pattern in patterns:
            if re.search(pattern, text):
                line = _provider_line(text, pattern)
                return Failure(kind, line, _zone_in(line) or _zone_in(text))
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    errors = [ln for ln in lines if "error" in ln.lower() and not any(g in ln for g in GENERIC)]
    line = (errors or lines or [text.strip() or "unknown error"])[0]
    return Failure("other", line.split("error: ", 1)[-1][:1000], None)


def region_of_zone(zone: str) -> str:
    """us-east-1a -> us-east-1; us-central1-a -> us-central1 (the cloud whose zones look like it)."""
    cloud = clouds.of_zone(zone)
    if cloud is None:
        raise ValueError(f"{zone!r} is not a zone name of any cloud gpubench supports")
    return cloud.region_of_zone(zone)


def candidate_zones(provider: str, region: str, offering_zones: Sequence[str]) -> list[str]:
    """Zones of `region` where the offering may run: the catalog's list for the offering,
    else the catalog's zone list for the region (data/zones.toml)."""
    listed = [z for z in offering_zones if region_of_zone(z) == region]
    if listed:
        return listed
    return list(region_zones(provider, region))


def retry_zone(
    failed_zone: str | None, tried: Sequence[str], provider: str, region: str, offering_zones: Sequence[str]
) -> tuple[str | None, str]:
    """(zone to retry in, why). None when the failing zone is unknown or no other zone is left."""
    if not failed_zone:
        return None, (
            "not retried: the zone that ran out of capacity is unknown (the provider message names none); "
            "set gpubench:zone on the stack so a retry can avoid it"
        )
    avoid = {failed_zone, *tried}
    for zone in candidate_zones(provider, region, offering_zones):
        if zone not in avoid:
            return zone, f"retrying in {zone} (no capacity in {failed_zone})"
    return None, f"not retried: no other zone of {region} offers it (tried {', '.join(sorted(avoid))})"
