"""The providers' documented rules for the names, ids, tags, labels and keys a stack renders, as data:
Pulumi's mocks accept any string, a real `pulumi up` does not. Each cloud's table (infra/<cloud>/rules.py)
holds the rules, each with its source, and which input of each resource type holds which kind of value;
`violations` applies them to one rendered resource, the config checks reuse single rules (`Rule.problem`).
"""

from __future__ import annotations

import importlib
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from infra import clouds

# Pulumi auto-names a resource without an explicit name "<logical name>-<7 random hex>"
# (https://www.pulumi.com/docs/iac/concepts/resources/names/#autonaming: "Pulumi appends a
# random suffix to the logical name"); the rules see a representative suffix.
AUTONAME_SUFFIX = "-1a2b3c4"


@dataclass(frozen=True)
class Rule:
    """One documented constraint on a string; `categories` plus `extra` state a Unicode rule
    (`\\p{L}\\p{Z}\\p{N}` and a few marks), which Python's `re` cannot."""

    what: str
    source: str  # the page that states the rule
    says: str  # what it says, in short
    max_len: int
    min_len: int = 0
    pattern: Any = None  # re.Pattern, fullmatch
    categories: tuple[str, ...] = ()  # Unicode general categories by first letter ("L", "Z", "N")
    extra: str = ""
    forbidden_prefixes: tuple[str, ...] = ()
    bytes_utf8: bool = False  # the length is counted in UTF-8 bytes, not characters
    forbidden: tuple[str, ...] = ()  # exact values refused

    def problem(self, value: Any) -> str | None:
        """Why `value` breaks this rule (naming the rule and its source), or None."""
        if isinstance(value, bytes):  # binary (compressed user data): only its size can break a rule
            text, size, unit = f"<{len(value)} bytes>", len(value), "bytes"
        else:
            text = value if isinstance(value, str) else str(value)
            size = len(text.encode()) if self.bytes_utf8 else len(text)
            unit = "bytes" if self.bytes_utf8 else "characters"
        why = None
        if not self.min_len <= size <= self.max_len:
            why = f"is {size} {unit}, allowed {self.min_len}..{self.max_len}"
        elif self.pattern is not None and not self.pattern.fullmatch(text):
            why = f"does not match {self.pattern.pattern}"
        elif self.categories and (
            bad := [c for c in text if c not in self.extra and unicodedata.category(c)[0] not in self.categories]
        ):
            why = f"holds {''.join(sorted(set(bad)))!r}, outside {self.says}"
        elif any(text.lower().startswith(p) for p in self.forbidden_prefixes):
            why = f"starts with a reserved prefix ({', '.join(self.forbidden_prefixes)})"
        elif text in self.forbidden:
            why = "is a reserved value"
        return None if why is None else f"{self.what} {text[:80]!r} {why} ({self.source})"


@dataclass(frozen=True)
class Field:
    """Where a resource holds a value of a rule: `path` into its inputs (`[]` walks a list), the rule of the
    value or of a mapping's keys and values; `autoname`: absent, Pulumi names it (AUTONAME_SUFFIX)."""

    path: str
    rule: str | None = None
    key_rule: str | None = None
    value_rule: str | None = None
    autoname: bool = False
    max_items: int | None = None
    items_rule: str = ""  # what the limit on the number of items is (its source)


@dataclass(frozen=True)
class Table:
    """A cloud's rules and where each resource type holds values they govern."""

    rules: Mapping[str, Rule]
    fields: Mapping[str, tuple[Field, ...]]
    # Resource types that render no name, id, tag or key of their own (with the reason).
    exempt: Mapping[str, str] = field(default_factory=dict)
    # Extra checks over a whole resource (e.g. a JSON document inside an input).
    checks: Mapping[str, Callable[[Table, Mapping[str, Any]], list[str]]] = field(default_factory=dict)
    # Stack config keys whose values become such names (key -> rule): refused when the config is read.
    config: Mapping[str, str] = field(default_factory=dict)

    def rule(self, name: str) -> Rule:
        return self.rules[name]


def values_at(inputs: Any, path: str) -> list[Any]:
    """Every value at `path` (`tagSpecifications[].tags`) in a resource's inputs."""
    head, _, rest = path.partition(".")
    key = head.removesuffix("[]")
    if not isinstance(inputs, Mapping) or inputs.get(key) is None:
        return []
    inner = inputs[key]
    items = inner if head.endswith("[]") and isinstance(inner, list) else [inner]
    return [v for item in items for v in values_at(item, rest)] if rest else items


def violations(table: Table, typ: str, name: str, inputs: Mapping[str, Any]) -> list[str]:
    """Every rule a rendered resource breaks, each naming the resource, the input and the rule."""
    out: list[str] = []
    for f in table.fields.get(typ, ()):
        found = values_at(inputs, f.path)
        if not found and f.autoname:
            found = [name + AUTONAME_SUFFIX]
        for value in found:
            out.extend(f"{typ} {name}: {f.path}: {p}" for p in _field_problems(table, f, value))
    if (check := table.checks.get(typ)) is not None:
        out.extend(f"{typ} {name}: {p}" for p in check(table, inputs))
    return out


def _field_problems(table: Table, f: Field, value: Any) -> list[str]:
    if f.rule:
        return [p] if (p := table.rule(f.rule).problem(value)) else []
    if not isinstance(value, Mapping):
        return [f"expected a mapping of keys to values, got {type(value).__name__}"]
    out = []
    if f.max_items is not None and len(value) > f.max_items:
        out.append(f"{len(value)} entries, at most {f.max_items} allowed ({f.items_rule})")
    for key, item in value.items():
        for rule, text in ((f.key_rule, key), (f.value_rule, item)):
            if problem := rule and table.rule(rule).problem(text):
                out.append(problem)
    return out


def table_of(cloud: str) -> Table:
    """The rules table of a cloud (infra/<cloud>/rules.py)."""
    clouds.get(cloud)  # a clear error for an unknown name
    return importlib.import_module(f"infra.{cloud}.rules").TABLE
