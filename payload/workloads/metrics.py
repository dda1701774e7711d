"""Metrics from a workload's output: GPUBENCH_METRICS and MLPerf logging lines (docs/workloads.md; an MLLOG
line may carry any prefix, as the MLPerf compliance checker reads them), else a framework's progress
(payload.workloads.conventions). What a job prints is bounded before it is kept."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from typing import Any

from payload.events import JSON_TOKEN, MLLOG_TOKEN
from payload.workloads.conventions import FRAMEWORK_CONVENTIONS, INT_MAX, Count, ProgressReader, bounded, plain

GPUBENCH_CONVENTIONS = ("json", "mllog")
MAX_WARNINGS = 20  # distinct warnings kept; the rest are counted
MAX_REPORTED_KEYS = 100  # GPUBENCH_METRICS keys kept in `reported`
MAX_REPORTED_CHARS = 200  # a reported string (or key) longer than this is cut
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


def _object_after(line: str, token: str, pattern: re.Pattern[str]) -> dict | None:
    """The JSON object `pattern` finds on a line holding `token`, or None (a bad JSON payload is None too)."""
    m = pattern.search(line.rstrip("\r\n")) if token in line else None
    try:
        obj = json.loads(m.group(1)) if m else None
    except (ValueError, RecursionError):  # RecursionError: thousands of nested brackets
        return None
    return obj if isinstance(obj, dict) else None


def parse_mllog_line(line: str) -> dict | None:
    rec = _object_after(line, MLLOG_TOKEN, _MLLOG_RE)
    return rec if rec is not None and "key" in rec else None


def parse_json_line(line: str) -> dict | None:
    return _object_after(line, JSON_TOKEN, _JSON_RE)


def _number(value: Any) -> float | None:
    """A number the result can store, or None (a string is no number here)."""
    return None if isinstance(value, str) else bounded(value)


def _count(value: Any) -> int | None:
    """A count (samples, epochs, steps, a batch size): a number >= 0 that fits int64, or None."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value if 0 <= value <= INT_MAX else None
    number = bounded(value, whole=True) if isinstance(value, float) else None
    return int(number) if number is not None and 0 <= number <= INT_MAX else None


def _kept(value: Any) -> Any:
    """A reported value, bounded: numbers as the result stores them, strings cut, anything else summarised."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return value if _number(value) is not None else None
    if isinstance(value, str):
        return value if len(value) <= MAX_REPORTED_CHARS else value[:MAX_REPORTED_CHARS] + "..."
    text = json.dumps(value, default=str)[: MAX_REPORTED_CHARS + 1]
    return text if len(text) <= MAX_REPORTED_CHARS else text[:MAX_REPORTED_CHARS] + "..."


class Warnings(list):
    """The result's warnings: each said once, at most MAX_WARNINGS, and how many more were left out."""

    def __init__(self) -> None:
        super().__init__()
        self._seen: set[str] = set()
        self.left_out = 0

    def add(self, kind: str, message: str) -> None:
        """`kind` says which warnings are the same (a key, a line shape): only the first is kept."""
        if kind in self._seen:
            return
        if len(self._seen) >= MAX_WARNINGS:
            self.left_out += 1
        else:
            self._seen.add(kind)
            self.append(message[:500])

    def all(self) -> list[str]:
        return list(self) + ([f"{self.left_out} more warnings left out"] if self.left_out else [])


# Ranges a job's own figures must fall in to be used: a negative time or rate, or a clock past any
# run's deadline, is a bug or a forgery, not a measurement (warned once and ignored).
# seconds: 1e8 is over three years, longer than any run may live (maxHours)
JSON_RANGES = {"seconds": (0.0, 1e8), "samples_per_second": (0.0, float("inf"))}


def _in_range(key: str, value: float | None) -> float | None:
    low, high = JSON_RANGES.get(key, (-float("inf"), float("inf")))
    return value if value is not None and low <= value <= high else None


def _json_progress(obj: dict) -> Progress | None:
    """A GPUBENCH_METRICS line with `samples` (cumulative), timed by its `seconds` when it has them."""
    samples = _count(obj.get("samples"))
    if samples is None:
        return None
    seconds = _in_range("seconds", _number(obj.get("seconds")))
    return Progress(float(samples), seconds, "json" if seconds is not None else None)


# MLPerf events that end a unit of the job's structure (a block is the epochs between evaluations).
MLLOG_COUNTS = ("train_samples", "eval_samples", "global_batch_size")  # MLLOG keys kept as the reader's fields
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
    """One reading: cumulative samples and the job's own clock, if it gave one: "json" (`seconds`, training
    seconds so far), "mllog" (`time_ms`) or None (timed on arrival). boundary: "epoch" or "eval" when the
    line also ends a unit of the job's structure; a line that marks only a boundary has `samples` None."""

    samples: float | None
    seconds: float | None
    clock: str | None
    boundary: str | None = None


@dataclass
class MetricsReader:
    """Feeds on output lines; `summary()` turns what it saw into result metrics."""

    formats: tuple[str, ...] = ("json", "mllog")
    pattern: str | None = None  # the task file's progress.pattern
    epoch_end: str | None = None
    samples_per_step: float | None = None  # from the task file: steps counted become samples
    samples_per_epoch: float | None = None
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
    warnings: Warnings = field(default_factory=Warnings)
    matched: str | None = None  # the convention whose progress the probe times
    last_count: Count | None = None

    @classmethod
    def for_spec(cls, spec: Any) -> MetricsReader:
        """The reader of a task file's job (payload.workloads.spec.WorkloadSpec): its conventions, its
        pattern, and the sizes that turn counted steps or epochs into samples (progress's, else work's)."""
        progress, work = spec.progress, spec.work
        per_step = next((x.samples_per_step for x in (progress, work) if x and x.samples_per_step is not None), None)
        return cls(
            spec.metrics,
            pattern=progress.pattern if progress else None,
            epoch_end=progress.epoch_end if progress else None,
            samples_per_step=float(per_step) if per_step is not None else None,
            samples_per_epoch=float(work.samples_per_epoch) if work and work.samples_per_epoch else None,
        )

    def __post_init__(self) -> None:
        self.progress = ProgressReader(
            tuple(f for f in self.formats if f in FRAMEWORK_CONVENTIONS),
            pattern=self.pattern,
            epoch_end=self.epoch_end,
            samples_per_step=self.samples_per_step,
            samples_per_epoch=self.samples_per_epoch,
        )

    def feed(self, line: str) -> Progress | None:
        """Read one output line; return the progress it reports (cumulative samples), if any.

        The first convention that reports progress is `matched`. gpubench's own lines (json, mllog)
        are read as they always were; a framework's progress counts only when no own line reported
        progress first, and once it has, own lines fill the summary but not the probe (one count)."""
        line = plain(line)
        progress = self._own(line)
        if progress is not None:
            name = "json" if progress.clock == "json" or JSON_TOKEN in line else "mllog"
            if self.matched is None and progress.samples is not None:
                self.matched = name
            return progress if self.matched in (None, *GPUBENCH_CONVENTIONS) else None
        if self.matched in GPUBENCH_CONVENTIONS or not self.progress.parsers:
            return None
        count = self.progress.feed(line)
        if count is None:
            return None
        if count.value is not None:
            self.matched, self.last_count = self.progress.matched, count
        return Progress(count.value, None, None, count.boundary)

    def _own(self, line: str) -> Progress | None:
        """A GPUBENCH_METRICS or MLLOG line's progress (json and mllog as they always were read)."""
        if "json" in self.formats:
            obj = parse_json_line(line)
            if obj is not None:
                self._json(obj)
                return _with_boundary(_json_progress(obj), self._json_epoch_ended(obj))
            if JSON_TOKEN in line:
                self.warnings.add(
                    "unreadable", f"unreadable GPUBENCH_METRICS line (want one JSON object): {line.strip()[:200]}"
                )
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
        counted = _count((rec.get("metadata") or {}).get("samples_count"))
        if counted is None and rec.get("key") == "epoch_stop" and self.train_samples is not None:
            counted = self.train_samples * sum(1 for e in self.epochs if e.get("stop_ms") is not None)
        return None if counted is None else Progress(float(counted), seconds, "mllog" if seconds is not None else None)

    def _json(self, obj: dict) -> None:
        self.json_lines += 1
        for key, value in obj.items():
            kind = JSON_KEYS.get(key, (None,))[0]
            if kind is not None:
                usable = _count(value) if kind is int else _in_range(key, _number(value))
                if usable is None:
                    low, high = JSON_RANGES.get(key, (None, None))
                    limit = (
                        "a count >= 0 up to 2**63-1"
                        if kind is int
                        else (f"a number from {low:g} to {high:g}" if low is not None else "a finite number")
                    )
                    self.warnings.add(key, f"GPUBENCH_METRICS {key}={repr(value)[:60]} is not {limit}; ignored")
                    continue
                self.json_values[key] = usable
                continue
            if key not in self.json_values and len(self.json_values) >= MAX_REPORTED_KEYS + len(JSON_KEYS):
                self.warnings.add(
                    "keys", f"GPUBENCH_METRICS: more than {MAX_REPORTED_KEYS} keys; later new keys ignored"
                )
                continue
            self.json_values[key[:MAX_REPORTED_CHARS]] = _kept(value)

    def _mllog(self, rec: dict) -> None:
        self.mllog_lines += 1
        key, value, meta = rec.get("key"), rec.get("value"), rec.get("metadata") or {}
        t = _count(rec.get("time_ms"))
        if key == "run_start":
            self.run_start_ms = t
        elif key == "run_stop":
            self.run_stop_ms = t
            self.run_status = meta.get("status")
        elif key in MLLOG_COUNTS and _count(value) is not None:
            setattr(self, key, _count(value))
        elif key == "eval_accuracy" and _number(value) is not None:
            self.eval_accuracy = float(value)
            n = meta.get("epoch_num")
            for e in reversed(self.epochs):
                if n is None or e["epoch"] == n:
                    e["val_acc"] = float(value)
                    break
        elif key in ("throughput", "tracked_stats"):
            stats = value if key == "tracked_stats" and isinstance(value, dict) else {}
            rate = value if key == "throughput" else stats.get("throughput", stats.get("imgs_sec"))
            self.throughput = float(rate) if _number(rate) is not None else self.throughput
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
        framework = self.matched not in (None, *GPUBENCH_CONVENTIONS)
        found = (("json", self.json_lines), ("mllog", self.mllog_complete), (self.matched, framework))
        return [name for name, seen in found if seen]

    def tried(self) -> list[tuple[str, str]]:
        """(convention, a line it reads) for every convention this reader tries, in order."""
        own = {
            "json": 'GPUBENCH_METRICS {"samples": 12800, "seconds": 10.02}',
            "mllog": ':::MLLOG {"key": "epoch_stop", "time_ms": ..., "metadata": {"epoch_num": 1}}',
        }
        return [(f, own[f]) for f in GPUBENCH_CONVENTIONS if f in self.formats] + self.progress.tried()

    def tried_text(self) -> str:
        """The conventions tried, each with a line it reads: what a message about missing progress lists."""
        return "; ".join(f"{name} (expects e.g. {line})" for name, line in self.tried())

    def unreadable(self) -> str | None:
        """Once it is clear that no convention reads the job's progress: why, with what each expected."""
        if self.matched is not None or self.json_lines or self.mllog_lines or not self.progress.unread():
            return None
        return (
            f"no progress convention reads this job's output ({self.progress.lines} lines, "
            f"{self.progress.progress_like} of them look like progress): tried "
            + self.tried_text()
            + ". Name the job's convention in `metrics:`, or describe its progress line with `progress.pattern` "
            "(docs/workloads.md)"
        )

    def missing(self) -> str | None:
        """Why no metrics were found, or None. Either declared format is enough."""
        if self.found():
            return None
        if self.progress.parsers:
            return "missing metric: " + (
                self.unreadable() or "the job printed no progress in any convention tried: " + self.tried_text()
            )
        wants = []
        if "json" in self.formats:
            wants.append('a line `GPUBENCH_METRICS {"samples_per_second": ..., "samples": ...}`')
        if "mllog" in self.formats:
            have = "" if not self.mllog_lines else f" (saw {self.mllog_lines} :::MLLOG lines but not both)"
            wants.append(f"`:::MLLOG` run_start and run_stop lines{have}")
        return "missing metric: the job printed none of " + " or ".join(wants) + " (see docs/workloads.md)"

    def epoch_rows(self) -> list[dict]:
        """epochs.csv rows from MLLOG epoch intervals."""
        return [
            {
                "epoch": e["epoch"] if isinstance(e["epoch"], int) else i,
                "elapsed": round((e["stop_ms"] - e["start_ms"]) / 1000, 3)
                if None not in (e["start_ms"], e["stop_ms"])
                else None,
                "val_acc": e.get("val_acc"),
            }
            for i, e in enumerate(self.epochs, 1)
        ]

    def summary(self, wall_seconds: float) -> dict:
        """Result metrics; JSON values win over MLLOG ones (the job said so explicitly)."""
        j = self.json_values
        if "seconds" in j:  # kept only when in range (_json)
            seconds, source = float(j["seconds"]), "GPUBENCH_METRICS seconds"
        elif self.mllog_complete and self.run_stop_ms >= self.run_start_ms:
            seconds, source = (self.run_stop_ms - self.run_start_ms) / 1000, "MLLOG run_start..run_stop"
        else:
            seconds, source = wall_seconds, "wall time of `run`"
        epochs_done = sum(1 for e in self.epochs if e.get("stop_ms") is not None) or None
        epochs = int(j["epochs"]) if "epochs" in j else epochs_done
        samples = int(j["samples"]) if "samples" in j else None
        if samples is None and self.train_samples is not None and epochs:
            samples = self.train_samples * epochs if self.train_samples * epochs <= INT_MAX else None
        counter, final = self.progress.counter, (self.progress.counter.final if self.progress.counter else {})
        if source == "wall time of `run`" and final.get("seconds") is not None:
            seconds, source = final["seconds"], f"{self.matched} train_runtime"
        last = {self.last_count.unit: _count(self.last_count.value)} if self.last_count is not None else {}
        samples = samples if samples is not None else last.get("samples")
        steps = int(j["steps"]) if "steps" in j else last.get("steps")
        if epochs is None and counter is not None and counter.epoch is not None:
            epochs = _count(counter.epoch)
        rate = float(j["samples_per_second"]) if "samples_per_second" in j else self.throughput
        rate = rate if rate is not None else final.get("samples_per_second")
        if rate is None and samples and seconds and seconds > 0:
            rate = samples / seconds
        accuracy = float(j["accuracy"]) if "accuracy" in j else self.eval_accuracy
        return {
            "train_seconds": round(seconds, 3) if seconds is not None else None,
            "samples_per_second": round(rate, 3) if rate is not None else None,
            "final_accuracy": accuracy,
            "final_loss": float(j["loss"]) if "loss" in j else None,
            "epochs_completed": epochs,
            "steps_completed": steps,
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
            kept = ("run_start_ms", "run_stop_ms", "status", *MLLOG_COUNTS, "eval_accuracy", "throughput")
            values = {k: getattr(self, "run_status" if k == "status" else k) for k in kept}
            out["mllog"] = {"lines": self.mllog_lines, **values, "epochs": len(self.epochs)}
        if self.matched not in (None, *GPUBENCH_CONVENTIONS):
            out["progress"] = self.progress_record()
        return out

    def progress_record(self) -> dict | None:
        """How the job's progress was read and what it said about the job's size, each figure with
        its source: the whole job's work is filled in from these (payload.workloads.conventions)."""
        counter = self.progress.counter
        if counter is None:
            return None
        said = f"the job's output ({self.matched})"

        def figure(value, source):
            return {"value": value, "from": source} if value is not None else None

        spe_source = "the task file (progress.samples_per_step or work.samples_per_step)"
        return {
            "convention": self.matched,
            "unit": counter.unit,
            "samples_per_step": figure(self.samples_per_step, spe_source),
            "samples_per_epoch": figure(self.samples_per_epoch, "the task file (work.samples_per_epoch)"),
            "steps_per_epoch": figure(counter.steps_per_epoch(), said),
            "job_steps": figure(counter.job_steps(), said),
            "epochs": figure(counter.epochs, said),
        }
