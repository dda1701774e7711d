"""Progress with an estimate of the time left, for every step that takes more than a few seconds.

One helper so that collect, campaign, bench and demo show progress the same way: a bar on stderr
(tqdm, from the analysis extra) with done/total, the rate and the time left. It is off when stderr
is not a terminal (scripts, CI, --json pipes, logs) and when tqdm is not installed, so it never
mixes with what a command prints on stdout and never lands in a file.
"""

from __future__ import annotations

import sys
from typing import Any, TextIO

OFF_ENV = "GPUBENCH_NO_PROGRESS"


def stderr_is_terminal(stream: TextIO | None = None) -> bool:
    """Whether progress should be shown: stderr (or `stream`) is a terminal and $GPUBENCH_NO_PROGRESS is unset."""
    import os

    stream = stream or sys.stderr
    if os.environ.get(OFF_ENV):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


class Progress:
    """A bar for `total` units of work, with the time left; every method is a no-op when off.

    `enabled=None` decides by the stream (a terminal) and by tqdm being installed. `total` may be
    unknown at first (None) and set later with `set_total`, as when a listing arrives."""

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
                from tqdm import tqdm
            except ImportError:  # the base install: no bar, the command's own lines still say what happens
                self.enabled = False
            else:
                from payload.terminal import raw_stream

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
            from payload.terminal import terminal_text

            self.bar.set_postfix_str(terminal_text(text, multiline=False), refresh=True)

    def write(self, line: str, file: TextIO | None = None) -> None:
        """Print a line to `file` (default: the bar's stream) above the bar, which is redrawn below it."""
        target = file or self.stream
        if self.bar is None:
            print(line, file=target, flush=True)
            return
        with self.bar.external_write_mode(file=self.bar.fp):
            print(line, file=target, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None
