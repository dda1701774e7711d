"""`pulumi up` of a stack (`up`, for bench's cloud probes and campaigns), why a launch failed, in the provider's
words (`classify`, over a failed `up`'s Pulumi transcript), and where a capacity retry may go. Kinds: quota (an account limit: another zone does not help), no-capacity
(retried once in another zone of the region, never the one that failed: SkyPilot #10021),
gpu-not-in-zone, config (the stack file did not parse; before any `up`), other."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from infra import clouds
from infra.catalog import region_zones
from infra.workspace import error_text, plain_outputs

KINDS = ("quota", "no-capacity", "gpu-not-in-zone")


# (kind, every cloud's patterns for it), in KINDS order: the first kind to match wins, as quota codes can
# stand next to capacity words in one transcript.
PATTERNS = tuple(
    (kind, tuple(p for cloud in clouds.all_clouds() for k, ps in cloud.FAILURE_PATTERNS if k == kind for p in ps))
    for kind in KINDS
)
GENERIC = ("update failed", "preview failed", "destroy failed")  # Pulumi's own summary lines, never the reason


@dataclass(frozen=True)
class Failure:
    kind: str  # quota | no-capacity | gpu-not-in-zone | config | other
    message: str  # the provider's line, else the transcript's last line
    zone: str | None  # a zone the message names, if any

    @property
    def retryable(self) -> bool:
        return self.kind == "no-capacity"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _provider_line(text: str, pattern: str) -> str:
    for line in text.splitlines():
        if re.search(pattern, line):
            return line.split("error: ", 1)[-1].strip()[:1000]  # drop Pulumi's resource prefix
    return text.strip().splitlines()[-1][:1000] if text.strip() else ""


def _zone_in(text: str) -> str | None:
    found = (re.search(rf"\b({cloud.ZONE_PATTERN.pattern})\b", text) for cloud in clouds.all_clouds())
    return next((m.group(1) for m in found if m), None)


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


def up(handle: Any, say: Callable[[str], None], what: str = "") -> tuple[dict[str, Any], Failure | None]:
    """`pulumi up` with its lines through `say`: (plain outputs, None), or ({}, the classified failure, said)."""
    say(f"pulumi up{what}")
    try:
        result = handle.up(on_output=say)
    except Exception as exc:  # noqa: BLE001 - CommandError carries the provider's message
        failure = classify(error_text(exc, limit=8000))
        say(f"launch failed ({failure.kind}): {failure.message}")
        return {}, failure
    return plain_outputs(getattr(result, "outputs", None) or handle.outputs()), None


def region_of_zone(zone: str) -> str:
    """us-east-1a -> us-east-1; us-central1-a -> us-central1 (the cloud whose zones look like it)."""
    cloud = clouds.of_zone(zone)
    if cloud is None:
        raise ValueError(f"{zone!r} is not a zone name of any cloud gpubench supports")
    return cloud.region_of_zone(zone)


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
    # the offering's zones in the region, else the region's (data/zones.toml)
    listed = [z for z in offering_zones if region_of_zone(z) == region] or region_zones(provider, region)
    for zone in listed:
        if zone not in avoid:
            return zone, f"retrying in {zone} (no capacity in {failed_zone})"
    return None, f"not retried: no other zone of {region} offers it (tried {', '.join(sorted(avoid))})"
