"""Synthetic, schema-valid results: for tests and the collect benchmark
(benchmarks/collect_s3.py). They look like what `python -m payload run` writes
(launch, boot, train, upload, shutdown on the timeline), with the numbers
you give and nothing measured invented beyond them."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

from infra.catalog import load_catalog
from payload.result import new_result

T0 = datetime(2018, 2, 8, 9, 0, tzinfo=timezone.utc)


def _iso(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _attempt(n: int, last: bool, launch: datetime, per: float, boot: float, tail: float, repeat: int, zone: str):
    """One attempt's timeline events and window: launch, boot, train, then an
    upload and shutdown (the last attempt) or an interruption (earlier ones)."""
    begin = launch + timedelta(seconds=boot)
    end_train = begin + timedelta(seconds=per)
    stop = end_train + timedelta(seconds=tail if last else 5)

    def event(t: datetime, name: str, source: str) -> dict:
        return {"time": _iso(t), "event": name, "attempt": n, "source": source}

    events = [
        event(launch, "instance_launch", "host"),
        event(launch + timedelta(seconds=boot * 0.8), "boot_done", "host"),
        event(begin, "train_start", "payload"),
        event(end_train, "train_end" if last else "interruption_notice", "payload"),
    ]
    if last:
        events.append(event(end_train + timedelta(seconds=tail / 2), "upload", "payload"))
    events.append(event(stop, "shutdown_requested", "payload") if last else event(stop, "instance_terminated", "host"))
    window = {
        "attempt": n,
        "instance_id": f"i-{n:04d}{repeat:04d}",
        "zone": zone,
        "start": _iso(begin),
        "end": _iso(stop),
        "status": "completed" if last else "interrupted",
        "train_seconds": per,
    }
    return events, window, stop


def _attempts(start, train_seconds, attempts, boot_seconds, tail_seconds, repeat, zone, spot_prices):
    """The timeline (sorted) and attempt windows of `attempts` instances in a row, 30 s apart."""
    timeline, windows = [], []
    t = start
    for n in range(1, attempts + 1):
        events, window, stop = _attempt(
            n, n == attempts, t, train_seconds / attempts, boot_seconds, tail_seconds, repeat, zone
        )
        timeline += events
        windows.append(window)
        t = stop + timedelta(seconds=30)
    for secs, price in spot_prices or []:
        timeline.append(
            {
                "time": _iso(start + timedelta(seconds=secs)),
                "event": "spot_price",
                "hourly_usd": price,
                "source": "host",
            }
        )
    timeline.sort(key=lambda e: e["time"])
    return timeline, windows


def _spread(samples_per_second: float | None) -> dict | None:
    if samples_per_second is None:
        return None
    return {
        "p10": samples_per_second * 0.97,
        "p50": samples_per_second,
        "p90": samples_per_second * 1.02,
        "stdev": samples_per_second * 0.02,
        "n": 100,
    }


def _benchmark(benchmark: str, stack: str, gpus: int, params: dict | None) -> dict:
    return {
        "name": benchmark,
        "kind": "throughput",
        "params": params or {"steps": 1000},
        "data": "synthetic",
        "precision": "fp32",
        "per_gpu_batch_size": 64,
        "global_batch_size": 64 * max(gpus, 1),
        "replicas": max(gpus, 1),
        "fingerprint": f"{stack}:{benchmark}",
    }


def _offering(o, last_window: dict, market: str) -> dict:
    """The result's offering block: the catalog entry where the last attempt ran."""
    return {
        "id": o.id,
        "provider": o.provider,
        "kind": o.kind,
        "region": (o.regions or (None,))[0],
        "zone": last_window["zone"],
        "instance_type": o.instance_type,
        "instance_id": last_window["instance_id"],
        "market": market,
    }


def make_result(
    offering_id: str = "aws/p3.2xlarge",
    benchmark: str = "resnet50",
    *,
    train_seconds: float = 3600.0,
    samples_per_second: float | None = 100.0,
    gpus_used: int | None = None,
    market: str = "on-demand",
    hourly_usd: float | None = None,
    spot_hourly_usd: float | None = None,
    price_source: str = "synthetic",
    price_as_of: str | None = None,
    start: datetime = T0,
    boot_seconds: float = 120.0,
    tail_seconds: float = 60.0,
    attempts: int = 1,
    status: str = "completed",
    run_id: str | None = None,
    stack: str | None = None,
    repeat: int = 0,
    spot_prices: list[tuple[float, float]] | None = None,
    accuracy: float | None = 0.8,
    gpu_utilization: float | None = None,
    params: dict | None = None,
) -> dict:
    """A v1 result. `attempts` > 1 splits training over that many instances
    (the earlier ones interrupted), each with its own launch and shutdown.
    `spot_prices`: (seconds after start, USD/h) spot_price events."""
    o = load_catalog().get(offering_id)
    gpus = o.gpu_count if gpus_used is None else gpus_used
    stack = stack or o.stack_name(market)
    run_id = run_id or f"{start:%Y%m%dT%H%M%SZ}-i-{abs(hash((offering_id, benchmark, repeat))) % 10**8:08d}-{benchmark}"
    zone = (o.zones or o.regions or ("x",))[0]
    timeline, windows = _attempts(start, train_seconds, attempts, boot_seconds, tail_seconds, repeat, zone, spot_prices)
    windows[-1]["status"] = status
    return new_result(
        run_id=run_id,
        stack=stack,
        status=status,
        started_at=windows[0]["start"],
        finished_at=windows[-1]["end"],
        offering=_offering(o, windows[-1], market),
        price={
            "hourly_usd": hourly_usd,
            "spot_hourly_usd": spot_hourly_usd,
            "source": price_source,
            "as_of": price_as_of or start.date().isoformat(),
            "origin": "env" if hourly_usd is not None else None,
        },
        hardware={
            "device": "GPU" if gpus else "CPU",
            "gpu_model": o.gpu_model,
            "gpu_count": gpus,
            "gpu_memory_gb": o.gpu.memory_gb if o.gpu else None,
            "driver_version": "390.30",
        },
        software={"payload_version": "0.1.0", "python": "3.11", "tensorflow": "2.15.0", "image": None},
        benchmark=_benchmark(benchmark, stack, gpus, params),
        attempts=windows,
        timeline=timeline,
        metrics={
            "train_seconds": train_seconds,
            "samples_per_second": samples_per_second,
            "samples_per_second_spread": _spread(samples_per_second),
            "final_accuracy": accuracy,
            "gpu_utilization_mean": gpu_utilization,
            "epochs_completed": 1,
            "steps_completed": 1000,
        },
    )


def demo_like_results() -> list[dict]:
    """What `make demo` collects (the four demo benchmarks on this machine at
    the demo's assumed rate), plus the same benchmarks on cloud offerings with
    long ids and price sources, an on-prem box, an offering with no price and a
    failed run: a report with every section, for layout tests."""
    local = "assumed rate for this machine (gpubench demo default, not a published price: set --hourly-usd)"
    out = []
    # the demo's own sizes for MNIST; the cloud's 1,000 steps of 64 for the others
    for bench, params, samples, sps in (
        ("mnist-mlp", {"epochs": 1, "samples": 1024}, 1024, 2600.0),
        ("mnist-cnn", {"epochs": 1, "samples": 1024}, 1024, 190.0),
        ("bilstm-sentiment", None, 64000, 128.0),
        ("resnet50", None, 64000, 2.1),
    ):
        for rep in range(2):
            out.append(
                make_result(
                    "local/this-machine",
                    bench,
                    train_seconds=samples / sps * (1 + rep / 10),
                    samples_per_second=sps,
                    hourly_usd=0.10,
                    price_source=local,
                    repeat=rep,
                    params=params,
                    accuracy=None if bench == "resnet50" else 0.91,
                )
            )
    clouds = (
        ("aws/p3.2xlarge", 1, 3.06, 30.0),
        ("gcp/n1-standard-16+4xk80", 4, None, 6.0),
        ("gcp/n1-standard-8+1xv100", 1, None, 28.0),
        ("aws/p2.xlarge", 1, 0.9, 4.0),
        ("onprem/parkopedia-4x1080ti", 4, None, 20.0),
    )
    for bench in ("bilstm-sentiment", "resnet50"):
        for i, (o, g, h, speed) in enumerate(clouds):
            for rep in range(2):
                out.append(
                    make_result(
                        o,
                        bench,
                        gpus_used=g,
                        train_seconds=64000 / (60 * speed) * (1 + rep / 20),
                        samples_per_second=60.0 * speed,
                        hourly_usd=h,
                        repeat=10 * i + rep,
                        gpu_utilization=70.0 + 5 * i,
                    )
                )
    out.append(
        make_result(
            "gcp/n1-highcpu-16",
            "bilstm-sentiment",
            gpus_used=0,
            train_seconds=1600,
            samples_per_second=40.0,
            hourly_usd=None,
            repeat=99,
        )
    )
    out.append(make_result("aws/p3.2xlarge", "resnet50", status="failed", hourly_usd=3.06, repeat=77))
    return out


# A demo run with only this machine measured: each benchmark's rate (samples/s),
# training time (s) and accuracy on synthetic data, priced with --hourly-usd.
LOCAL_RATES = {"mnist-mlp": 2600.0, "mnist-cnn": 190.0, "bilstm-sentiment": 128.0, "resnet50": 2.1}
LOCAL_SECONDS = {"mnist-mlp": 3.1, "mnist-cnn": 20.0, "bilstm-sentiment": 40.0, "resnet50": 90.0}
LOCAL_ACCURACY = {"mnist-mlp": 0.083, "mnist-cnn": 0.111, "bilstm-sentiment": 1.0, "resnet50": None}
LOCAL_HOURLY_USD = 0.40


def local_only_results() -> list[dict]:
    """What a demo leaves with only this machine measured: one run of each
    benchmark on synthetic data, priced at launch with --hourly-usd (no source recorded)."""
    return [
        make_result(
            "local/this-machine",
            bench,
            train_seconds=LOCAL_SECONDS[bench],
            samples_per_second=LOCAL_RATES[bench],
            gpus_used=0,
            hourly_usd=LOCAL_HOURLY_USD,
            price_source=None,
            accuracy=LOCAL_ACCURACY[bench],
            params={"epochs": 1, "samples": 1024},
        )
        for bench in LOCAL_RATES
    ]


# One job on seven offerings in both markets (14 configurations of a single
# workload): (offering, on-demand USD/h, hours to train on demand). Times span
# 0.07 h to 12 h and prices USD 0.21 to 55 per hour, as a real sweep's do.
MANY_OFFERINGS = (
    ("gcp/n1-standard-4+1xk80", 0.65, 12.0),
    ("aws/g4dn.xlarge", 0.526, 6.0),
    ("aws/g5.xlarge", 1.006, 3.5),
    ("aws/p3.2xlarge", 3.06, 1.5),
    ("aws/p3.8xlarge", 12.24, 0.5),
    ("aws/p4d.24xlarge", 32.77, 0.12),
    ("aws/p5.48xlarge", 55.04, 0.07),
)
SPOT_DISCOUNT = 0.4  # spot price / on-demand price in MANY_OFFERINGS
SPOT_SLOWDOWN = 1.05  # spot runs lose a little time to interruptions


def many_offerings_results() -> list[dict]:
    """resnet50 (one workload) on MANY_OFFERINGS, on demand and on spot: 14
    rows in one configuration, for chart legibility tests."""
    out = []
    for i, (offering, hourly, hours) in enumerate(MANY_OFFERINGS):
        for market in ("on-demand", "spot"):
            spot = market == "spot"
            secs = hours * 3600 * (SPOT_SLOWDOWN if spot else 1.0)
            out.append(
                make_result(
                    offering,
                    "resnet50",
                    market=market,
                    train_seconds=secs,
                    samples_per_second=64000 / secs,
                    hourly_usd=hourly,
                    spot_hourly_usd=round(hourly * SPOT_DISCOUNT, 3) if spot else None,
                    repeat=2 * i + spot,
                )
            )
    return out


def result_key(result: dict) -> str:
    from payload.layout import result_key as layout_key

    return layout_key(result["stack"], result["run_id"])


def result_bytes(result: dict) -> bytes:
    return json.dumps(result, indent=2).encode()
