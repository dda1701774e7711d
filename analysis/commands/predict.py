"""`gpubench predict TASK --measured GPU[:N]=RATE`: the candidates you did not probe, predicted from
the ones you did. A thin adapter over analysis.predict.predict.predict."""

from __future__ import annotations

from analysis.bench.run import load_task
from analysis.commands import add_command, options
from analysis.output import USD_SIGN, emit_json, print_table
from analysis.predict.calibration import ANY_FAMILY, PRECISIONS
from analysis.predict.predict import predict
from analysis.report.answer import duration
from payload import exitcodes

DESCRIPTION = """\
From the throughput your job reached on one or more GPUs (a bench probe, a full run,
or a figure you trust), predicts its throughput on every other candidate of the task
file (or --gpus) by the ratios of the GPUs' datasheet figures, weighted by how
compute- or memory-bound the job is, then its whole job's hours and billed cost under
each offering's billing rule, as `gpubench bench` extrapolates a probe.

Every figure says whether it was measured or predicted, and every prediction carries an
interval from the model's own errors on public per-GPU throughput tables (never narrower
than the spread between published software stacks). The model, the data it was
calibrated on (with sources and licenses) and its errors are named in the output and in
docs/bench-method.md (section 5). Nothing is launched and no cloud is called.

RATE is samples per second of the whole machine (N GPUs), in the unit of the task's
`work:` section. One measured GPU: the job's compute-bound share comes from a prior by
model family and precision. Two or more different GPUs: it is fitted to them.
A GPU whose datasheet figures the catalog lacks is listed as not predictable, with the reason.
"""
EPILOG = """\
examples:
  gpubench predict examples/pytorch-resnet/workload.yaml --measured T4=410
  gpubench predict task.yaml --measured T4:1=410 --measured L4:1=820 --gpus T4,L4,A100,H100,A100-80GB,L40S
  gpubench predict task.yaml --measured V100=1200 --gpus A100,H100:8 --precision mixed --family vision
  gpubench predict task.yaml --measured A100:8=9500 --spot --overhead-minutes 12 --json > predicted.json

Exit codes: 0 a prediction (candidates that cannot be predicted are listed with the reason);
2 bad task, option or rate (an unknown GPU, a rate of zero or below or not finite, a GPU given
twice with different rates), nothing predicted.
"""


def register(sub) -> None:
    p = add_command(sub, "predict", run, description=DESCRIPTION, epilog=EPILOG)
    p.add_argument("task", metavar="TASK.yaml", help="the task file: a workload spec with resources: and work:")
    p.add_argument(
        "--measured",
        action="append",
        default=[],
        metavar="GPU[:N]=RATE",
        help="a rate measured on N GPUs (default 1), samples/s of the whole machine; repeat for more GPUs",
    )
    p.add_argument("--gpus", metavar="LIST", help="the candidates instead of the task's, e.g. T4,L4,A100,H100:8")
    market = p.add_mutually_exclusive_group()
    market.add_argument("--spot", dest="spot", action="store_true", default=None, help="price on the spot market")
    market.add_argument("--on-demand", dest="spot", action="store_false", help="price on-demand (the default)")
    p.add_argument(
        "--precision", choices=PRECISIONS, default="mixed", help="the precision the job trains in (default: mixed)"
    )
    p.add_argument(
        "--family",
        default=ANY_FAMILY,
        metavar="NAME",
        help="the model family, for the prior when one GPU was measured: vision, language, recommendation, "
        f"graph; a family with few calibration tables takes every family's prior (default: {ANY_FAMILY})",
    )
    p.add_argument(
        "--overhead-minutes",
        type=float,
        default=0.0,
        metavar="N",
        help="boot, image pull and setup, added to every whole job (default 0: left out, and said so)",
    )
    p.add_argument("--json", action="store_true", help="print the prediction as JSON")


def _span(r: dict, key: str, show) -> str | None:
    """`value (low..high)`, the value alone when its interval is a point; None without a value."""
    value, low, high = r.get(key), r.get(f"{key}_low"), r.get(f"{key}_high")
    if value is None or low == high:
        return None if value is None else show(value)
    return f"{show(value)} ({'-' if low is None else show(low)}..{'unbounded' if high is None else show(high)})"


def _print(doc: dict) -> None:
    rows = (
        (
            r["offering"],
            f"{r['gpu_count']}x {r['gpu']}",
            r["basis"],
            _span(r, "samples_per_second", "{:,.1f}".format),
            _span(r, "est_hours", duration),
            _span(r, "est_usd", USD_SIGN.format),
            r.get("reason"),
        )
        for r in doc["candidates"]
    )
    print_table(rows, ("offering", "gpus", "basis", "samples/s", "est time", "est cost", "note"))
    outside = [f"{r['gpu_count']}x {r['gpu']}" for r in doc["candidates"] if any("outside" in n for n in r["notes"])]
    if outside:
        print(f"outside the calibration data, extrapolated from datasheet ratios alone: {', '.join(outside)}")
    for miss in doc["unmatched"]:
        print(f"{miss['ask']}: no offering: {miss['reason']}")
    model = doc["model"]
    loo = model["calibration"]["leave_one_out"]
    print(
        f"\npredicted by the {model['name']} model (alpha {model['alpha']:.2f}: {model['alpha_basis']}); "
        f"intervals x/{model['interval_factor']:.2f} ({model['interval_basis']}); calibrated on "
        f"{model['calibration']['rows']} published rows of {', '.join(model['calibration']['gpus'])}, "
        f"leave-one-out median error {loo['median_abs_error']:.0%}, 90th percentile {loo['p90_abs_error']:.0%}; "
        f"method: {model['method']}"
    )
    print(doc["answer"]["sentence"])


def run(args) -> int:
    doc = predict(
        load_task(args.task),
        args.measured,
        **options(args, "gpus", "spot", "precision", "family"),
        overhead_seconds=args.overhead_minutes * 60.0,
    )
    if args.json:
        emit_json(doc)
    else:
        _print(doc)
    return exitcodes.OK
