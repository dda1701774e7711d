"""The report's "Reference: published measurements" section: the runs in this
report beside the studies' published throughputs (a K80, a P100, a V100, a
GTX 1080 Ti), each figure with its source and date, so the first report
already answers "how does my machine compare?".

Also the note that says a locally priced machine's cost rests on an assumed
hourly rate, not a published price.
"""

from __future__ import annotations

import html
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


def _fmt(v, spec: str) -> str:
    return "&ndash;" if v is None or (isinstance(v, float) and math.isnan(v)) else html.escape(format(v, spec))


def _basis_word(basis: str) -> str:
    """'derived: 4 epochs x ...' -> 'derived'; the full text goes in the notes under the table."""
    return basis.split(":")[0].split(" (")[0]


def _table(bench: str, refs: list[Figure], mine: pd.DataFrame, subject) -> str:
    subj_value = float(subject["value"]) if subject is not None else None
    subj_name = html.escape(str(subject["offering_id"])) if subj_value else None
    unit = html.escape(refs[0].unit) if refs else "samples/s"
    head = [
        "figure",
        "basis",
        f"throughput ({unit})",
        "GPUs used",
        "batch",
        "precision",
        f"published &divide; {subj_name}" if subj_name else "published &divide; this report",
        "study",
        "published",
    ]
    rows = []
    for r in mine.sort_values("value", ascending=False).to_dict("records"):
        rows.append(
            (
                "this",
                [
                    html.escape(_measured_label(r)),
                    f"measured here ({int(r['runs'])} run{'s' if r['runs'] != 1 else ''}, median, "
                    f"{html.escape(str(r['data']))} data)",
                    _fmt(r["value"], ",.1f"),
                    _fmt(r["gpus_used"], ".0f"),
                    _fmt(r["per_gpu_batch_size"], ".0f"),
                    html.escape(str(r["precision"])),
                    "",
                    "this report",
                    "",
                ],
            )
        )
    for f in sorted(refs, key=lambda f: -f.value):
        ratio = f"{f.value / subj_value:,.1f}&times;" if subj_value else "&ndash;"
        if subj_value and f.batch_size is not None and subject["per_gpu_batch_size"] != f.batch_size:
            ratio += " (other batch)"
        rows.append(
            (
                "ref",
                [
                    html.escape(f.label),
                    html.escape(_basis_word(f.basis)),
                    _fmt(f.value, ",.1f"),
                    str(f.gpus_used),
                    "" if f.batch_size is None else str(f.batch_size),
                    html.escape(f.precision),
                    ratio,
                    html.escape(f.study),
                    html.escape(f.published),
                ],
            )
        )
    body = "".join(
        f'<tr class="{cls}">'
        + "".join(f'<td class="num">{c}</td>' if i in (2, 3, 4, 6) else f"<td>{c}</td>" for i, c in enumerate(cells))
        + "</tr>"
        for cls, cells in rows
    )
    notes = []
    for study, source, published, date_note in sorted({(f.study, f.source, f.published, f.date_note) for f in refs}):
        notes.append(
            f"<li>{html.escape(study)}: {html.escape(source)}; published {html.escape(published)} "
            f"({html.escape(date_note)}).</li>"
        )
    for basis in sorted({f.basis for f in refs if _basis_word(f.basis) != f.basis}):
        notes.append(f"<li>{html.escape(basis)}.</li>")
    return (
        f'<h3>{html.escape(bench)}</h3><div class="scroll"><table class="reference"><thead><tr>'
        + "".join(f"<th>{h}</th>" for h in head)
        + f"</tr></thead><tbody>{body}</tbody></table></div>"
        + f'<ul class="note">{"".join(notes)}</ul>'
    )


def _extrapolation(bench: str, refs: list[Figure], subject) -> str:
    """Seed 000's whole workload on the subject, from its measured tweets/s."""
    if subject is None or bench != "bilstm-sentiment":
        return ""
    rate = float(subject["value"])
    tweets = refs[0].workload_samples  # the study's tweets seen, the same for every row
    hours = tweets / rate / 3600
    hourly = subject["hourly_usd"]
    cost = "" if hourly is None or math.isnan(hourly) else f", about USD {hours * hourly:,.2f} at USD {hourly:.2f}/h"
    lo, hi = min(f.train_hours for f in refs), max(f.train_hours for f in refs)
    clo, chi = min(f.cost_usd for f in refs), max(f.cost_usd for f in refs)
    return (
        f'<p class="note">Extrapolated, not measured: at {rate:,.0f} tweets/s, seed 000\'s full training '
        f"({tweets:,.0f} tweets seen) would take {html.escape(str(subject['offering_id']))} about "
        f"{hours:,.1f} h{html.escape(cost)}. The study's platforms took {lo:g}&ndash;{hi:g} h for "
        f"USD {clo:g}&ndash;{chi:g} per run.</p>"
    )


def section(runs: pd.DataFrame) -> str:
    """The HTML of the reference section, its chart embedded by the caller's _figure."""
    from analysis.report import _figure

    m = measured(runs)
    figs = reference_figures()
    parts = [
        "<h2>Reference: published measurements</h2>",
        '<p class="note">The studies this project automates, as published: throughputs copied from their '
        "tables (analysis/reference/studies.toml), each with its study, section, URL and date. Figures marked "
        "derived are computed by gpubench from printed numbers, as their basis says. Conditions differ: the "
        "studies ran GPUs with their own code (seed 004 in fp16 with tf_cnn_benchmarks); the payload runs the "
        "same architectures in Keras, and a short run on synthetic data times steady-state training only. "
        "Read the ratios as orders of magnitude, not benchmarks of record.</p>",
    ]
    if m.empty:
        parts.append(
            '<p class="empty">No completed run of bilstm-sentiment, resnet50, inception3 or vgg16 here, '
            "so nothing to put beside the published figures. <code>make demo</code> runs two of them.</p>"
        )
        return "\n".join(parts)
    png, caption = plot(m)
    parts.append(_figure("This report's runs beside the studies' published throughput", png, caption))
    notes = workload_notes()
    for bench in sorted(m["benchmark"].unique()):
        refs = [f for f in figs if f.benchmark == bench]
        subject = _subject(m[m["benchmark"] == bench])
        parts.append(_table(bench, refs, m[m["benchmark"] == bench], subject))
        parts.append(f'<p class="note">What the published figure covers: {html.escape(notes.get(bench, ""))}.</p>')
        parts.append(_extrapolation(bench, refs, subject))
    return "\n".join(parts)


def assumed_price_note(summary: pd.DataFrame) -> str:
    """Say loudly when a cost rests on a rate someone assumed, not a published price."""
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
    text = "; ".join(sorted({described(r) for r in local.to_dict("records")}))
    return (
        f'<p class="assumption"><strong>Assumed price.</strong> {html.escape(text)}. This machine has no '
        "published price: its costs below are only as good as that rate. Set your own with "
        '<code>make demo DEMO_ARGS="--hourly-usd 0.25"</code> or <code>GPUBENCH_LOCAL_HOURLY_USD</code>.</p>'
    )
