"""What reaches a terminal: text from a bucket, a job or a manifest never carries control characters.

Printed raw, an escape sequence could clear the screen, retitle the window, set the clipboard (OSC 52) or
reorder what is shown (bidi overrides): `terminal_text` makes C0 and C1 controls, DEL, lone surrogates, line
separators and bidi controls visible escapes; `safe_terminal()` puts every write of a command through it.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterable, Iterator
from typing import Any, TextIO

# Bidi embeddings, overrides and isolates (Unicode TR9) and the Arabic letter mark: they reorder text.
BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
LINE_SEPARATORS = "\u2028\u2029"
NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}
_CONTROLS = [*range(0x20), 0x7F, *range(0x80, 0xA0), *map(ord, BIDI + LINE_SEPARATORS), *range(0xD800, 0xE000)]
SINGLE_LINE = {c: NAMED.get(chr(c)) or (f"\\x{c:02x}" if c <= 0xFF else f"\\u{c:04x}") for c in _CONTROLS}
MULTI_LINE = {**SINGLE_LINE, ord("\t"): "\t", ord("\n"): "\n", ord("\r"): "\n"}


def terminal_text(text: Any, multiline: bool = True) -> str:
    """`text` (anything: None is "None") with every control character a visible escape; `multiline` keeps
    newlines and tabs (a carriage return ends the line), else the text stays on one line."""
    text = str(text)
    if multiline:
        return text.replace("\r\n", "\n").translate(MULTI_LINE)
    return text.translate(SINGLE_LINE)


class SafeStream:
    """A text stream whose every write passes `terminal_text`."""

    def __init__(self, stream: TextIO):
        self.raw = stream

    def write(self, text: str) -> int:
        self.raw.write(terminal_text(text))
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.raw, name)


def raw_stream(stream: Any) -> Any:
    """The stream under a SafeStream (for the progress bar's own redraws), else `stream` itself."""
    while isinstance(stream, SafeStream):
        stream = stream.raw
    return stream


@contextlib.contextmanager
def safe_terminal() -> Iterator[None]:
    """Within it, whatever is printed to stdout and stderr passes `terminal_text`; the streams are restored after."""
    saved = sys.stdout, sys.stderr
    wrap = lambda stream: None if stream is None else SafeStream(raw_stream(stream))  # noqa: E731 - no stream: none
    sys.stdout, sys.stderr = wrap(sys.stdout), wrap(sys.stderr)
    try:
        yield
    finally:
        for wrapper in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                wrapper.flush()
        sys.stdout, sys.stderr = saved
