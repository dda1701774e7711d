"""What a benchmark stack launches, independent of the cloud (pure Python): price, payload environment,
tags; the cloud modules turn a `Launch` into resources."""

from __future__ import annotations

import tempfile
import warnings as pywarnings
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from infra import clouds, images
from infra.bundle import build_bundle, build_workload_bundle
from infra.catalog import CatalogError
from infra.cloud_init import CodeBundle, PayloadLaunch, boot_deadline, render_user_data
from infra.config import CLOUD_WORKLOAD_SPEC, BenchmarkConfig, ConfigError, check_against_offering
from infra.tags import project_id
from payload.config import render_env
from payload.money import plain_usd
from payload.timestamps import parse_time, stamp


@dataclass(frozen=True)
class Launch:
    """A benchmark stack resolved against the catalog."""

    cfg: BenchmarkConfig
    offering: Any  # infra.catalog Offering
    price: Any  # infra.catalog PriceQuote
    on_demand_price: Any  # for spot launches, recorded beside the spot price
    hourly_usd: float | None  # None when the catalog has no price for it
    image: str  # the container image the host runs
    warnings: tuple[str, ...]
    public: images.PublicImage | None = None  # set when `image` is a public image running the code bundle

    @property
    def provider(self) -> str:
        return self.offering.provider

    @property
    def generation(self) -> str:
        return self.offering.image_generation


def resolve(cfg: BenchmarkConfig, catalog: Any) -> Launch:
    """Look the offering and its price up; collect the warnings preview shows."""
    offering = catalog.get(cfg.offering)
    check_against_offering(cfg, offering, offering.provider)
    warnings: list[str] = []
    price, on_demand = launch_price(catalog, offering.id, cfg.market, warnings)
    if offering.retired:
        warnings.append(
            f"retired GPU: {offering.gpu.model} on {offering.id} was retired on {offering.retired}; launches may fail"
        )
    if offering.image_generation == "cuda11-legacy":
        warnings.append(
            f"legacy image: {offering.gpu.model} (compute capability {offering.gpu.compute_capability}) needs the CUDA 11 / driver 470 image and the legacy payload"
        )
    zone = zone_of(cfg)
    if zone and offering.zones and zone not in offering.zones:
        warnings.append(
            f"GPU not offered in zone {zone}: {offering.gpu.model} is offered in {', '.join(offering.zones)}"
        )
    region = region_of(cfg, offering)
    if offering.regions and region not in offering.regions:
        warnings.append(
            f"region {region} is not one the catalog lists for {offering.id}: {', '.join(offering.regions)}"
        )
    hourly = float(price.hourly_usd) if price is not None else None
    public = None if cfg.payload_image else images.public_image(offering.image_generation)
    if public is not None and public.extra != "payload" and (cfg.backend or "tensorflow") != "tensorflow":
        raise ConfigError(
            "backend",
            f"{cfg.backend!r} needs Keras 3; {offering.gpu.model if offering.gpu else offering.id} runs the legacy "
            f"image {public.image} (Keras 2): use tensorflow, or a prebuilt gpubench:payloadImage",
        )
    if public is not None and cfg.workload:
        public = images.workload_image(cfg.workload) or public
    if public is None:  # a prebuilt payload image: its maker chose its CUDA
        image = images.payload_image(cfg.payload_image, offering.image_generation)
    else:  # a container the GPU cannot run (infra.images) is refused before anything is spent
        image = public.image
        found = (
            images.official_image_problems(offering)
            if public.framework
            else images.workload_image_problems(offering, image)
        )
        if found:
            raise ConfigError(
                "offering",
                f"no supported image for {offering.gpu.model} on {offering.id}: {'; '.join(found)}. {images.image_fix(offering)}",
            )
    return Launch(cfg, offering, price, on_demand, hourly, image, tuple(warnings), public)


def zone_of(cfg: BenchmarkConfig) -> str | None:
    return cfg.zone_setting()[1]


def region_of(cfg: BenchmarkConfig, offering: Any) -> str:
    """Configured region, else the zone's region, else the catalog's first region."""
    if clouds.is_cloud(offering.provider):
        found = clouds.get(offering.provider).region(cfg.provider_config, zone_of(cfg))
        if found:
            return found
    return offering.regions[0] if offering.regions else ""


def zone_or_first(cfg: BenchmarkConfig, offering: Any) -> str:
    """Configured zone, else the first catalog zone offering the GPU."""
    if zone := zone_of(cfg) or next(iter(offering.zones), None):
        return zone
    raise ValueError(f"{offering.id} lists no zones; set gpubench:zone")


fmt_usd = partial(plain_usd, missing="unknown")  # a price as a tag value and payload option


def launch_id_of(deadline: str) -> str:
    """A deployment's launch id, `L<YYYYMMDD>T<HHMMSS>Z` of its deadline (one per `pulumi up`): every run id
    of the launch starts with it, and the instance may write only under runs/<stack>/<launch id>-*."""
    return "L" + stamp(parse_time(deadline))


def payload_env(launch: Launch, results_url: str, deadline: str, launch_id: str | None = None) -> dict[str, str]:
    """The payload's GPUBENCH_* environment from its option table (payload.config); a recurring launch,
    whose deadline is set at boot, has no `launch_id`."""
    cfg = launch.cfg
    return render_env(
        {
            "benchmark": list(cfg.suite) or None,
            "workload": CLOUD_WORKLOAD_SPEC if cfg.workload else None,
            "results": results_url,
            "stack": cfg.stack,
            **offering_options(launch.offering, cfg.market, launch.price, launch.on_demand_price),
            "precision": cfg.precision,
            "image": launch.image,
            "expect_gpu": cfg.expect_gpu,
            "deadline": deadline,
            "launch": launch_id,
            "epochs": cfg.epochs,
            "steps": cfg.steps,
            "batch_size": cfg.batch_size,
            "data": cfg.data,
            "param": cfg.params,
            "gpus": None if cfg.gpus == "all" else cfg.gpus,
            "backend": cfg.backend,
            "all_reduce": cfg.all_reduce,
            # only when set: a full run's env stays as it was
            **({"probe_seconds": cfg.probe_seconds} if cfg.probe_seconds else {}),
        }
    )


CODE_CACHE = "gpubench-code"  # under the temp dir: the bundle file a Pulumi FileAsset uploads
WORKLOAD_PREFIX = "workload-"  # code/workload-<sha256>.tar.gz: the spec and its workdir


def code_uploads(launch: Launch) -> list[tuple[str, str, tuple[str, str]]]:
    """(resource name, key prefix under code/, (sha256, path written for upload)) of the payload's code
    bundle and, for a workload stack, its spec + workdir (`code/workload-<sha256>.tar.gz`)."""
    bundles = [("code-bundle", "", build_bundle())]
    if launch.cfg.workload:
        bundles.append(("workload-bundle", WORKLOAD_PREFIX, build_workload_bundle(launch.cfg.workload)))
    cache = Path(tempfile.gettempdir()) / CODE_CACHE
    return [(name, prefix, (b.sha256, str(b.write_to(cache, prefix)))) for name, prefix, b in bundles]


def guest_user_data(
    launch: Launch, results_url: str, code_urls: str, copy: str, deadline: str | None = None, settings=None
) -> str:
    """The cloud-init of one run. A recurring stack has no `deadline`: a placeholder passes the payload's
    option check, and the guest replaces it with boot time + maxHours before anything reads it. `code_urls`:
    the bundles the guest fetches into the public image ("URL#sha256", space-separated, a workload's second;
    empty with a prebuilt payloadImage)."""
    if deadline:
        env = payload_env(launch, results_url, deadline, launch_id=launch_id_of(deadline))
    else:
        env = payload_env(launch, results_url, "2000-01-01T00:00:00Z")
        env["GPUBENCH_DEADLINE"] = boot_deadline(launch.cfg.max_hours)
    code = None
    if code_urls:
        (url, sha256), *workload = (u.partition("#")[::2] for u in code_urls.split(" "))
        public = launch.public
        packages = public.packages_for(launch.cfg.backend or "tensorflow")
        code = CodeBundle(url, sha256, copy, public.extra, public.install, packages, settings or {}, *workload[:1])
    return render_user_data(PayloadLaunch(launch.image, {**env, **(settings or {})}, code))


def offering_options(offering: Any, market: str, price: Any, on_demand: Any = None) -> dict[str, Any]:
    """Payload options describing the offering and the price it is launched at (the payload reads no catalog)."""
    options: dict[str, Any] = {
        "offering": offering.id,
        "offering_kind": offering.kind,
        "instance_type": offering.instance_type,
        "market": market,
    }
    if price is not None:
        options.update(
            hourly_usd=fmt_usd(float(price.hourly_usd)), price_source=str(price.source), price_as_of=str(price.as_of)
        )
    if market == "spot" and on_demand is not None:
        options["on_demand_hourly_usd"] = fmt_usd(float(on_demand.hourly_usd))
    return options


def launch_price(catalog: Any, offering_id: str, market: str, warnings: list[str]) -> tuple[Any, Any]:
    """(price of the market, on-demand price for a spot launch), each None when the catalog has none; spot
    falls back to on-demand with a warning (resolve warns of retirement: RetiredOfferingWarning is silenced)."""
    quotes, why = {}, {}
    with pywarnings.catch_warnings():
        pywarnings.simplefilter("ignore")
        for m in dict.fromkeys((market, "on-demand")):
            try:
                quotes[m] = catalog.price(offering_id, market=m)
            except CatalogError as exc:
                why[m] = str(exc)
    if market in why:
        warnings.append(
            f"no spot price ({why[market]}); estimating with the on-demand price"
            if "on-demand" in quotes
            else f"no price in the catalog ({why[market]}); cost unknown, tags say 'unknown'"
        )
    return quotes.get(market, quotes.get("on-demand")), quotes.get("on-demand") if market == "spot" else None


def tag_values(launch: Launch) -> dict[str, str]:
    """Tag values known before deploy (expires-at comes from the deadline resource)."""
    return {
        "project": project_id(),  # the sweepers act only on this project's resources (infra.sweep.ownership)
        "stack": launch.cfg.stack,
        "offering": launch.offering.id,
        "market": launch.cfg.market,
        "hourly-usd": fmt_usd(launch.hourly_usd),
    }
