"""GPUBENCH_METRICS progress lines a benchmark prints while it trains, for a probe to read (docs/workloads.md):
samples and training seconds so far, evaluation apart. `keras_callback` counts steps at batch *begin*, as the
payload's harness does (a batch-end hook makes Keras sync the device every step)."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from typing import IO, Any

from payload import frameworks
from payload.events import JSON_TOKEN
from payload.training import finite

DEFAULT_EVERY_SECONDS = 2.0


class Progress:
    """Counts the steps of one job and prints a metrics line at most every `every_seconds`."""

    def __init__(
        self,
        global_batch: int,
        every_seconds: float = DEFAULT_EVERY_SECONDS,
        out: IO[str] | None = None,
        clock: Callable[[], float] = time.perf_counter,
    ):
        self.global_batch = int(global_batch)
        self.every_seconds = float(every_seconds)
        self.out = out
        self.clock = clock
        self.steps = 0  # steps begun; all but the one running are complete
        self.epochs = 0
        self.trained = 0.0  # training seconds before the current stretch
        self.evaluated = 0.0  # evaluation seconds, apart
        self._since: float | None = None  # start of the current training stretch (None: not training)
        self._eval_since: float | None = None
        self._last_print: float | None = None
        self.last: dict[str, Any] = {}

    def training_seconds(self, now: float | None = None) -> float:
        now = self.clock() if now is None else now
        return self.trained + (now - self._since if self._since is not None else 0.0)

    def begin(self) -> None:
        """Training (re)starts: a job of several fits counts on from where the last one stopped."""
        if self._since is None:
            self._since = self.clock()
            self._last_print = self._last_print if self._last_print is not None else self._since

    def pause(self) -> None:
        """Training stops (the end of a fit): the clock stops with it."""
        if self._since is not None:
            self.trained += self.clock() - self._since
            self._since = None

    def eval_begin(self) -> None:
        self.pause()
        self._eval_since = self.clock()

    def eval_end(self) -> None:
        if self._eval_since is not None:
            self.evaluated += self.clock() - self._eval_since
            self._eval_since = None
        self.begin()

    def step(self) -> None:
        """A step begins: the ones before it are done; print when a line is due."""
        self.begin()
        now = self.clock()
        if self.steps and now - self._last_print >= self.every_seconds:
            self.emit(steps_done=self.steps, now=now)
        self.steps += 1

    def epoch_end(self, logs: dict | None = None) -> None:
        self.epochs += 1
        self.emit(steps_done=self.steps, **self._scores(logs))

    def end(self, logs: dict | None = None) -> dict[str, Any]:
        """The last line: totals, the rate over the whole run and the final scores."""
        self.pause()
        seconds = self.training_seconds()
        samples = self.steps * self.global_batch
        extra = self._scores(logs)
        if seconds > 0:
            extra["samples_per_second"] = round(samples / seconds, 3)
        return self.emit(steps_done=self.steps, batch_size=self.global_batch, **extra)

    def emit(self, *, steps_done: int, now: float | None = None, **extra: Any) -> dict[str, Any]:
        now = self.clock() if now is None else now
        self._last_print = now
        record = {
            "samples": steps_done * self.global_batch,
            "seconds": round(self.training_seconds(now), 3),
            "steps": steps_done,
            "epochs": self.epochs,
            "eval_seconds": round(self.evaluated, 3),
            **extra,
        }
        self.last = record
        print(JSON_TOKEN + json.dumps(record), file=self.out or sys.stdout, flush=True)
        return record

    @staticmethod
    def _scores(logs: dict | None) -> dict[str, float]:
        """Held-out accuracy when there is one, else training accuracy; and the loss."""
        logs = logs or {}
        accuracy = finite(logs.get("val_accuracy"))
        accuracy = finite(logs.get("accuracy")) if accuracy is None else accuracy
        scores = {"accuracy": accuracy, "loss": finite(logs.get("loss"))}
        return {k: round(v, 6) for k, v in scores.items() if v is not None}


def keras_callback(progress: Progress):
    """A Keras callback that feeds `progress`."""

    class ProgressCallback(frameworks.keras().callbacks.Callback):
        last_logs: dict = {}  # replaced per epoch, never changed in place

        def on_train_begin(self, logs=None):
            progress.begin()

        def on_train_batch_begin(self, batch, logs=None):
            progress.step()

        def on_test_begin(self, logs=None):  # validation inside fit: not training time
            progress.eval_begin()

        def on_test_end(self, logs=None):
            progress.eval_end()

        def on_train_end(self, logs=None):
            progress.pause()

        def on_epoch_end(self, epoch, logs=None):
            self.last_logs = dict(logs or {})
            progress.epoch_end(self.last_logs)

    return ProgressCallback()
