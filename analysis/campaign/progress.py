"""One view for many stacks: every line prefixed with its stack, `[aws-p3-8x] ...`, never interleaved mid-line."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import TextIO


class Printer:
    """Thread-safe line printer; `for_stack(name)` gives an on_output callback for the Automation API."""

    def __init__(self, stream: TextIO | None = None, quiet: bool = False):
        self.stream = stream
        self.quiet = quiet
        self._lock = threading.Lock()
        self.lines: list[str] = []  # everything printed, for summaries and tests

    def __call__(self, text: str) -> None:
        with self._lock:
            self.lines.append(text)
            if not self.quiet:
                print(text, file=self.stream or sys.stderr, flush=True)

    def stack(self, name: str, text: str) -> None:
        for line in str(text).rstrip("\n").splitlines() or [""]:
            if line.strip():
                self(f"[{name}] {line.rstrip()}")

    def for_stack(self, name: str) -> Callable[[str], None]:
        return lambda text: self.stack(name, text)
