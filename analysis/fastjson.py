"""JSON through orjson when installed (the `analysis` extra), else the json
module: collect parses and stores tens of thousands of documents, and orjson
does it several times faster into equal objects. What orjson refuses (NaN,
Infinity, integers past 64 bits) the json module still reads and writes."""

from __future__ import annotations

import json

try:
    import orjson
except ImportError:  # the json module alone: slower, same objects
    orjson = None


def _stdlib(data):
    return json.loads(data if isinstance(data, str | bytes | bytearray) else bytes(data))


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
    """`data` (str, bytes or a buffer) parsed."""
    return loads_finite(data)[0]


def dumps(obj) -> bytes:
    """Compact JSON bytes."""
    if orjson is not None:
        try:
            return orjson.dumps(obj)
        except TypeError:  # NaN is fine for orjson (null); huge integers are not
            pass
    return json.dumps(obj, separators=(",", ":")).encode()
