"""The runs beside the studies' published throughputs (K80, P100, V100, GTX 1080 Ti), each figure with its source
and date: the page's reference section and the answer's "this machine beside the studies' GPUs"."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import NamedTuple

import pandas as pd

from analysis.price.local import Price
from analysis.reference import studies
from analysis.reference.studies import Figure, reference_figures, work_differences
from analysis.report import plots
from analysis.report.answer import long_duration, missing, present
from payload.terminal import terminal_text

ASSUMED_PRICE_KINDS = ("local",)  # offerings priced from a rate the user (or the demo default) chose
SUBJECT = "local/this-machine"
REASON_CHARS = 300  # a probe's reason (it may quote the job's output) as one printable line of at most this


def _subject(m: pd.DataFrame) -> pd.Series | None:
    """The measured row the ratios divide by: this machine if measured, else the most-run row."""
    if m.empty:
        return None
    local = m[m["offering_id"] == SUBJECT]
    pick = local if len(local) else m
    return pick.sort_values(["runs", "value"], ascending=False).iloc[0]


def device(gpus) -> str:
    """'CPU', '1 GPU', '4 GPUs': what a run with `gpus` GPUs (None or NaN: not recorded) ran on."""
    if missing(gpus) or int(gpus) == 0:
        return "CPU"
    return f"{int(gpus)} GPU" + ("s" if int(gpus) != 1 else "")


def _measured_label(r) -> str:
    gpu_txt = device(r["gpus_used"])
    batch = r["per_gpu_batch_size"]
    batch_txt = "" if missing(batch) else f"batch {int(batch)}, "
    spot = ", spot" if r["market"] == "spot" else ""
    precision = present(r["precision"]) or "precision not recorded"
    return f"{r['offering_id']} ({gpu_txt}{spot}; {batch_txt}{precision})"


def _refs(bench: str, batches, study: str | None = None) -> list[Figure]:
    """The studies' figures of `bench` (of `study` only, if given) at a batch size a run used, if any; else all."""
    refs = [f for f in reference_figures() if f.benchmark == bench and study in (None, f.study)]
    used = {int(b) for b in batches if not missing(b)}
    return [f for f in refs if f.batch_size is None or f.batch_size in used] or refs


def plot(m: pd.DataFrame):
    """One panel per benchmark, log scale from a power of ten so bar lengths stay honest; (png, caption)."""
    figs = reference_figures()
    panels = []
    for bench in sorted(m["benchmark"].unique())[: plots.MAX_PANELS]:
        mine = m[m["benchmark"] == bench]
        refs = _refs(bench, mine["per_gpu_batch_size"])
        items = [(f.label + f" [{f.study}]", f.value, "ref", f.basis) for f in refs]
        items += [(_measured_label(r), float(r["value"]), "this", "measured") for r in mine.to_dict("records")]
        panels.append((bench, refs[0].unit if refs else "samples/s", sorted(items, key=lambda t: t[1])))
    heights = [0.28 * len(items) + 0.9 for _, _, items in panels]
    fig, axes = plots.figure(len(panels), 1, (9, sum(heights) + 0.3), gridspec_kw={"height_ratios": heights})
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
    cited = sorted({(f.study, f.source, f.published) for f in figs if f.benchmark in {p[0] for p in panels}})
    caption = "Published: " + "; ".join(f"{s}: {src} ({pub})" for s, src, pub in cited) + "."
    return plots.to_png(fig), caption


def _fmt(v, spec: str) -> str | None:
    return None if missing(v) else format(v, spec)


def _basis_word(basis: str) -> str:
    """'derived: 4 epochs x ...' -> 'derived'; the full text goes in the notes under the table."""
    return basis.split(":")[0].split(" (")[0]


def _measured_rows(mine: pd.DataFrame) -> list[dict]:
    return [
        {
            "label": _measured_label(r),
            "runs": int(r["runs"]),
            "data": present(r["data"]),
            "value": _fmt(r["value"], ",.1f"),
            "gpus": _fmt(r["gpus_used"], ".0f"),
            "batch": _fmt(r["per_gpu_batch_size"], ".0f"),
            "precision": present(r["precision"]),
        }
        for r in mine.sort_values("value", ascending=False).to_dict("records")
    ]


def _published_rows(refs: list[Figure], subject) -> list[dict]:
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
    cited = sorted({(f.study, f.source, f.published, f.date_note) for f in refs})
    notes = [f"{study}: {source}; published {published} ({date_note})" for study, source, published, date_note in cited]
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


def context(m: pd.DataFrame) -> dict:
    """What reference.html.j2 shows from query.RunsQuery.measured's table: the chart, a table per benchmark."""
    if m.empty:
        return {"figure": None, "benchmarks": []}
    png, caption = plot(m)
    figs, notes = reference_figures(), studies.workload_notes()
    return {
        "figure": plots.Chart.of("This report's runs beside the studies' published throughput", png, caption),
        "benchmarks": [_benchmark(b, m, figs, notes.get(b, "")) for b in sorted(m["benchmark"].unique())],
    }


def assumed_rates(summary: pd.DataFrame) -> str:
    """The rates assumed for offerings with no published price, as one line ("" for none)."""
    if "offering_kind" not in summary:
        return ""
    local = summary[summary["offering_kind"].astype(str).isin(ASSUMED_PRICE_KINDS)]

    def described(r) -> str:
        paid = present(r.get("prices_paid"))
        h = r["hourly_usd"]
        rate = paid or ("no rate" if h is None or h != h else f"USD {h:.2f}/h")
        return f"{r['offering_id']} at {rate} ({price_source_words(r) or 'no source recorded'})"

    # one line per rate as shown: rows of several configurations share it
    return "; ".join(sorted({described(r) for r in local.to_dict("records")}))


# --- The answer's comparison: this machine beside the studies on the same work ---


class Versus(NamedTuple):
    """A benchmark the studies publish, measured here: rates, and the study's full training here and there."""

    benchmark: str
    unit: str  # "tweets/s"
    rate: float  # this machine's median samples/s
    device: str  # "CPU" or "1 GPU"
    refs: tuple[Figure, ...]
    work: str  # "seed 000's full training (1,150,000 tweets)"
    samples: int
    here_hours: float
    here_usd: float | None
    hourly: Price | None
    there: tuple[tuple[str, float, float | None], ...]  # (GPU label, hours, USD or None)
    there_published: bool  # the study printed those hours (else: the work / the published rate)
    differs: tuple[str, ...] = ()  # how this machine's run is other work than the studies' (words); () when not
    probe: StudyProbe | None = None  # the probe of the study's configuration these figures come from, if one


class StudyProbe(NamedTuple):
    """A probe of the study's own configuration here, extrapolated to its whole job as `gpubench bench` does."""

    seconds: float  # how long the probe ran (the payload's process, start to exit)
    configuration: str  # "batch 32, fp32, synthetic data"
    hours_low: float | None  # the whole job's interval here (None: unbounded)
    hours_high: float | None
    steady: bool  # the rate was steady by the probe's end (else the interval is wide)


class NotCompared(NamedTuple):
    """A study this machine cannot run as the study did: said, and nothing compared."""

    benchmark: str
    study: str
    reason: str


# --- Probes of each study's own configuration (written by `gpubench demo` beside the results table) ---

STUDY_PROBES = "study-probes.json"  # in the results table's directory


def read_study_probes(table_dir: str | Path | None) -> tuple[dict, ...]:
    """The study probes recorded beside a results table ((): none, or unreadable)."""
    if table_dir is None:
        return ()
    try:
        doc = json.loads((Path(table_dir) / STUDY_PROBES).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ()
    probes = doc.get("probes") if isinstance(doc, dict) else None
    known = {(j.study, j.benchmark) for j in studies.study_jobs()}
    return tuple(p for p in probes or () if isinstance(p, dict) and (p.get("study"), p.get("benchmark")) in known)


def study_work(job: studies.StudyJob) -> tuple[str, int] | None:
    """(words, samples) of the study's whole job, as the first screen sets it against the study's GPUs."""
    return _full_work(job.benchmark, _refs(job.benchmark, [job.batch], job.study))


def _probed(p: dict) -> Versus | NotCompared | None:
    """This machine's whole-job estimate from a study probe (at its price) beside the study's published job."""
    bench, study = p["benchmark"], p["study"]
    if p.get("status") == "not-probed":
        return NotCompared(bench, study, terminal_text(p.get("reason") or "not probed", multiline=False)[:REASON_CHARS])
    row = p.get("row") or {}
    refs = _refs(bench, [p.get("batch")], study)
    work = _full_work(bench, refs)
    rate, hours = row.get("samples_per_second"), row.get("est_hours")
    if not refs or work is None:
        return None
    if not (isinstance(rate, (int, float)) and rate > 0 and isinstance(hours, (int, float))):
        why = p.get("reason") or row.get("reason") or "the probe measured no rate"
        why = terminal_text(why, multiline=False)[:REASON_CHARS]
        return NotCompared(bench, study, f"the probe of {study}'s configuration gave no estimate ({why})")
    usd = row.get("est_usd")
    hourly = None if p.get("hourly_usd") is None else Price(float(p["hourly_usd"]), str(p.get("price_source") or ""))
    usd = None if usd is None or hourly is None else float(usd)
    run = (p.get("precision"), p.get("batch"), p.get("data", "synthetic"))
    probe = StudyProbe(
        float(p.get("probe_seconds") or 0.0),
        str(p.get("configuration") or ""),
        row.get("est_hours_low"),
        row.get("est_hours_high"),
        p.get("status") == "measured",
    )
    return _versus(bench, refs, work, float(rate), p.get("device") or "CPU", float(hours), usd, hourly, run, probe)


def _versus(bench, refs, work, rate, device, hours, usd, hourly, run, probe=None) -> Versus:
    """`run`: (precision, batch, data) of what this machine ran, to say how it is other work."""
    # the study's GPUs on the full work: published hours and cost, else the work / the published rate
    there = tuple(
        (_short_ref(f), float(f.train_hours or work[1] / f.value / 3600), f.cost_usd)
        for f in sorted(refs, key=lambda f: -f.value)
    )
    published, differs = all(f.train_hours for f in refs), tuple(work_differences(refs[0], *run))
    return Versus(
        bench, refs[0].unit, rate, device, tuple(refs), *work, hours, usd, hourly, there, published, differs, probe
    )


def _full_work(bench: str, refs: list[Figure]) -> tuple[str, int] | None:
    """(words, samples) the study trained in full: its own figures (seed 000) or the ImageNet schedule (seed 004)."""
    unit = refs[0].unit.removesuffix("/s") if refs else "samples"
    if refs and refs[0].workload_samples:
        return f"{refs[0].study}'s full training ({refs[0].workload_samples:,} {unit})", refs[0].workload_samples
    sched = studies.imagenet_schedules().get(bench)
    if sched is None:
        return None
    study = refs[0].study if refs else "the paper"
    return f"{study}'s ImageNet training of {bench} ({sched['samples']:,} {unit})", int(sched["samples"])


def _short_ref(f: Figure) -> str:
    """'K80 (AWS p2.xlarge)', '4 x GTX 1080 Ti (estimated)': a chart label."""
    where = f.label.split(" (")[0] if f.study == "seed 000" else ""
    tail = " (estimated)" if f.basis.startswith("estimated") else ""
    return f.gpus + (f" ({where})" if where else "") + tail


def versus(
    m: pd.DataFrame, prices: dict[str, Price] | None = None, probes: tuple[dict, ...] = ()
) -> list[Versus | NotCompared]:
    """This machine's runs of the studies' benchmarks (query.RunsQuery.measured) beside them. `prices`: offering
    id -> price used; a study probed in its own configuration (`probes`) is compared from its probe instead."""
    out: list[Versus | NotCompared] = [v for v in map(_probed, probes or ()) if v is not None]
    probed = {v.benchmark for v in out}
    if m.empty:
        return out
    mine = m[m["offering_id"] == SUBJECT]
    for bench in sorted(set(mine["benchmark"].unique()) - probed):
        subject = _subject(mine[mine["benchmark"] == bench])
        refs = _refs(bench, mine.loc[mine["benchmark"] == bench, "per_gpu_batch_size"])
        work = _full_work(bench, refs)
        if subject is None or work is None or not refs:
            continue
        rate = float(subject["value"])
        hourly = (prices or {}).get(SUBJECT)
        hours = work[1] / rate / 3600
        run = (subject["precision"], subject["per_gpu_batch_size"], subject["data"])
        usd = None if hourly is None else hours * hourly.hourly_usd
        out.append(_versus(bench, refs, work, rate, device(subject["gpus_used"]), hours, usd, hourly, run))
    return out


def versus_plot(items: list[Versus]) -> tuple[bytes, str] | None:
    """The answer's chart: each study's full training here (orange) and on the studies' GPUs (grey), in hours."""
    items = [v for v in items if isinstance(v, Versus)]  # a study not compared has nothing to draw
    if not items:
        return None
    items = items[: plots.MAX_PANELS]
    rows = max(len(v.there) + 1 for v in items)
    fig, axes = plots.figure(1, len(items), (4.8 * len(items), 0.15 * rows + 0.9))
    for ax, v in zip(axes[0], items):
        bars = sorted(
            [(f"this machine ({v.device})", v.here_hours, True)] + [(n, h, False) for n, h, _ in v.there],
            key=lambda b: b[1],
        )
        for i, (_name, hours, mine) in enumerate(bars):
            ax.barh(i, hours, height=0.7, color="tab:orange" if mine else "0.6")
            ax.annotate(
                long_duration(hours), (hours, i), xytext=(3, 0), textcoords="offset points", va="center", fontsize=7
            )
        ax.set_yticks(range(len(bars)), [b[0] for b in bars], fontsize=7)
        log = plots.log_if_wide(ax, [b[1] for b in bars], "x")
        ax.set_xlim(min(b[1] for b in bars) / 2 if log else 0, max(b[1] for b in bars) * (8 if log else 1.3))
        ax.set_xlabel("hours" + (" (log scale)" if log else ""), fontsize=8)
        ax.tick_params(axis="x", labelsize=7)
        ax.set_title(v.work, fontsize=8)
    how = (
        "extrapolated from a probe of the study's own configuration as gpubench bench does"
        if all(v.probe for v in items)
        else "from its measured rate"
    )
    caption = (
        f"Time for each study's full training: this machine's {how} (orange), the studies' "
        "GPUs as published or from their published rates (grey). The reference section below has every figure "
        "with its source."
    )
    return plots.to_png(fig), caption


# --- The price a run was costed at, in words a person reads ---

ORIGIN_WORDS = {
    "env": "given at launch (--hourly-usd or GPUBENCH_HOURLY_USD / GPUBENCH_LOCAL_HOURLY_USD); no source recorded"
}


def price_source_words(r: dict) -> str | None:
    """Where a row's price came from: its recorded source, else what its origin says, else None."""
    return present(r.get("price_source")) or ORIGIN_WORDS.get(present(r.get("recorded_price_origin")) or "")


def prices_used(summary: pd.DataFrame) -> dict[str, Price]:
    """offering id -> the hourly price its costs used and where it came from (priced rows only)."""
    out = {}
    for r in summary.to_dict("records"):
        h = pd.to_numeric(r.get("hourly_usd"), errors="coerce")
        if r["offering_id"] not in out and not pd.isna(h):
            out[r["offering_id"]] = Price(float(h), price_source_words(r) or "no source recorded")
    return out
