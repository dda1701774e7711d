"""One view for many stacks: every line prefixed with its stack, `[aws-p3-8x] ...`, never interleaved mid-line.

A stack's lines quote what its provider, its job or a manifest wrote: each passes the terminal
sanitiser (payload.terminal) here, the name kept on one line so it cannot forge a line of its own."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import TextIO

from payload.terminal import terminal_text


def stack_lines(name: str, text: str) -> list[str]:
    """`text` as lines prefixed `[name] `, blank lines dropped, every line made safe for a terminal."""
    prefix = f"[{terminal_text(name, multiline=False)}] "
    lines = terminal_text(str(text).rstrip("\n")).splitlines()
    return [prefix + line.rstrip() for line in lines if line.strip()]


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
        for line in stack_lines(name, text):
            self(line)

    def for_stack(self, name: str) -> Callable[[str], None]:
        return lambda text: self.stack(name, text)
