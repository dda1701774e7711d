"""Where a probe can run: per GPU alternative the cheapest launchable offering, matched and priced as
`gpubench offers` does (analysis.offerings); this machine at the rate you give it; SSH hosts by stack name.
Retired offerings are never candidates, and each candidate names those it passed over.
"""

from __future__ import annotations

import difflib
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any

from analysis.offerings import offering_row, order, select
from analysis.price.billed import CostError, quote
from analysis.price.local import resolve_price
from infra import clouds
from infra.catalog import BillingTerms, Catalog, CatalogError, NoPrice, load_catalog
from infra.stacks import SSH_PREFIX, STACKS_DIR, StackFileError, load_config, ssh_stack_names
from payload.exitcodes import UsageError
from payload.layout import check_stack_name
from payload.workloads.spec import parse_accelerators

LOCAL_OFFERING = "local/this-machine"
LOCAL_NAME = "local"  # + "-<bench id>": each bench's local probes are a stack of their own
MARKET_SPOT, MARKET_ON_DEMAND = "spot", "on-demand"


class CandidateError(UsageError):
    """A candidate cannot be chosen as asked; the message names the value and the fix."""


@dataclass(frozen=True)
class Candidate:
    """One place to probe the job: a cloud offering on a market, this machine, or an SSH host."""

    kind: str  # "cloud" | "local" | "ssh"
    name: str  # the stack name (cloud: generated, in the matrix's convention), "local", or the SSH stack
    offering: str  # catalog id, e.g. "aws/g4dn.xlarge"; "local/this-machine" for local
    provider: str | None
    region: str | None
    market: str  # "on-demand" | "spot"
    gpu: str | None
    gpu_count: int
    hourly_usd: float | None
    price_source: str | None
    price_date: str | None
    terms: BillingTerms | None
    ask: str | None = None  # the alternative it answers, e.g. "T4:1" (cloud candidates)
    notes: tuple[str, ...] = ()  # e.g. which retired offerings were passed over


def _candidate(catalog: Catalog, offering: Any, price: tuple, as_of: date | None = None, **fields: Any) -> Candidate:
    """A candidate on `offering`: its GPUs and billing terms from the catalog, `price` (hourly USD, source, date)."""
    hourly, source, when = price
    return Candidate(
        offering=offering.id,
        provider=offering.provider,
        gpu=offering.gpu_model,
        gpu_count=offering.gpu_count,
        hourly_usd=hourly,
        price_source=source,
        price_date=when,
        terms=catalog.billing_terms(offering.id, _today(as_of)),
        **fields,
    )


# --- cloud -------------------------------------------------------------------------------------------------


def _today(as_of: date | None) -> date:
    return as_of or datetime.now(timezone.utc).date()


def _where(task: Any, field: str) -> str:
    """How messages name a task file's field (a bare --gpus run may have no task)."""
    return f"{getattr(task, 'path', None) or 'the task file'}: field {field!r}"


def alternatives(task: Any, gpus: str | None) -> tuple[list[Any], str]:
    """The alternatives to look up and where they came from (for messages)."""
    if gpus:
        try:
            return list(parse_accelerators(gpus)), "--gpus"
        except ValueError as exc:
            raise CandidateError(f"--gpus {gpus!r}: {exc}") from None
    resources, where = getattr(task, "resources", None), _where(task, "resources.accelerators")
    if resources is None or not resources.accelerators:
        raise CandidateError(
            f"{where}: the task names no GPUs to compare; add `resources: {{accelerators: [T4:1, L4:1]}}` "
            "to the task file or pass --gpus T4,L4"
        )
    return list(resources.accelerators), where


def known_gpu(catalog: Catalog, name: str, where: str) -> str:
    """The catalog's spelling of a GPU model; unknown names are an error listing the known ones."""
    known = catalog.gpu_models()
    found = {m.lower(): m for m in known}.get(name.replace(" ", "-").lower())
    if found is None:
        close = difflib.get_close_matches(name.upper(), known, n=2, cutoff=0.5)
        hint = f"did you mean {' or '.join(close)}? " if close else ""
        raise CandidateError(f"{where}: unknown GPU {name!r}; {hint}known GPU models: {', '.join(known)}")
    return found


def _launchable(offering: Any) -> bool:
    """Offerings the stack matrix launches with Pulumi."""
    return offering.kind == "cloud" and clouds.is_cloud(offering.provider)


def _stack_region(offering: Any) -> str | None:
    """The region the matrix's stack file for this offering sets."""
    keys = clouds.get(offering.provider).stack_keys(offering)
    return next((str(v) for k, v in keys.items() if k.endswith(":region")), None)


def stack_name(offering: Any, market: str, region: str | None) -> str:
    """The matrix's name (`<provider>-<family>-<size>[-spot]`) in the matrix's region; elsewhere the region
    goes before `-spot`, so the probe never reuses a stack file set to another region."""
    name = offering.stack_name(market)
    if region is None or region == _stack_region(offering):
        return name
    base = name.removesuffix("-spot") if market == MARKET_SPOT else name
    return f"{base}-{region}" + ("-spot" if market == MARKET_SPOT else "")


def _price(catalog: Catalog, offering_id: str, market: str, as_of: date | None) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # retired offerings never get here
        price, hourly, _, _ = quote(catalog, offering_id, market, as_of, None)
    return price, hourly


def _match(
    rows: list[dict], retired: list[Any], ask: Any, gpu: str, spot: bool, resources: Any
) -> tuple[list[dict], str | None]:
    """Offerings for one alternative, cheapest first, or the reason there are none."""
    label = f"{gpu}:{ask.count}"
    price_key = "spot_hourly_usd" if spot else "hourly_usd"
    same_gpu = select(rows, gpu, False, None, None, None)
    counted = select(same_gpu, label, False, None, None, None)
    on_market = select(counted, label, spot, None, None, None)
    providers = getattr(resources, "providers", None)
    regions = getattr(resources, "regions", None)
    by_provider = [r for r in on_market if not providers or r["provider"] in providers]
    in_region = [r for r in by_provider if not regions or set(regions) & set(r["regions"])]
    priced = [r for r in in_region if r[price_key] is not None]
    old = [o.id for o in retired if o.gpu_model == gpu and o.gpu_count == ask.count]
    old_gpu = [o.id for o in retired if o.gpu_model == gpu]
    counts = ", ".join(map(str, sorted({r["gpu_count"] for r in same_gpu})))
    market, sold_by = ("spot" if spot else "on-demand"), _listing(on_market, "provider")
    stages = [
        (f"no cloud offering gpubench can launch has {gpu} GPUs" + _never(old_gpu), same_gpu),
        (f"no cloud offering has {ask.count}x {gpu} (counts sold: {counts})" + _never(old), counted),
        (f"no {label} offering is sold on the spot market; drop --spot / `spot: true`", on_market),
        (f"no {label} offering from {', '.join(providers or ())} (sold by {sold_by})", by_provider),
        (f"no {label} offering in {', '.join(regions or ())} (sold in {_listing(by_provider, 'regions')})", in_region),
        (f"no {market} catalog price for {_listing(in_region, 'id')} (add one: `gpubench prices`)", priced),
    ]
    if not priced:
        return [], next((reason for reason, rows in stages if not rows), f"no offering matches {label}")
    return order(priced, "price", spot), None


def _never(retired: list[str]) -> str:
    return f"; retired offerings are never probed ({', '.join(retired)})" if retired else ""


def _ssh_hint(catalog: Catalog, gpu: str, count: int) -> str:
    """Machines with that GPU that no Pulumi program launches: reachable over SSH instead."""
    boxes = [o.id for o in catalog.offerings(gpu=gpu) if not _launchable(o) and o.gpu_count == count]
    if not boxes:
        return ""
    return f"; over SSH instead: {', '.join(boxes)} (add an SSH stack, docs/ssh.md, and pass --hosts)"


def _listing(rows: list[dict], key: str) -> str:
    values = [v for r in rows for v in (r[key] if isinstance(r[key], list) else [r[key]])]
    return ", ".join(dict.fromkeys(values)) or "none"


def cloud_candidates(
    task: Any,
    *,
    gpus: str | None = None,
    spot: bool | None = None,
    catalog: Catalog | None = None,
    as_of: date | None = None,
) -> tuple[list[Candidate], list[dict]]:
    """The cheapest matching cloud offering per GPU alternative, and the alternatives that matched nothing
    (each {"ask": "T4:1", "reason": "..."}). `gpus` ("T4,L4,A100:8") replaces the task's alternatives;
    `spot` (None: the task's `resources.spot`) picks the market. Unknown GPU names raise CandidateError."""
    catalog = catalog or load_catalog()
    asks, where = alternatives(task, gpus)
    resources = getattr(task, "resources", None)
    spot = bool(getattr(resources, "spot", False)) if spot is None else spot
    market, regions = MARKET_SPOT if spot else MARKET_ON_DEMAND, getattr(resources, "regions", None) or ()
    for name in getattr(resources, "providers", None) or ():
        if not clouds.is_cloud(name):
            why = (
                ": it has no Pulumi program: reach its machines over SSH (--hosts)"
                if name in catalog.providers()
                else ""
            )
            raise CandidateError(
                f"{_where(task, 'resources.providers')}: provider {name!r} cannot be launched{why}; "
                f"cloud providers: {', '.join(clouds.NAMES)}"
            )
    day = _today(as_of)
    launchable = [o for o in catalog.offerings() if _launchable(o)]
    retired = [o for o in launchable if o.is_retired_on(day)]
    rows = [offering_row(catalog, o, as_of) for o in launchable if not o.is_retired_on(day)]
    found: list[Candidate] = []
    unmatched: list[dict] = []
    for ask in asks:
        gpu = known_gpu(catalog, ask.name, where)
        label = f"{gpu}:{ask.count}"
        ranked, reason = _match(rows, retired, ask, gpu, spot, resources)
        if not ranked:
            unmatched.append({"ask": label, "reason": reason + _ssh_hint(catalog, gpu, ask.count)})
            continue
        passed_over = [
            f"{o.id} (retired {o.retired})" for o in retired if o.gpu_model == gpu and o.gpu_count == ask.count
        ]
        notes = (f"cheapest of {len(ranked)} {label} offerings" if len(ranked) > 1 else f"the only {label} offering",)
        notes += (f"retired offerings passed over: {', '.join(passed_over)}",) if passed_over else ()
        offering = catalog.get(ranked[0]["id"])
        region = next((r for r in regions if r in offering.regions), None) or _stack_region(offering)
        price, hourly = _price(catalog, offering.id, market, as_of)
        quoted = (float(hourly), price.source if price else None, price.as_of.isoformat() if price else None)
        name = stack_name(offering, market, region)
        fields = dict(kind="cloud", name=name, region=region, market=market, ask=label, notes=notes)
        candidate = _candidate(catalog, offering, quoted, as_of, **fields)
        if all(c.name != candidate.name for c in found):
            found.append(candidate)
    return found, unmatched


# --- this machine ------------------------------------------------------------------------------------------


def local_candidate(hourly_usd: float | None = None, bench_id: str | None = None) -> Candidate:
    """This machine as `local/this-machine`, priced as the demo prices it: the given rate, else
    $GPUBENCH_LOCAL_HOURLY_USD, else the documented assumed default (the source says which).
    Its stack is `local-<bench id>`, so status, logs and results keep each bench's local probe apart."""
    try:
        price = resolve_price(hourly_usd)
    except CostError as exc:
        raise CandidateError(str(exc)) from None
    catalog = load_catalog()
    quoted = (price.hourly_usd, price.source, _today(None).isoformat())
    name = check_stack_name(f"{LOCAL_NAME}-{bench_id}") if bench_id else LOCAL_NAME
    return _candidate(
        catalog, catalog.get(LOCAL_OFFERING), quoted, kind="local", name=name, region=None, market=MARKET_ON_DEMAND
    )


# --- SSH hosts ---------------------------------------------------------------------------------------------


def ssh_candidates(names: Sequence[str], stacks_dir: Path | None = None) -> list[Candidate]:
    """One candidate per SSH host stack (stacks/Pulumi.ssh-*.yaml), priced by its `gpubench:offering`."""
    stacks_dir = Path(stacks_dir or STACKS_DIR)
    catalog, known, out = load_catalog(), ssh_stack_names(stacks_dir), []
    for name in dict.fromkeys(n.strip() for n in names if n.strip()):
        stack = next((s for s in (name, SSH_PREFIX + name) if s in known), None)  # the `ssh-` prefix may be left out
        if stack is None:
            listing = ", ".join(known) or f"none yet: add stacks/Pulumi.{SSH_PREFIX}<name>.yaml (docs/ssh.md)"
            raise CandidateError(f"--hosts {name!r}: no SSH stack of that name in {stacks_dir}; SSH stacks: {listing}")
        try:
            config = load_config(stack, stacks_dir)
        except StackFileError as exc:
            raise CandidateError(str(exc)) from None
        offering_id = config.get("gpubench:offering")
        if not offering_id:
            raise CandidateError(
                f"{stacks_dir / f'Pulumi.{stack}.yaml'}: no gpubench:offering; name the box's catalog id "
                "(e.g. hetzner/ex51-ssd-gpu, see `gpubench offerings`)"
            )
        try:
            offering = catalog.get(str(offering_id))
        except CatalogError as exc:
            raise CandidateError(f"{stack}: gpubench:offering: {exc}") from None
        region = offering.regions[0] if offering.regions else None
        try:  # the offering's own rule, monthly and on-prem ones included
            price, hourly = _price(catalog, offering.id, MARKET_ON_DEMAND, None)
        except (NoPrice, CostError):
            price, hourly = None, None
        onprem = offering.onprem.as_of.isoformat() if offering.onprem and offering.onprem.as_of else None
        quoted = (None, None, None) if hourly is None else (float(hourly), offering.specs_source, onprem)  # on-prem
        if price is not None:
            quoted = (float(hourly), price.source, price.as_of.isoformat())
        out.append(
            _candidate(catalog, offering, quoted, kind="ssh", name=stack, region=region, market=MARKET_ON_DEMAND)
        )
    return out
