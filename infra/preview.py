"""`python -m infra preview`: what a stack will create and cost, rendered offline under mocks: resources
with key properties, user-data, price, deadline, warnings and a cost per benchmark (the maxHours bound,
or from the collected runs `gpubench preview` passes: infra/catalog/estimate.py).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from infra import stacks as stackfiles
from infra.catalog.estimate import MeasuredRuns, estimate_costs
from infra.config import BenchmarkConfig, ConfigError, parse_config
from infra.launch import fmt_usd, resolve
from infra.provider_rules import values_at
from infra.render import Rendered, render

# Properties worth a glance per resource type (engine names, dotted paths); everything is in --json.
KEY_PROPS: dict[str, str] = {
    "aws:ec2/instance:Instance": "instanceType ami availabilityZone instanceMarketOptions instanceInitiatedShutdownBehavior metadataOptions rootBlockDevice.volumeSize rootBlockDevice.encrypted",
    "aws:ec2/securityGroup:SecurityGroup": "ingress egress",
    "aws:iam/role:Role": "assumeRolePolicy",
    "aws:iam/rolePolicy:RolePolicy": "policy",
    "aws:scheduler/schedule:Schedule": "scheduleExpression scheduleExpressionTimezone actionAfterCompletion target.arn target.input",
    "aws:s3/bucket:Bucket": "bucket forceDestroy",
    "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration": "rules",
    "gcp:compute/instance:Instance": "machineType zone guestAccelerators scheduling bootDisk.initializeParams.image bootDisk.initializeParams.size",
    "gcp:compute/firewall:Firewall": "direction allows sourceRanges",
    "gcp:storage/managedFolder:ManagedFolder": "name forceDestroy",
    "gcp:storage/managedFolderIamMember:ManagedFolderIamMember": "role member",
    "gcp:storage/bucket:Bucket": "location uniformBucketLevelAccess publicAccessPrevention versioning lifecycleRules",
    "time:index/offset:Offset": "offsetMinutes",
}


def preview_stack(
    name: str, catalog: Any, measured: MeasuredRuns | None = None, stacks_dir: Path = stackfiles.STACKS_DIR
) -> dict[str, Any]:
    raw = stackfiles.load_config(name, stacks_dir)
    cfg = parse_config(raw, name)
    started = time.perf_counter()
    rendered: Rendered = render(name, raw, catalog)
    summary: dict[str, Any] = {
        **{"stack": name, "stack_type": cfg.stack_type, "offering": None, "market": None, "hourly_usd": 0.0},
        **{"deadline_hours": None, "deadline": rendered.exports.get("deadline"), "user_data": rendered.user_data},
        "resources": [
            {"type": r.type, "name": r.name, "protect": r.protect, "inputs": r.inputs}
            for r in rendered.resources
            if r.custom
        ],
        **{"exports": rendered.exports, "warnings": list(rendered.warnings), "estimated_cost": []},
    }
    if isinstance(cfg, BenchmarkConfig):
        launch = resolve(cfg, catalog)
        price = launch.price
        summary |= {
            **{"offering": launch.offering.id, "provider": launch.provider, "market": cfg.market},
            "hourly_usd": launch.hourly_usd,
            "price_source": str(price.source) if price else None,
            "price_as_of": str(price.as_of) if price else None,
            **{"deadline_hours": cfg.max_hours, "payload_image": launch.image},
            "warnings": sorted(set(launch.warnings) | set(rendered.warnings)),
            "estimated_cost": estimate_costs(cfg, launch.hourly_usd, measured),
        }
    summary["render_seconds"] = round(time.perf_counter() - started, 4)
    return summary


def _short(value: Any, width: int = 110) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return text if len(text) <= width else text[: width - 3] + "..."


def format_text(s: dict[str, Any], show_user_data: bool = True) -> str:
    out = [f"== {s['stack']}"]
    if "error" in s:
        return "\n".join([*out, f"refused    {s['error']}"])
    if s["stack_type"] == "benchmark":
        out.append(f"offering   {s['offering']} ({s['market']}), payload {s['payload_image']}")
        out.append(f"price      ${fmt_usd(s['hourly_usd'])}/h ({s['price_source']}, as of {s['price_as_of']})")
        out.append(
            f"deadline   {s['deadline_hours']:g} h after creation (if created now: {s['deadline']}); cloud-side and in-guest"
        )
        for c in s["estimated_cost"]:
            usd = "unknown" if c["usd"] is None else f"${c['usd']:.2f}"
            out.append(f"cost       {c['benchmark']}: {usd} ({c['source']})")
    out.append("resources")
    for r in s["resources"]:
        found = {k: values_at(r["inputs"], k) for k in KEY_PROPS.get(r["type"], "").split()}
        props = [f"{k}={_short(v[0], 80)}" for k, v in found.items() if v]
        flag = " [protected]" if r.get("protect") else ""
        out.append(f"  {r['type']}  {r['name']}{flag}")
        out.extend(f"      {p}" for p in props)
    for w in s["warnings"]:
        out.append(f"warning    {w}")
    if show_user_data and s["user_data"]:
        out.append("user-data")
        out.extend("  | " + line for line in s["user_data"].splitlines())
    return "\n".join(out)


def run(
    names: Iterable[str],
    catalog: Any,
    as_json: bool,
    single: bool,
    show_user_data: bool = True,
    measured: MeasuredRuns | None = None,
) -> str:
    summaries = []
    for name in names:
        try:
            summaries.append(preview_stack(name, catalog, measured))
        except ConfigError as exc:  # of several, a stack the checks refuse is listed with its error
            if single:
                raise
            summaries.append({"stack": name, "error": str(exc)})
    if as_json:
        return json.dumps(summaries[0] if single else summaries, indent=2, sort_keys=True, default=str)
    return "\n\n".join(format_text(s, show_user_data) for s in summaries)
