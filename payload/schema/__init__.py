"""The result.json schema: one JSON Schema file, validated on every write.

Analysis imports this without TensorFlow: ``validate_result(d)`` raises
``ResultValidationError`` listing every problem with its JSON path.
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from pathlib import Path

__all__ = ["SCHEMA_VERSION", "SCHEMA_PATH", "ResultValidationError", "load_schema", "non_finite", "validate_result"]

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
    import jsonschema

    schema = load_schema()
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


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


def validate_result(result: dict) -> dict:
    """Validate and return ``result``; raise ResultValidationError otherwise."""
    if not isinstance(result, dict):
        raise ResultValidationError([f"result must be an object, got {type(result).__name__}"])
    if result.get("schema_version") != SCHEMA_VERSION:
        raise ResultValidationError(
            [f"schema_version is {result.get('schema_version')!r}, this reader supports {SCHEMA_VERSION}"]
        )
    errors = sorted(_validator().iter_errors(result), key=lambda e: list(e.absolute_path))
    problems = [f"{'/'.join(str(p) for p in e.absolute_path) or '<root>'}: {e.message}" for e in errors]
    problems += non_finite(result)
    if problems:
        raise ResultValidationError(problems)
    return result
