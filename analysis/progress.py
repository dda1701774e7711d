"""What a command shows while it works. `Progress`: a tqdm bar on stderr with the time left, off when stderr
is not a terminal or tqdm is not installed, so it never lands in a pipe or a file. `Printer`: lines of many
stacks, each prefixed `[stack] ` and never interleaved; each passes the terminal sanitiser, the name on one
line so a provider's or a job's text cannot forge a line of its own."""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Callable
from typing import Any, TextIO

from payload.terminal import raw_stream, terminal_text

OFF_ENV = "GPUBENCH_NO_PROGRESS"


def stderr_is_terminal(stream: TextIO | None = None) -> bool:
    """Whether progress is shown: stderr (or `stream`) is a terminal and $GPUBENCH_NO_PROGRESS is unset."""
    isatty = getattr(stream or sys.stderr, "isatty", None)
    return not os.environ.get(OFF_ENV) and bool(isatty and isatty())


class Progress:
    """A bar for `total` units (None until `set_total`), with the time left; every method is a no-op when off."""

    def __init__(
        self,
        total: float | None,
        desc: str,
        unit: str = "step",
        enabled: bool | None = None,
        stream: TextIO | None = None,
    ):
        self.stream = stream or sys.stderr
        self.enabled = stderr_is_terminal(self.stream) if enabled is None else enabled
        self.done = 0.0
        self.total = total
        self.bar: Any = None
        if self.enabled:
            try:
                from tqdm import tqdm  # optional: the analysis extra; the base install shows no bar
            except ImportError:
                self.enabled = False
            else:
                # the bar's own carriage returns redraw it: it writes under the terminal sanitiser
                raw = raw_stream(self.stream)
                self.bar = tqdm(total=total, desc=desc, unit=unit, file=raw, leave=False, dynamic_ncols=True)

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def set_total(self, total: float) -> None:
        self.total = total
        if self.bar is not None:
            self.bar.total = total
            self.bar.refresh()

    def advance(self, n: float = 1) -> None:
        self.done += n
        if self.bar is not None:
            self.bar.update(n)

    def set_done(self, done: float) -> None:
        """Move to `done` units (a count observed, not added up: finished stacks, runs)."""
        if done > self.done:
            self.advance(done - self.done)

    def note(self, text: str) -> None:
        """A short word after the bar: the current item."""
        if self.bar is not None:
            self.bar.set_postfix_str(terminal_text(text, multiline=False), refresh=True)

    def write(self, line: str, file: TextIO | None = None) -> None:
        """Print a line to `file` (default: the bar's stream) above the bar, which is redrawn below it."""
        with contextlib.nullcontext() if self.bar is None else self.bar.external_write_mode(file=self.bar.fp):
            print(line, file=file or self.stream, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


class Printer:
    """Thread-safe line printer; `for_stack(name)` gives an on_output callback for the Automation API."""

    def __init__(self, stream: TextIO | None = None, quiet: bool = False):
        self.stream = stream
        self.quiet = quiet
        self._lock = threading.Lock()
        self.lines: list[str] = []  # everything printed, for summaries and tests

    def __call__(self, text: str) -> None:
        text = terminal_text(text)
        with self._lock:
            self.lines.append(text)
            if not self.quiet:
                print(text, file=self.stream or sys.stderr, flush=True)

    def stack(self, name: str, text: str) -> None:
        """`text` as lines prefixed `[name] `, blank lines dropped."""
        prefix = f"[{terminal_text(name, multiline=False)}] "
        for line in terminal_text(str(text).rstrip("\n")).splitlines():
            if line.strip():
                self(prefix + line.rstrip())

    def for_stack(self, name: str) -> Callable[[str], None]:
        return lambda text: self.stack(name, text)
