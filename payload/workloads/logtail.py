"""The last lines of a job's output, uploaded as ``log-tail.txt`` while the job runs (for `gpubench logs`).

Rolling uploads go straight to the bucket (a failed one is replaced by the next); the final one goes through
the spooling store. Bounded in bytes: lines are cut at LOG_TAIL_LINE_CHARS, and a redrawn progress bar
(payload.workloads.process.Redrawn) keeps only its newest state, as a terminal shows it."""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable

from payload.workloads.process import Redrawn

LOG_TAIL_LINES = 200  # uploaded as log-tail.txt
LOG_TAIL_LINE_CHARS = 2000  # longer lines are cut: the tail stays under 200 x 2000 characters
UPLOAD_EVERY_SECONDS = 30.0  # rolling uploads while the job runs
TAIL_MARK = "\n--- last lines of its output ---\n"  # a failed run's error: the reason, this, its last lines


class LogTail:
    """A bounded, thread-safe line buffer with a background uploader."""

    def __init__(self, maxlen: int = LOG_TAIL_LINES):
        self._lines: collections.deque[str] = collections.deque(maxlen=maxlen)
        self._lock = threading.Lock()
        self._version = 0  # lines appended so far: a change since the last upload
        self._uploaded = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def append(self, line: str) -> None:
        """Add a line; a redrawn line replaces the redrawn line before it (one progress bar, its newest state)."""
        text = line if len(line) <= LOG_TAIL_LINE_CHARS else line[:LOG_TAIL_LINE_CHARS] + " [...]"
        with self._lock:
            if isinstance(line, Redrawn) and self._lines and isinstance(self._lines[-1], Redrawn):
                self._lines.pop()
            self._lines.append(Redrawn(text) if isinstance(line, Redrawn) else text)
            self._version += 1

    def lines(self) -> list[str]:
        with self._lock:
            return list(self._lines)

    def __len__(self) -> int:
        with self._lock:
            return len(self._lines)

    def text(self) -> bytes:
        lines = self.lines()
        return ("\n".join(lines) + "\n").encode() if lines else b""

    def upload_if_changed(self, put: Callable[[bytes], object]) -> bool:
        """Upload the tail when lines arrived since the last upload; a failed upload is retried next time."""
        with self._lock:
            version = self._version
        if version == self._uploaded:
            return False
        try:
            put(self.text())
        except Exception:  # noqa: BLE001 - a rolling copy; the final upload is the one that counts
            return False
        self._uploaded = version
        return True

    def start_uploads(self, put: Callable[[bytes], object]) -> None:
        """Upload every UPLOAD_EVERY_SECONDS until `stop_uploads`."""

        def loop() -> None:
            while not self._stop.wait(UPLOAD_EVERY_SECONDS):
                self.upload_if_changed(put)

        self._thread = threading.Thread(target=loop, name="gpubench-log-tail", daemon=True)
        self._thread.start()

    def stop_uploads(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
