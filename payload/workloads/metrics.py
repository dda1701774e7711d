"""Metrics from a workload's own output: MLPerf logging lines and GPUBENCH_METRICS.

Two conventions, read line by line as the job prints (docs/workloads.md):

* MLPerf logging (mlcommons/logging): ``:::MLLOG {"namespace": "", "time_ms": ...,
  "event_type": ..., "key": ..., "value": ..., "metadata": {...}}``, with any
  prefix before the token (``0: :::MLLOG``, ``[0] :::MLLOG``), as the MLPerf
  compliance checker reads them. Train time is run_stop.time_ms -
  run_start.time_ms; ``train_samples`` x epochs (``epoch_stop`` count) gives the
  samples trained; the last ``eval_accuracy`` is the final accuracy; a
  ``throughput`` point or ``tracked_stats`` value is the rate, when logged.
* One JSON object after ``GPUBENCH_METRICS `` on a line of its own, e.g.
  ``GPUBENCH_METRICS {"samples_per_second": 812.5, "samples": 50000, "accuracy": 0.91}``.
  Later lines override earlier keys, so a job may print one per epoch.

``feed`` also returns the job's progress when a line reports it (a `Progress`:
cumulative samples and, when the job timed it, when): probe mode turns these
into throughput readings (payload.workloads.probe).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field, replace
from typing import Any

__all__ = [
    "BOUNDARIES",
    "JSON_KEYS",
    "JSON_TOKEN",
    "MLLOG_BOUNDARIES",
    "MLLOG_TOKEN",
    "MetricsReader",
    "Progress",
    "parse_json_line",
    "parse_mllog_line",
]

MLLOG_TOKEN = ":::MLLOG "
JSON_TOKEN = "GPUBENCH_METRICS "
_MLLOG_RE = re.compile(r":::MLLOG (\{.*\})\s*$")
_JSON_RE = re.compile(r"^\s*(?:\S+\s+)?GPUBENCH_METRICS (\{.*\})\s*$")
# The one-line JSON convention: key -> (type, meaning). Anything else is kept under `reported`.
JSON_KEYS = {
    "samples_per_second": (float, "training throughput, samples per second over all GPUs"),
    "samples": (int, "training samples processed (all epochs, all GPUs)"),
    "seconds": (float, "training seconds, if the job times itself (default: wall time of `run`)"),
    "accuracy": (float, "final held-out accuracy, 0..1"),
    "loss": (float, "final held-out (or training) loss"),
    "epochs": (int, "epochs completed"),
    "steps": (int, "optimizer steps completed"),
    "batch_size": (int, "global batch size"),
}


def parse_mllog_line(line: str) -> dict | None:
    """One MLLOG record, or None for any other line (a bad JSON payload is None too)."""
    if MLLOG_TOKEN not in line:
        return None
    m = _MLLOG_RE.search(line.rstrip("\r\n"))
    if not m:
        return None
    try:
        rec = json.loads(m.group(1))
    except ValueError:
        return None
    if not isinstance(rec, dict) or "key" not in rec:
        return None
    return rec


def parse_json_line(line: str) -> dict | None:
    """The object of a ``GPUBENCH_METRICS {...}`` line, or None."""
    if JSON_TOKEN not in line:
        return None
    m = _JSON_RE.match(line.rstrip("\r\n"))
    if not m:
        return None
    try:
        obj = json.loads(m.group(1))
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def _json_progress(obj: dict) -> Progress | None:
    """A GPUBENCH_METRICS line with `samples` (cumulative), timed by its `seconds` when it has them."""
    samples = _number(obj.get("samples"))
    if samples is None:
        return None
    seconds = _number(obj.get("seconds"))
    return Progress(samples, seconds, "json" if seconds is not None else None)


BOUNDARIES = ("epoch", "eval")  # the job's own structure: an epoch ended, an evaluation ended
# MLPerf events that end a unit of the job's structure (a block is the epochs between evaluations).
MLLOG_BOUNDARIES = {"epoch_stop": "epoch", "block_stop": "epoch", "eval_stop": "eval"}


def _with_boundary(progress: Progress | None, boundary: str | None) -> Progress | None:
    """The reading marked with the boundary its line reports (a boundary alone is a reading without samples)."""
    if boundary is None:
        return progress
    if progress is None:
        return Progress(None, None, None, boundary)
    return replace(progress, boundary=boundary)


@dataclass(frozen=True)
class Progress:
    """One reading of how far the job got: cumulative samples, and the job's own clock if it gave one.

    clock: "json" (`seconds`, training seconds so far), "mllog" (`time_ms`, the epoch in seconds)
    or None (the line carried no time: the reader of the line times it on arrival).
    boundary: one of BOUNDARIES when the line also marks the end of a unit of the job's own
    structure (the steadiness rule and the periodic-cost measurement use these); a line that
    marks only a boundary has `samples` None."""

    samples: float | None
    seconds: float | None
    clock: str | None
    boundary: str | None = None


@dataclass
class MetricsReader:
    """Feeds on output lines; `summary()` turns what it saw into result metrics."""

    formats: tuple[str, ...] = ("json", "mllog")
    json_values: dict = field(default_factory=dict)
    json_lines: int = 0
    mllog_lines: int = 0
    run_start_ms: int | None = None
    run_stop_ms: int | None = None
    run_status: str | None = None
    train_samples: int | None = None
    eval_samples: int | None = None
    global_batch_size: int | None = None
    eval_accuracy: float | None = None
    throughput: float | None = None
    epochs: list[dict] = field(default_factory=list)  # {"epoch", "start_ms", "stop_ms", "val_acc"}
    json_epoch: float | None = None  # the last GPUBENCH_METRICS `epoch`/`epochs` seen: a change ends an epoch
    warnings: list[str] = field(default_factory=list)

    def feed(self, line: str) -> Progress | None:
        """Read one output line; return the progress it reports (cumulative samples), if any."""
        if "json" in self.formats:
            obj = parse_json_line(line)
            if obj is not None:
                self._json(obj)
                return _with_boundary(_json_progress(obj), self._json_epoch_ended(obj))
            if JSON_TOKEN in line and len(self.warnings) < 20:
                self.warnings.append(f"unreadable GPUBENCH_METRICS line (want one JSON object): {line.strip()[:200]}")
        if "mllog" in self.formats:
            rec = parse_mllog_line(line)
            if rec is not None:
                self._mllog(rec)
                return _with_boundary(self._mllog_progress(rec), MLLOG_BOUNDARIES.get(rec.get("key")))
        return None

    def _json_epoch_ended(self, obj: dict) -> str | None:
        """The boundary "epoch" when the line's `epoch` (or `epochs`) differs from the last one given."""
        value = next((_number(obj[k]) for k in ("epoch", "epochs") if _number(obj.get(k)) is not None), None)
        if value is None:
            return None
        before, self.json_epoch = self.json_epoch, value
        return "epoch" if before is not None and value != before else None

    def _mllog_progress(self, rec: dict) -> Progress | None:
        """`metadata.samples_count` (cumulative, as MLPerf's LLM logs give it), else `train_samples` x the
        epochs stopped so far at an `epoch_stop`; timed by the line's `time_ms`."""
        t = _number(rec.get("time_ms"))
        seconds = t / 1000 if t is not None else None
        counted = _number((rec.get("metadata") or {}).get("samples_count"))
        if counted is not None:
            return Progress(counted, seconds, "mllog" if seconds is not None else None)
        if rec.get("key") == "epoch_stop" and self.train_samples is not None:
            stopped = sum(1 for e in self.epochs if e.get("stop_ms") is not None)
            return Progress(float(self.train_samples * stopped), seconds, "mllog" if seconds is not None else None)
        return None

    def _json(self, obj: dict) -> None:
        self.json_lines += 1
        for key, value in obj.items():
            kind = JSON_KEYS.get(key, (None,))[0]
            if kind is not None and _number(value) is None:
                self.warnings.append(f"GPUBENCH_METRICS {key}={value!r} is not a number; ignored")
                continue
            self.json_values[key] = value

    def _mllog(self, rec: dict) -> None:
        self.mllog_lines += 1
        key, value, meta = rec.get("key"), rec.get("value"), rec.get("metadata") or {}
        t = rec.get("time_ms")
        t = int(t) if _number(t) is not None else None
        if key == "run_start":
            self.run_start_ms = t
        elif key == "run_stop":
            self.run_stop_ms = t
            self.run_status = meta.get("status")
        elif key == "train_samples" and _number(value) is not None:
            self.train_samples = int(value)
        elif key == "eval_samples" and _number(value) is not None:
            self.eval_samples = int(value)
        elif key == "global_batch_size" and _number(value) is not None:
            self.global_batch_size = int(value)
        elif key == "eval_accuracy" and _number(value) is not None:
            self.eval_accuracy = float(value)
            n = meta.get("epoch_num")
            for e in reversed(self.epochs):
                if n is None or e["epoch"] == n:
                    e["val_acc"] = float(value)
                    break
        elif key == "throughput" and _number(value) is not None:
            self.throughput = float(value)
        elif key == "tracked_stats" and isinstance(value, dict):
            rate = value.get("throughput", value.get("imgs_sec"))
            if _number(rate) is not None:
                self.throughput = float(rate)
        elif key == "epoch_start":
            self.epochs.append({"epoch": meta.get("epoch_num", len(self.epochs) + 1), "start_ms": t, "stop_ms": None})
        elif key == "epoch_stop":
            n = meta.get("epoch_num")
            open_ = [e for e in self.epochs if e["stop_ms"] is None and (n is None or e["epoch"] == n)]
            if open_:
                open_[-1]["stop_ms"] = t
            else:
                self.epochs.append(
                    {"epoch": n if n is not None else len(self.epochs) + 1, "start_ms": None, "stop_ms": t}
                )

    # -- what was found ----------------------------------------------------------
    @property
    def mllog_complete(self) -> bool:
        return self.run_start_ms is not None and self.run_stop_ms is not None

    def found(self) -> list[str]:
        out = []
        if self.json_lines:
            out.append("json")
        if self.mllog_complete:
            out.append("mllog")
        return out

    def missing(self) -> str | None:
        """Why no metrics were found, or None. Either declared format is enough."""
        if self.found():
            return None
        wants = []
        if "json" in self.formats:
            wants.append('a line `GPUBENCH_METRICS {"samples_per_second": ..., "samples": ...}`')
        if "mllog" in self.formats:
            have = "" if not self.mllog_lines else f" (saw {self.mllog_lines} :::MLLOG lines but not both)"
            wants.append(f"`:::MLLOG` run_start and run_stop lines{have}")
        return "missing metric: the job printed none of " + " or ".join(wants) + " (see docs/workloads.md)"

    def epoch_rows(self) -> list[dict]:
        """epochs.csv rows from MLLOG epoch intervals."""
        rows = []
        for i, e in enumerate(self.epochs, 1):
            elapsed = None
            if e.get("start_ms") is not None and e.get("stop_ms") is not None:
                elapsed = round((e["stop_ms"] - e["start_ms"]) / 1000, 3)
            rows.append(
                {
                    "epoch": e["epoch"] if isinstance(e["epoch"], int) else i,
                    "elapsed": elapsed,
                    "val_acc": e.get("val_acc"),
                }
            )
        return rows

    def summary(self, wall_seconds: float) -> dict:
        """Result metrics; JSON values win over MLLOG ones (the job said so explicitly)."""
        j = self.json_values
        seconds = None
        source = "wall time of `run`"
        if _number(j.get("seconds")) is not None:
            seconds, source = float(j["seconds"]), "GPUBENCH_METRICS seconds"
        elif self.mllog_complete and self.run_stop_ms >= self.run_start_ms:
            seconds, source = (self.run_stop_ms - self.run_start_ms) / 1000, "MLLOG run_start..run_stop"
        else:
            seconds = wall_seconds
        epochs_done = sum(1 for e in self.epochs if e.get("stop_ms") is not None) or None
        epochs = int(j["epochs"]) if "epochs" in j else epochs_done
        samples = int(j["samples"]) if "samples" in j else None
        if samples is None and self.train_samples is not None and epochs:
            samples = self.train_samples * epochs
        rate = float(j["samples_per_second"]) if "samples_per_second" in j else self.throughput
        if rate is None and samples and seconds and seconds > 0:
            rate = samples / seconds
        accuracy = float(j["accuracy"]) if "accuracy" in j else self.eval_accuracy
        return {
            "train_seconds": round(seconds, 3) if seconds is not None else None,
            "samples_per_second": round(rate, 3) if rate is not None else None,
            "final_accuracy": accuracy,
            "final_loss": float(j["loss"]) if "loss" in j else None,
            "epochs_completed": epochs,
            "steps_completed": int(j["steps"]) if "steps" in j else None,
            "samples_trained": samples,
            "train_samples": self.train_samples,
            "eval_samples": self.eval_samples,
            "_time_source": source,
            "_batch_size": int(j["batch_size"]) if "batch_size" in j else self.global_batch_size,
        }

    def reported(self) -> dict:
        """What the job reported, as it said it (kept in the result for the record)."""
        out: dict[str, Any] = {}
        if self.json_lines:
            out["json"] = dict(self.json_values)
        if self.mllog_lines:
            out["mllog"] = {
                "lines": self.mllog_lines,
                "run_start_ms": self.run_start_ms,
                "run_stop_ms": self.run_stop_ms,
                "status": self.run_status,
                "train_samples": self.train_samples,
                "eval_samples": self.eval_samples,
                "global_batch_size": self.global_batch_size,
                "eval_accuracy": self.eval_accuracy,
                "throughput": self.throughput,
                "epochs": len(self.epochs),
            }
        return out
