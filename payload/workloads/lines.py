"""The job's output cut into lines, whatever it prints: bounded in length, a carriage return a line end.

A line ends at ``\\n``, ``\\r\\n`` or a lone ``\\r`` (a redrawn progress bar); one longer than MAX_LINE_BYTES
keeps its start and says how much was cut, the rest skipped as it arrives, never held in memory."""

from __future__ import annotations

import re

MAX_LINE_BYTES = 16 * 1024  # a metrics line is a few hundred bytes; a progress bar a few hundred
_END = re.compile(rb"\r\n|\r|\n")
_BLANK = re.compile(r"^[\s\x08]*$")  # what a terminal redraw leaves between two carriage returns


class Redrawn(str):
    """A line the job ended with a carriage return: on a terminal the next line overwrites it."""


class LineSplitter:
    """Bytes in, lines (str) out; `cut` counts the lines that were truncated."""

    def __init__(self, limit: int = MAX_LINE_BYTES):
        self.limit = limit
        self.cut = 0
        self._buf = bytearray()
        self._dropped = 0  # bytes of the current line beyond the limit
        self._carry = b""  # a trailing \r: a line end, or the first half of \r\n

    def feed(self, chunk: bytes) -> list[str]:
        data = self._carry + chunk
        self._carry = b""
        if data.endswith(b"\r"):
            data, self._carry = data[:-1], b"\r"
        out: list[str] = []
        pos = 0
        for end in _END.finditer(data):
            self._add(data[pos : end.start()])
            out += self._emit(redrawn=end.group() == b"\r")
            pos = end.end()
        self._add(data[pos:])
        return out

    def close(self) -> list[str]:
        """The last line, when the output ended without a line end."""
        out = self._emit(redrawn=True) if self._carry else []
        self._carry = b""
        if self._buf or self._dropped:
            out += self._emit(redrawn=False)
        return out

    def _add(self, part: bytes) -> None:
        room = self.limit - len(self._buf)
        self._buf += part[: max(room, 0)]
        self._dropped += max(len(part) - max(room, 0), 0)

    def _emit(self, *, redrawn: bool) -> list[str]:
        text = self._buf.decode("utf-8", errors="replace")
        if self._dropped:
            self.cut += 1
            text += f" [... {self._dropped} more bytes cut: lines are read up to {self.limit} bytes]"
        self._buf, self._dropped = bytearray(), 0
        if redrawn and _BLANK.match(text):
            return []  # the empty stretch before a redraw (a bar's backspaces), not a line of output
        text = text.replace("\x08", "")
        return [Redrawn(text) if redrawn else text]
