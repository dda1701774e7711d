"""What every progress convention shares: a line's `Reading`, the line made plain, bounded numbers, a `Counter`.

The Counter turns readings into one cumulative count the probe can time (samples, else steps, else epochs):
a step counter that goes back (or a new epoch) starts an epoch and the steps before are added; steps become
samples with the task file's `samples_per_step`; what the job printed about its own size is kept."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field

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
        if not text or len(text) > 40:  # 40 characters hold any int64 or float the result keeps
            return None
        try:
            value = float(text)
        except ValueError:
            return None
    elif isinstance(text, int):
        if abs(text) > INT_MAX:
            return None
        value = float(text)
    elif isinstance(text, float):
        value = text
    else:
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
            if self.samples_per_epoch:
                return self._count(r.epochs_done * self.samples_per_epoch, "samples", boundary)
            return self._count(r.epochs_done, "epochs", boundary)
        if r.step is None:  # a line that only marks an epoch (`Epoch 2/20`, `end of epoch`)
            if self.epoch is None and self.last_step is None:
                boundary = None  # the first epoch starts: nothing ended
            if r.epoch is not None and self.epoch is not None and r.epoch != self.epoch:
                self._next_epoch()
            if r.epoch is not None:
                self.epoch = r.epoch
            return Count(None, self.unit, boundary) if boundary else None
        new_epoch = r.epoch is not None and self.epoch is not None and r.epoch != self.epoch
        if self.last_step and (new_epoch or r.step < self.last_step):  # a counter at 0 has nothing to add:
            self._next_epoch()  # a bar that resets before it is relabelled (Lightning's) starts one epoch
            boundary = "epoch"
        if r.epoch is not None:
            self.epoch = r.epoch
        self.last_step = r.step
        if r.steps_per_epoch is not None:
            self.total = r.steps_per_epoch
        steps = self.offset + r.step
        if self.samples_per_step:
            return self._count(steps * self.samples_per_step, "samples", boundary)
        return self._count(steps, "steps", boundary)

    def _other_bar(self, r: Reading) -> bool:
        """A counter with another total than the training one's: a second bar (an evaluation's)."""
        return (
            r.step is not None
            and r.steps_per_epoch is not None
            and self.total is not None
            and r.steps_per_epoch != self.total
        )

    def _next_epoch(self) -> None:
        if self.last_step:
            self.offset += max(self.total or 0.0, self.last_step)
            self.resets += 1
        self.last_step = None

    def _count(self, value: float, unit: str, boundary: str | None) -> Count | None:
        if self.unit is None:
            self.unit = unit
        if unit != self.unit:  # one probe, one unit
            return Count(None, self.unit, boundary) if boundary else None
        return Count(value, unit, boundary)

    def steps_per_epoch(self) -> float | None:
        """The counter's total, when it is an epoch's: it reset, or the job named its epochs."""
        if self.total is None or not (self.resets or self.epoch is not None):
            return None
        return self.total

    def job_steps(self) -> float | None:
        """The counter's total when it never reset and no epoch was named: the whole job's steps."""
        if self.total is None or self.resets or self.epoch is not None:
            return None
        return self.total
