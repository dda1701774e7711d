"""JSON through orjson when installed (several times faster for collect's tens of thousands of documents),
else the json module, which also takes what orjson refuses (NaN, Infinity, integers past 64 bits). Any
bytes read raise ValueError or return: brackets nested too deep are a `NestedTooDeeply`, a ValueError."""

from __future__ import annotations

import json

try:
    import orjson
except ImportError:  # the json module alone: slower, same objects
    orjson = None


class NestedTooDeeply(ValueError):
    """A document nested past the parser's stack (orjson stops at 1,024 levels; json at the recursion limit)."""


def _stdlib(data):
    try:
        return json.loads(data if isinstance(data, str | bytes | bytearray) else bytes(data))
    except RecursionError:
        raise NestedTooDeeply("nested too deeply to read (thousands of levels of brackets)") from None


def loads_finite(data) -> tuple[object, bool]:
    """(parsed JSON, True when it cannot hold NaN or infinity): orjson refuses
    both (NaN, Infinity, 1e400), so only the json module's reading can return them."""
    if orjson is None:
        return _stdlib(data), False
    try:
        return orjson.loads(data), True
    except orjson.JSONDecodeError:
        return _stdlib(data), False


def loads(data):
    return loads_finite(data)[0]


def dumps(obj) -> bytes:
    if orjson is not None:
        try:
            return orjson.dumps(obj)
        except TypeError:  # NaN is fine for orjson (null); huge integers are not
            pass
    return json.dumps(obj, separators=(",", ":")).encode()
