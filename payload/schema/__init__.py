"""The result.json schema: one JSON Schema file, validated on every write.

Analysis imports this without TensorFlow: ``validate_result(d)`` raises
``ResultValidationError`` listing every problem with its JSON path.
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from pathlib import Path

SCHEMA_VERSION = 1
SCHEMA_PATH = Path(__file__).with_name("result.schema.json")


class ResultValidationError(ValueError):
    """A result does not match the schema; ``problems`` has one line per error."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("invalid result: " + "; ".join(problems))


@lru_cache(maxsize=1)
def load_schema() -> dict:
    return json.loads(SCHEMA_PATH.read_text())


@lru_cache(maxsize=1)
def _validator():
    """The schema compiled by jsonschema-rs (Rust: about 0.01 ms a result where the Python jsonschema
    takes 1.3, so a collect of thousands stays quick); compiling checks the schema itself."""
    import jsonschema_rs  # optional: the payload and analysis extras, not the base install

    return jsonschema_rs.validator_for(load_schema())


def non_finite(value, path: str = "") -> list[str]:
    """One problem per NaN or infinity anywhere in `value`: JSON has no such
    numbers and every median or cost computed from one would be one too."""
    if isinstance(value, float) and not math.isfinite(value):
        return [f"{path or '<root>'}: {value!r} is not a number (a failed measurement or division by zero?)"]
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in non_finite(v, f"{path}/{k}" if path else str(k))]
    if isinstance(value, (list, tuple)):
        return [p for i, v in enumerate(value) for p in non_finite(v, f"{path}/{i}" if path else str(i))]
    return []


def is_valid(result) -> bool:
    """The schema's yes or no alone, for a reader of thousands that checks numbers itself (collect's
    rows): no messages, no finite check. A no is worth a validate_result for the reasons."""
    try:
        return isinstance(result, dict) and _validator().is_valid(result)
    except (ValueError, OverflowError):  # a value JSON cannot hold
        return False


def validate_result(result: dict) -> dict:
    """Validate and return ``result``; raise ResultValidationError otherwise."""
    if not isinstance(result, dict):
        raise ResultValidationError([f"result must be an object, got {type(result).__name__}"])
    if result.get("schema_version") != SCHEMA_VERSION:
        raise ResultValidationError(
            [f"schema_version is {result.get('schema_version')!r}, this reader supports {SCHEMA_VERSION}"]
        )
    try:
        errors = sorted(_validator().iter_errors(result), key=lambda e: [str(p) for p in e.instance_path])
    except (ValueError, OverflowError) as exc:  # a value JSON cannot hold (an object, a float subclass)
        raise ResultValidationError([f"<root>: {exc}"]) from None
    problems = [f"{'/'.join(str(p) for p in e.instance_path) or '<root>'}: {e.message}" for e in errors]
    problems += non_finite(result)
    if problems:
        raise ResultValidationError(problems)
    return result
