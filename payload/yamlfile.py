"""The one reader of YAML a user writes (task files, stack files, schedules, Pulumi.yaml): bounded.

A few hundred bytes can expand to gigabytes through aliases, which whatever walks the value afterwards pays:
this reader refuses a document over MAX_NODES expanded nodes, one that refers to itself, or a file over
MAX_BYTES, before anything walks it.
"""

from __future__ import annotations

import reprlib
from pathlib import Path
from typing import Any

import yaml

MAX_BYTES = 1_000_000  # a task or stack file is a few kilobytes; a workdir ships the data
MAX_NODES = 100_000  # scalars, lists and mappings once aliases are expanded
QUOTE_CHARS = 80

_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxdict, _REPR.maxlist, _REPR.maxtuple = 3, 4, 4, 4
_REPR.maxstring, _REPR.maxother, _REPR.maxlong = QUOTE_CHARS, QUOTE_CHARS, QUOTE_CHARS


class YamlFileError(ValueError):
    """A YAML file that is not valid, too large or expands too far; the message names the file and the fix."""


def quote(value: Any, limit: int = QUOTE_CHARS) -> str:
    """`value!r` for an error message, at most `limit` characters: never walks a whole structure."""
    text = repr(value[:limit]) if isinstance(value, str) else _REPR.repr(value)  # a string: its prefix
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _expanded(node: yaml.Node, sizes: dict[int, int]) -> int:
    """Nodes under `node` with every alias expanded, counted once per shared node (a bomb costs its file size)."""
    key = id(node)
    if key in sizes:
        return sizes[key]
    sizes[key] = MAX_NODES + 1  # in progress: a reference back to it is a cycle, counted as too large
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for name, _ in node.value:  # a plain key given twice (merge keys `<<` aside)
            if isinstance(name, yaml.ScalarNode) and name.tag != "tag:yaml.org,2002:merge":
                if name.value in seen:
                    raise DuplicateKey(name)
                seen.add(name.value)
        size = 1 + sum(_expanded(k, sizes) + _expanded(v, sizes) for k, v in node.value)
    elif isinstance(node, yaml.SequenceNode):
        size = 1 + sum(_expanded(item, sizes) for item in node.value)
    else:
        size = 1
    sizes[key] = min(size, MAX_NODES + 1)
    return sizes[key]


class DuplicateKey(yaml.YAMLError):
    """A mapping that gives one key twice: PyYAML would keep the last value without a word."""

    def __init__(self, key: yaml.Node):
        self.problem = f"the key {quote(key.value)} is given twice; keep one"
        self.problem_mark = key.start_mark
        super().__init__(self.problem)


def _invalid(where: str, exc: yaml.YAMLError) -> YamlFileError:
    mark = getattr(exc, "problem_mark", None)
    line = f":{mark.line + 1}" if mark is not None else ""
    text = str(getattr(exc, "problem", None) or exc).splitlines()[0]
    if getattr(exc, "position", None) is not None:  # the reader's error: a character no YAML may hold
        text += f" at character {exc.position + 1}"
    problem = quote(text, 200).strip("'\"")
    return YamlFileError(f"{where}{line}: not valid YAML ({problem})")


def load_yaml(text: str, where: str) -> Any:
    """The document in `text` (`where` names it in errors), refused when it expands past MAX_NODES."""
    if len(text) > MAX_BYTES:
        raise YamlFileError(f"{where}: {len(text):,} characters, more than {MAX_BYTES:,}; keep data out of the file")
    try:  # the reader refuses a control character (a NUL, a stray binary byte) as it is made
        loader = yaml.SafeLoader(text)  # the pure-Python composer: its nodes are what _expanded counts
    except yaml.YAMLError as exc:
        raise _invalid(where, exc) from None
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if _expanded(node, {}) > MAX_NODES:
            raise YamlFileError(
                f"{where}: expands to more than {MAX_NODES:,} values through aliases (or refers to itself); "
                "write the values out or use fewer `*alias` references"
            )
        return loader.construct_document(node)
    except YamlFileError:
        raise
    except yaml.YAMLError as exc:
        raise _invalid(where, exc) from None
    except ValueError as exc:  # a value the constructor refuses, e.g. an integer of more than 4300 digits
        raise YamlFileError(f"{where}: a value cannot be read ({quote(str(exc), 120)})") from None
    except RecursionError:
        raise YamlFileError(f"{where}: nested too deeply to read; flatten the lists and mappings") from None
    finally:
        loader.dispose()


def read_yaml(path: str | Path) -> Any:
    """load_yaml of a file, its size checked first."""
    p = Path(path)
    size = p.stat().st_size
    if size > MAX_BYTES:
        raise YamlFileError(f"{p}: {size:,} bytes, more than {MAX_BYTES:,}; keep data out of the file")
    return load_yaml(p.read_text(encoding="utf-8", errors="replace"), str(p))
