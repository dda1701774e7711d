"""Progress conventions read from a job's output as its framework prints it, and the whole job's work.

Besides gpubench's own lines (payload.workloads.metrics): `keras`, `hf`, `tqdm` (and bars drawn like it) and
`pattern` (the task file's regular expression), one small parser each giving a `Reading`; `ProgressReader`
keeps the first that reads a count, and its `Counter` turns readings into one cumulative count the probe can
time (samples, else steps, else epochs): a step counter that goes back (or a new epoch) starts an epoch and the
steps before are added; steps become samples with the task file's `samples_per_step`. `whole_job` converts
the task file's `work`, completed from what the job printed about its size, to the unit counted."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

INT_MAX = 2**63 - 1  # what a result's integers may hold (the table stores int64)
FLOAT_MAX = 1e300  # finite, with room for the arithmetic done on it
# Terminal control sequences a bar draws with (colours, erase line, cursor moves), and OSC titles.
_CONTROL = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]|[\x00-\x08\x0b-\x1f\x7f]"
)


def plain(line: str) -> str:
    """The line as a terminal would show it, without colours and control sequences."""
    return _CONTROL.sub("", line) if ("\x1b" in line or "\x08" in line) else line


def bounded(text: str | float | int | None, *, whole: bool = False) -> float | None:
    """A number the result can store, or None: finite, within int64 for counts; never raises."""
    if text is None or isinstance(text, bool):
        return None
    if isinstance(text, str):
        text = text.strip().replace(",", "")
        if len(text) > 40:  # 40 characters hold any int64 or float the result keeps
            return None
    elif not isinstance(text, (int, float)) or (isinstance(text, int) and abs(text) > INT_MAX):
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    if not math.isfinite(value) or abs(value) > (INT_MAX if whole else FLOAT_MAX):
        return None
    return value


@dataclass(frozen=True)
class Reading:
    """What one line says about the job's progress; every field may be missing.

    step: steps (or batches) done in the current epoch, or in the whole job when nothing resets it;
    steps_per_epoch: the counter's total; epoch: the epoch the step is in, as printed;
    epochs: the job's epoch count, as printed (`Epoch 3/20`); samples: cumulative samples;
    epochs_done: cumulative (fractional) epochs; boundary: "epoch" when the line ends or starts an epoch;
    final: figures a job prints once at its end (seconds, samples_per_second)."""

    step: float | None = None
    steps_per_epoch: float | None = None
    epoch: float | None = None
    epochs: float | None = None
    samples: float | None = None
    epochs_done: float | None = None
    boundary: str | None = None
    final: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class Parser:
    """One convention: its name, a line it reads (shown when nothing matched) and its reader."""

    name: str
    expects: str
    read: Callable[[str], Reading | None]


@dataclass(frozen=True)
class Count:
    """Cumulative progress in `unit`, and the boundary the line marked (or None)."""

    value: float | None
    unit: str | None
    boundary: str | None = None


@dataclass
class Counter:
    """Counts one convention's readings; `samples_per_step`/`samples_per_epoch` come from the task file."""

    samples_per_step: float | None = None
    samples_per_epoch: float | None = None
    unit: str | None = None
    offset: float = 0.0  # steps of the epochs already over
    last_step: float | None = None
    total: float | None = None  # the counter's total with the last step
    epoch: float | None = None
    epochs: float | None = None  # the job's epoch count, as it printed it
    resets: int = 0  # epochs the counter started again
    last_done: float | None = None
    final: dict = field(default_factory=dict)

    in_eval: bool = False  # inside a run of evaluation readings: one "eval" boundary for all of them

    def feed(self, r: Reading) -> Count | None:
        if r.boundary == "eval" or self._other_bar(r):
            first, self.in_eval = not self.in_eval, True
            return Count(None, self.unit, "eval") if first and self.last_step is not None else None
        self.in_eval = False
        boundary = r.boundary
        self.final.update(r.final)
        if r.epochs is not None:
            self.epochs = r.epochs
        if r.samples is not None:
            return self._count(r.samples, "samples", boundary)
        if r.epochs_done is not None:
            if self.last_done is not None and math.floor(r.epochs_done) > math.floor(self.last_done):
                boundary = "epoch"
            self.last_done = max(r.epochs_done, self.last_done or 0.0)
            per = self.samples_per_epoch
            return self._count(r.epochs_done * (per or 1), "samples" if per else "epochs", boundary)
        new_epoch = r.epoch is not None and self.epoch is not None and r.epoch != self.epoch
        started = self.epoch is None and self.last_step is None  # the first epoch starts: nothing ended
        self.epoch = r.epoch if r.epoch is not None else self.epoch
        if r.step is None:  # a line that only marks an epoch (`Epoch 2/20`, `end of epoch`)
            if new_epoch:
                self._next_epoch()
            return Count(None, self.unit, boundary) if boundary and not started else None
        if self.last_step and (new_epoch or r.step < self.last_step):  # a counter at 0 has nothing to add:
            self._next_epoch()  # a bar that resets before it is relabelled (Lightning's) starts one epoch
            boundary = "epoch"
        self.last_step = r.step
        if r.steps_per_epoch is not None:
            self.total = r.steps_per_epoch
        per = self.samples_per_step
        return self._count((self.offset + r.step) * (per or 1), "samples" if per else "steps", boundary)

    def _other_bar(self, r: Reading) -> bool:
        """A counter with another total than the training one's: a second bar (an evaluation's)."""
        return r.step is not None and None not in (r.steps_per_epoch, self.total) and r.steps_per_epoch != self.total

    def _next_epoch(self) -> None:
        if self.last_step:
            self.offset += max(self.total or 0.0, self.last_step)
            self.resets += 1
        self.last_step = None

    def _count(self, value: float, unit: str, boundary: str | None) -> Count | None:
        self.unit = self.unit or unit
        if unit != self.unit:  # one probe, one unit
            return Count(None, self.unit, boundary) if boundary else None
        return Count(value, unit, boundary)

    def steps_per_epoch(self) -> float | None:
        """The counter's total, when it is an epoch's: it reset, or the job named its epochs."""
        return self.total if self.resets or self.epoch is not None else None

    def job_steps(self) -> float | None:
        """The counter's total when it never reset and no epoch was named: the whole job's steps."""
        return None if self.resets or self.epoch is not None else self.total


# --- keras ---------------------------------------------------------------------------------------------------

KERAS_EXPECTS = "Epoch 1/20 then ` 9/25 ━━━━━━━━━━━━━━━━━━━━ 0s 7ms/step - loss: 2.69`"
_KERAS_EPOCH = re.compile(r"^\s*Epoch (\d{1,9})/(\d{1,9})\s*$")
# The bar (verbose=1) or the one line per epoch (verbose=2, `469/469 - 2s - 5ms/step - loss: ...`).
_KERAS_BAR = re.compile(
    r"^\s*(\d{1,12})/(\d{1,12}|Unknown)\s+(?:\S*[━=.>\[\]]\S*\s+)?(?:-\s+)?\d+(?:\.\d+)?(?:s|ms|us|µs)\b.*?/(?:step|sample)"
)


def read_keras(line: str) -> Reading | None:
    """Keras 3's `model.fit` output, in a terminal or piped (examples: docs/workloads.md, "Progress and metrics"):
    `Epoch i/n` is an epoch boundary; the Progbar's `step/steps` (or `step/Unknown`; verbose=2: one line per
    epoch, `25/25 - 1s - 7ms/step - loss: 2.46`) is the step within the epoch."""
    if m := _KERAS_EPOCH.match(line):
        return Reading(epoch=bounded(m[1], whole=True), epochs=bounded(m[2], whole=True), boundary="epoch")
    if m := _KERAS_BAR.match(line):
        total = None if m[2] == "Unknown" else bounded(m[2], whole=True)
        return Reading(step=bounded(m[1], whole=True), steps_per_epoch=total)
    return None


# --- hf ------------------------------------------------------------------------------------------------------

HF_EXPECTS = "{'loss': 0.6915, 'learning_rate': 4.5e-05, 'epoch': 0.25}"
_HF_DICT = re.compile(r"^\s*\{'[a-z_]+': .*\}\s*$")
_HF_FIELD = re.compile(
    r"'(epoch|train_runtime|train_samples_per_second|train_steps_per_second)': '?([-+0-9.eE]{1,40})'?"
)
_HF_FINAL = {"train_runtime": "seconds", "train_samples_per_second": "samples_per_second"}


def read_hf(line: str) -> Reading | None:
    """The Hugging Face `Trainer`'s logged dictionaries (values strings in transformers 5, numbers in 4.x):
    `epoch` is the fraction of epochs done, crossing a whole one an epoch boundary; the final one's speed
    metrics are kept. Its progress bar (global steps of the whole job) is the tqdm convention's."""
    if not _HF_DICT.match(line):
        return None
    fields = {k: bounded(v) for k, v in _HF_FIELD.findall(line)}
    done = fields.get("epoch")
    if done is None or done < 0:
        return None
    final = tuple((_HF_FINAL[k], v) for k, v in fields.items() if k in _HF_FINAL and v is not None)
    return Reading(epochs_done=done, final=final)


# --- tqdm ----------------------------------------------------------------------------------------------------

TQDM_EXPECTS = "Epoch 1/3:  30%|███       | 3/10 [00:01<00:02,  5.02it/s]"
_TQDM_NUM = r"(\d{1,12}(?:\.\d+)?[kMG]?)"
# tqdm: `|bar| n/total [elapsed<remaining, rate]`; Rich (Lightning's RichProgressBar): `bar n/total h:mm:ss`.
_TQDM_BAR = re.compile(r"\|[^|]*\|\s*" + _TQDM_NUM + r"/" + _TQDM_NUM + r"\s*\[\d")
_TQDM_RICH = re.compile(r"[━╸╺]+\s+" + _TQDM_NUM + r"/" + _TQDM_NUM + r"\s+\d+:\d\d:\d\d")
_TQDM_EPOCH = re.compile(r"\bEpoch[ :]*(\d{1,9})(?:\s*/\s*(\d{1,9}))?", re.IGNORECASE)
# Bars of evaluation, not training (Lightning's `Validation DataLoader 0`, `Sanity Checking`, ...).
_TQDM_EVAL = re.compile(r"\b(?:Validat\w*|Sanity Check\w*|Test\w*|Predict\w*|Evaluat\w*|Eval)\b", re.IGNORECASE)
_TQDM_SCALE = {"k": 1e3, "M": 1e6, "G": 1e9}


def _tqdm_count(text: str) -> float | None:
    if text and text[-1] in _TQDM_SCALE:  # tqdm's unit_scale: 1.2k
        base = bounded(text[:-1])
        return base * _TQDM_SCALE[text[-1]] if base is not None else None
    return bounded(text, whole=True)


def read_tqdm(line: str) -> Reading | None:
    """tqdm's bar and bars drawn like it (Lightning's, the Hugging Face Trainer's, Rich's): the counter `n/total`
    is the step within an epoch when it resets each epoch, else of the whole job; an `Epoch i` (or `Epoch i/n`)
    before the bar names the epoch; a bar described as evaluation (`Validation DataLoader 0`, `Sanity Checking`,
    `Testing`, ...) is not training. Redraws end at carriage returns, which end lines here."""
    m = _TQDM_BAR.search(line) or _TQDM_RICH.search(line)
    if m is None:
        return None
    if _TQDM_EVAL.search(line[: m.start()]):
        return Reading(boundary="eval")
    epoch = _TQDM_EPOCH.search(line[: m.start()])
    return Reading(
        step=_tqdm_count(m[1]),
        steps_per_epoch=_tqdm_count(m[2]),
        epoch=bounded(epoch[1], whole=True) if epoch else None,
    )


# --- pattern: the task file's own regular expression ------------------------------------------------------

GROUPS = ("step", "steps_per_epoch", "epoch", "samples")  # the named groups read; `step` or `samples` needed
EPOCH_END = r"(?i)\bend of epoch\b"


def compile_pattern(text: str, groups: bool = True) -> re.Pattern[str]:
    """The task file's pattern (with `groups`, its named groups too), checked: ValueError names the fix."""
    try:
        rx = re.compile(text)
    except re.error as exc:
        raise ValueError(f"not a regular expression ({exc})") from None
    if not groups:
        return rx
    named = set(rx.groupindex)
    if not named & {"step", "samples"}:
        raise ValueError(
            f"no named group `step` or `samples` among {sorted(named) or 'none'}: name the counter, "
            r"e.g. (?P<step>\d+)/(?P<steps_per_epoch>\d+)"
        )
    unknown = sorted(named - set(GROUPS))
    if unknown:
        raise ValueError(f"unknown named group {unknown[0]!r}; the groups read are {', '.join(GROUPS)}")
    return rx


def pattern_parser(pattern: str, epoch_end: str | None = None) -> Parser:
    """`progress.pattern` as a convention; a line matching `progress.epoch_end` (default: `end of epoch`)
    is an epoch boundary."""
    rx, end = compile_pattern(pattern), re.compile(epoch_end or EPOCH_END)

    def read(line: str) -> Reading | None:
        if m := rx.search(line):
            return Reading(**{g: bounded(m.groupdict().get(g), whole=True) for g in GROUPS})
        return Reading(boundary="epoch") if end.search(line) else None

    return Parser("pattern", f"a line matching {pattern!r}", read)


# The built-in conventions, in the order they are tried: the most specific first (a Keras bar is not a tqdm bar).
PARSERS = {
    "keras": Parser("keras", KERAS_EXPECTS, read_keras),
    "hf": Parser("hf", HF_EXPECTS, read_hf),
    "tqdm": Parser("tqdm", TQDM_EXPECTS, read_tqdm),
}


FRAMEWORK_CONVENTIONS = (*PARSERS, "pattern")
# What looks like progress in a line no convention read: a counter `n/total`, or an epoch or step number.
_PROGRESS_LIKE = re.compile(r"\d+\s*/\s*\d+|\b(?:epoch|step|iter|iteration|batch)\b\W{0,3}\d", re.IGNORECASE)
GIVE_UP_PROGRESS_LINES = 10  # lines that look like progress, none read: the job's convention is unknown
GIVE_UP_LINES = 5000  # lines of any kind, none read as progress


class ProgressReader:
    """Lines in, counts out, from the first convention (of those named) that reads a count."""

    def __init__(
        self,
        names: tuple[str, ...],
        *,
        pattern: str | None = None,
        epoch_end: str | None = None,
        samples_per_step: float | None = None,
        samples_per_epoch: float | None = None,
    ):
        own = [pattern_parser(pattern, epoch_end)] if pattern is not None and "pattern" in names else []
        self.parsers = {p.name: p for p in [*own, *(PARSERS[n] for n in PARSERS if n in names)]}
        self.counters = {
            p.name: Counter(samples_per_step=samples_per_step, samples_per_epoch=samples_per_epoch)
            for p in self.parsers.values()
        }
        self.matched: str | None = None
        self.lines = 0
        self.progress_like = 0

    def feed(self, line: str) -> Count | None:
        """One output line: the count it reports (from the matched convention), if any."""
        self.lines += 1
        text = plain(line)
        for parser in [self.parsers[self.matched]] if self.matched else self.parsers.values():
            reading = parser.read(text)
            if reading is not None:
                count = self.counters[parser.name].feed(reading)
                if count is not None and count.value is not None:
                    self.matched = parser.name
                return count
        if _PROGRESS_LIKE.search(text):
            self.progress_like += 1
        return None

    @property
    def counter(self) -> Counter | None:
        return self.counters.get(self.matched) if self.matched else None

    def unread(self) -> bool:
        """True once it is clear no convention reads this job: many progress-like lines, none read."""
        return self.matched is None and (self.progress_like >= GIVE_UP_PROGRESS_LINES or self.lines >= GIVE_UP_LINES)

    def tried(self) -> list[tuple[str, str]]:
        """(convention, a line it reads) for each convention tried."""
        return [(p.name, p.expects) for p in self.parsers.values()]


# --- the whole job's work ----------------------------------------------------------------------------------

TASK = "the task file"


def progress_of(result: dict | None) -> dict | None:
    """The progress record a workload's result carries (benchmark.workload.reported.progress), if any."""
    workload = ((result or {}).get("benchmark") or {}).get("workload") or {}
    progress = (workload.get("reported") or {}).get("progress")
    return progress if isinstance(progress, dict) else None


def _figure(progress: dict, name: str) -> tuple[float | None, str | None]:
    item = progress.get(name)
    if isinstance(item, dict) and isinstance(item.get("value"), (int, float)) and item["value"] > 0:
        return float(item["value"]), str(item.get("from") or "the job's output")
    return None, None


def whole_job(work: Any, progress: dict | None) -> dict:
    """{"value": work in `unit`, "unit", "figures": {name: {"value", "from"}}} or {"value": None, "reason"}.

    `work` is the task file's payload.workloads.spec.Work (or None); `progress` a result's progress
    record (None: the job printed gpubench's own lines, counted in samples)."""
    unit = (progress or {}).get("unit") or "samples"
    figures: dict[str, dict] = {}
    known: dict[str, float] = {}

    def take(name: str, value: float | None, source: str | None) -> None:
        if value is not None and name not in known:
            known[name] = float(value)
            figures[name] = {"value": value, "from": source}

    for name in ("samples", "steps", "epochs", "samples_per_step", "samples_per_epoch"):
        take(name, getattr(work, name, None), TASK)
    for name in ("samples_per_step", "samples_per_epoch", "steps_per_epoch", "epochs"):
        take(name, *_figure(progress or {}, name))
    value, used = _in_unit(unit, known)
    if value is None and "steps" not in known:  # a counter that never reset counts the whole job's steps
        take("steps", *_figure(progress or {}, "job_steps"))
        value, used = _in_unit(unit, known)
    if value is None:
        given = ", ".join(f"{k}={v:g}" for k, v in known.items()) or "nothing"
        return {
            "value": None,
            "unit": unit,
            "figures": figures,
            "reason": f"the job's progress is counted in {unit} and the whole job's {unit} do not follow from "
            f"{given}: give `work` in {unit}, or the size it lacks (samples_per_step, samples_per_epoch)",
        }
    out = {"value": value, "unit": unit, "figures": {k: figures[k] for k in used}}
    unused = {k: v for k, v in figures.items() if k not in used and v["from"] == TASK}
    if unused:  # the task file said it, but it does not convert to the unit counted
        out["unused"] = unused
    return out


def _in_unit(unit: str, k: dict[str, float]) -> tuple[float | None, list[str]]:
    """The whole job in `unit` from the first way the known figures allow, and the figures it used."""
    # per unit: the ways to it, each a product of known figures (a name with "1/" divides)
    ways = {
        "samples": [
            ["samples"],
            ["steps", "samples_per_step"],
            ["epochs", "samples_per_epoch"],
            ["epochs", "steps_per_epoch", "samples_per_step"],
        ],
        "steps": [
            ["steps"],
            ["epochs", "steps_per_epoch"],
            ["samples", "1/samples_per_step"],
            ["epochs", "samples_per_epoch", "1/samples_per_step"],
        ],
        "epochs": [
            ["epochs"],
            ["samples", "1/samples_per_epoch"],
            ["steps", "1/steps_per_epoch"],
            ["steps", "samples_per_step", "1/samples_per_epoch"],
        ],
    }
    for way in ways[unit]:
        names = [w[2:] if w.startswith("1/") else w for w in way]  # not removeprefix: Python 3.8 (the legacy image)
        if all(k.get(n) for n in names):
            value = 1.0
            for w, n in zip(way, names):
                value = value / k[n] if w.startswith("1/") else value * k[n]
            return value, names
    return None, []
