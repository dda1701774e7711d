"""What every progress convention shares: a line's `Reading`, the line made plain, a bounded number.

Counting across epochs and steps into samples is payload.workloads.conventions.count's, the same for all."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

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
