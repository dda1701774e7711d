"""The report's "Reference: published measurements" section: the runs in this
report beside the studies' published throughputs (a K80, a P100, a V100, a
GTX 1080 Ti), each figure with its source and date, so the first report
already answers "how does my machine compare?".

Also the note that says a locally priced machine's cost rests on an assumed
hourly rate, not a published price.
"""

from __future__ import annotations

import math

import pandas as pd

from analysis.reference.studies import Figure, reference_figures, workload_notes

# Offerings priced from a rate the user (or the demo default) chose.
ASSUMED_PRICE_KINDS = ("local",)
SUBJECT = "local/this-machine"


def measured(runs: pd.DataFrame) -> pd.DataFrame:
    """Completed runs of the benchmarks the studies publish, one row per
    offering x market x GPUs x batch x precision: median samples/s over repeats."""
    bench = {f.benchmark for f in reference_figures()}
    if runs.empty:
        return pd.DataFrame()
    done = runs[
        (runs["status"] == "completed")
        & runs["benchmark"].isin(bench)
        & pd.to_numeric(runs["samples_per_second"], errors="coerce").gt(0)
    ]
    if done.empty:
        return pd.DataFrame()
    keys = ["benchmark", "offering_id", "market", "gpus_used", "per_gpu_batch_size", "precision", "data"]
    done = done.assign(
        samples_per_second=pd.to_numeric(done["samples_per_second"]),
        hourly_usd=pd.to_numeric(done["hourly_usd"], errors="coerce"),
    )
    g = done.groupby(keys, dropna=False, sort=True)
    out = g.agg(
        value=("samples_per_second", "median"),
        runs=("run_id", "count"),
        hourly_usd=("hourly_usd", "median"),
        price_source=("price_source", "first"),
        device=("device", "first"),
    ).reset_index()
    return out


def _subject(m: pd.DataFrame) -> pd.Series | None:
    """The measured row the ratios divide by: this machine if measured, else the most-run row."""
    if m.empty:
        return None
    local = m[m["offering_id"] == SUBJECT]
    pick = local if len(local) else m
    return pick.sort_values(["runs", "value"], ascending=False).iloc[0]


def _measured_label(r) -> str:
    gpus = r["gpus_used"]
    gpu_txt = (
        "CPU"
        if (gpus is None or (isinstance(gpus, float) and math.isnan(gpus)) or int(gpus) == 0)
        else f"{int(gpus)} GPU" + ("s" if int(gpus) != 1 else "")
    )
    batch = r["per_gpu_batch_size"]
    batch_txt = "" if batch is None or (isinstance(batch, float) and math.isnan(batch)) else f"batch {int(batch)}, "
    spot = ", spot" if r["market"] == "spot" else ""
    return f"{r['offering_id']} ({gpu_txt}{spot}; {batch_txt}{r['precision']})"


def _comparable(refs: list[Figure], batches: set[int]) -> list[Figure]:
    """Reference figures at a batch size a run used, when there are any; else all."""
    same = [f for f in refs if f.batch_size is None or f.batch_size in batches]
    return same or refs


def plot(m: pd.DataFrame):
    """One panel per benchmark: published figures (grey; hatched when derived or
    estimated) and this report's runs (orange), log scale from a power of ten so
    bar lengths stay honest. (png, caption) or (None, why)."""
    import matplotlib.pyplot as plt

    from analysis.report.plots import MAX_PANELS, _png

    if m.empty:
        return (
            None,
            "no completed run of a benchmark the studies publish (bilstm-sentiment, resnet50, inception3, vgg16)",
        )
    figs = reference_figures()
    panels = []
    for bench in sorted(m["benchmark"].unique())[:MAX_PANELS]:
        mine = m[m["benchmark"] == bench]
        batches = {int(x) for x in mine["per_gpu_batch_size"].dropna()}
        refs = _comparable([f for f in figs if f.benchmark == bench], batches)
        items = [(f.label + f" [{f.study}]", f.value, "ref", f.basis) for f in refs]
        items += [(_measured_label(r), float(r["value"]), "this", "measured") for r in mine.to_dict("records")]
        panels.append((bench, refs[0].unit if refs else "samples/s", sorted(items, key=lambda t: t[1])))
    heights = [0.28 * len(items) + 0.9 for _, _, items in panels]
    fig, axes = plt.subplots(
        len(panels),
        1,
        figsize=(9, sum(heights) + 0.3),
        squeeze=False,
        layout="constrained",
        gridspec_kw={"height_ratios": heights},
    )
    for ax, (bench, unit, items) in zip((a[0] for a in axes), panels):
        low = 10 ** math.floor(math.log10(min(t[1] for t in items) * 0.9))
        for i, (_name, value, who, basis) in enumerate(items):
            colour = "tab:orange" if who == "this" else "0.55"
            hatch = None if who == "this" or basis == "measured" else "//"
            ax.barh(
                i, value - low, left=low, height=0.7, color=colour, hatch=hatch, edgecolor="white" if hatch else colour
            )
            ax.annotate(f"{value:,.1f}", (value, i), xytext=(3, 0), textcoords="offset points", va="center", fontsize=7)
        ax.set_yticks(range(len(items)), [t[0] for t in items], fontsize=7)
        ax.set_xscale("log")
        ax.set_xlim(low, max(t[1] for t in items) * 3)
        ax.set_xlabel(f"{unit} (log scale)", fontsize=8)
        ax.set_title(
            f"{bench}: this report (orange) beside published figures (grey; hatched = derived or estimated)", fontsize=9
        )
    studies = sorted({(f.study, f.source, f.published) for f in figs if f.benchmark in {p[0] for p in panels}})
    caption = "Published: " + "; ".join(f"{s}: {src} ({pub})" for s, src, pub in studies) + "."
    return _png(fig), caption


def _fmt(v, spec: str) -> str | None:
    """A number in `spec`, None (shown as a dash) when missing."""
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else format(v, spec)


def _basis_word(basis: str) -> str:
    """'derived: 4 epochs x ...' -> 'derived'; the full text goes in the notes under the table."""
    return basis.split(":")[0].split(" (")[0]


def _measured_rows(mine: pd.DataFrame) -> list[dict]:
    """This report's rows of one benchmark's table, fastest first."""
    return [
        {
            "label": _measured_label(r),
            "runs": int(r["runs"]),
            "data": str(r["data"]),
            "value": _fmt(r["value"], ",.1f"),
            "gpus": _fmt(r["gpus_used"], ".0f"),
            "batch": _fmt(r["per_gpu_batch_size"], ".0f"),
            "precision": str(r["precision"]),
        }
        for r in mine.sort_values("value", ascending=False).to_dict("records")
    ]


def _published_rows(refs: list[Figure], subject) -> list[dict]:
    """The studies' rows, fastest first, each with its ratio to the subject."""
    subj_value = float(subject["value"]) if subject is not None else None
    return [
        {
            "label": f.label,
            "basis": _basis_word(f.basis),
            "value": _fmt(f.value, ",.1f"),
            "gpus": str(f.gpus_used),
            "batch": "" if f.batch_size is None else str(f.batch_size),
            "precision": f.precision,
            "ratio": f"{f.value / subj_value:,.1f}" if subj_value else None,
            "other_batch": bool(
                subj_value and f.batch_size is not None and subject["per_gpu_batch_size"] != f.batch_size
            ),
            "study": f.study,
            "published": f.published,
        }
        for f in sorted(refs, key=lambda f: -f.value)
    ]


def _notes(refs: list[Figure]) -> list[str]:
    """Under a table: each study's source and date, then every basis the table shortened."""
    studies = sorted({(f.study, f.source, f.published, f.date_note) for f in refs})
    notes = [
        f"{study}: {source}; published {published} ({date_note})" for study, source, published, date_note in studies
    ]
    return notes + sorted({f.basis for f in refs if _basis_word(f.basis) != f.basis})


def _extrapolation(bench: str, refs: list[Figure], subject) -> dict | None:
    """Seed 000's whole workload on the subject, from its measured tweets/s."""
    if subject is None or bench != "bilstm-sentiment":
        return None
    rate = float(subject["value"])
    tweets = refs[0].workload_samples  # the study's tweets seen, the same for every row
    hours = tweets / rate / 3600
    hourly = subject["hourly_usd"]
    cost = "" if hourly is None or math.isnan(hourly) else f", about USD {hours * hourly:,.2f} at USD {hourly:.2f}/h"
    return {
        "rate": f"{rate:,.0f}",
        "tweets": f"{tweets:,.0f}",
        "offering": str(subject["offering_id"]),
        "hours": f"{hours:,.1f}",
        "cost": cost,
        "lo": f"{min(f.train_hours for f in refs):g}",
        "hi": f"{max(f.train_hours for f in refs):g}",
        "clo": f"{min(f.cost_usd for f in refs):g}",
        "chi": f"{max(f.cost_usd for f in refs):g}",
    }


def _benchmark(bench: str, m: pd.DataFrame, figs, covers: str) -> dict:
    """One benchmark's table, notes and extrapolation, for reference.html.j2."""
    refs = [f for f in figs if f.benchmark == bench]
    mine = m[m["benchmark"] == bench]
    subject = _subject(mine)
    return {
        "name": bench,
        "unit": refs[0].unit if refs else "samples/s",
        "subject": str(subject["offering_id"]) if subject is not None and float(subject["value"]) else None,
        "measured": _measured_rows(mine),
        "published": _published_rows(refs, subject),
        "notes": _notes(refs),
        "covers": covers,
        "extrapolation": _extrapolation(bench, refs, subject),
    }


def context(runs: pd.DataFrame) -> dict:
    """What reference.html.j2 shows: the chart and one table per benchmark the
    studies publish (no chart when no run compares)."""
    return context_of(measured(runs))


def context_of(m: pd.DataFrame) -> dict:
    """context() from `measured`'s table, however it was computed (pandas or a query)."""
    from analysis.report import Figure as Chart

    if m.empty:
        return {"figure": None, "benchmarks": []}
    png, caption = plot(m)
    figs, notes = reference_figures(), workload_notes()
    return {
        "figure": Chart.of("This report's runs beside the studies' published throughput", png, caption),
        "benchmarks": [_benchmark(b, m, figs, notes.get(b, "")) for b in sorted(m["benchmark"].unique())],
    }


def section(runs: pd.DataFrame) -> str:
    """The HTML of the reference section (the page includes the same template)."""
    from analysis.report import render

    return render("reference.html.j2", ref=context(runs))


def assumed_rates(summary: pd.DataFrame) -> str:
    """The rates someone assumed for offerings with no published price, as one
    line ("" when every cost rests on a published price)."""
    if summary.empty or "offering_kind" not in summary:
        return ""
    local = summary[summary["offering_kind"].astype(str).isin(ASSUMED_PRICE_KINDS)]
    if local.empty:
        return ""

    def described(r) -> str:
        h = r["hourly_usd"]
        rate = "no rate" if h is None or h != h else f"USD {h:.2f}/h"
        return f"{r['offering_id']} at {rate} ({r['price_source']})"

    # one line per rate as shown: rows of several configurations share it
    return "; ".join(sorted({described(r) for r in local.to_dict("records")}))


def assumed_price_note(summary: pd.DataFrame) -> str:
    """Say loudly when a cost rests on a rate someone assumed, not a published price."""
    from analysis.report import render

    text = assumed_rates(summary)
    return render("assumed_price.html.j2", assumed=text) if text else ""
