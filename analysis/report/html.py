"""The report's templates (Jinja2, autoescaped: a value from the data is always text, never markup) and the blocks
they lay out: tables of cells, and figures as base64 PNG (the page loads nothing else)."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import NamedTuple

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup, escape

TEMPLATES = Path(__file__).with_name("templates")
_ENVIRONMENT = Environment(
    loader=FileSystemLoader(TEMPLATES),
    autoescape=True,
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
)


def render(template: str, **context) -> str:
    return _ENVIRONMENT.get_template(template).render(**context)


class Cell(NamedTuple):
    text: str | None  # None: a missing value, shown as a dash
    num: bool = False  # right-aligned, tabular figures


class Row(NamedTuple):
    cells: tuple[Cell, ...]
    css: str | None = None


class Table(NamedTuple):
    head: tuple[str, ...]
    rows: tuple[Row, ...]
    css: str | None = None


class Figure(NamedTuple):
    title: str
    png: str | None  # base64; None when not drawn, the caption then says why
    caption: str

    @classmethod
    def of(cls, title: str, png: bytes | None, caption: str) -> Figure:
        return cls(title, None if png is None else base64.b64encode(png).decode("ascii"), caption)


def breakable(ident: str) -> Markup:
    """An id that may wrap after "/", "+" and "-" (<wbr>), never inside a word; escaped."""
    out = str(escape(ident))
    for ch in "/+-":
        out = out.replace(ch, ch + "<wbr>")
    return Markup(out)
