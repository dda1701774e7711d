"""Timeline events and MLPerf-style ``:::MLLOG`` lines (so existing log tooling can read runs).

The timeline is what cost accounting needs beyond train time: boot, setup, upload and idle are billed too
(SkyPilot #1644); the host's events are merged in, so one ``events.jsonl`` covers launch to shutdown.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from payload.timestamps import iso, parse_iso

MLLOG_TOKEN = ":::MLLOG "  # the payload writes these lines and reads a workload's (payload.workloads.metrics)
JSON_TOKEN = "GPUBENCH_METRICS "  # a job's progress line (payload.benchmarks.progress writes one)
# MLPerf's interval keys, `<name>_start` .. `<name>_stop`; any other key is a point in time.
_EDGES = (("start", "INTERVAL_START"), ("stop", "INTERVAL_END"))
_MLLOG_EVENT_TYPE = {f"{name}_{edge}": kind for name in ("run", "epoch", "block") for edge, kind in _EDGES}


def note(message: str) -> None:
    """A line of the payload's own on stderr (the container log)."""
    print(f"[gpubench] {message}", file=sys.stderr, flush=True)


def mllog(key: str, value=None, metadata: dict | None = None) -> str:
    """Print (and return) one ``:::MLLOG`` line."""
    record = {
        "namespace": "",
        "time_ms": int(time.time() * 1000),
        "event_type": _MLLOG_EVENT_TYPE.get(key, "POINT_IN_TIME"),
        "key": key,
        "value": value,
        "metadata": {"file": "payload", "lineno": 0, **(metadata or {})},
    }
    line = MLLOG_TOKEN + json.dumps(record, default=str)
    print(line, flush=True)
    return line


class Timeline:
    """The events of one run (all attempts)."""

    def __init__(self, echo: bool = False):  # echo: each event also a `note` line
        self.attempt = 1
        self.events: list[dict] = []
        self.echo = echo

    def add(self, event: str, ts: float | None = None, **fields) -> dict:
        record = {"time": iso(ts), "event": event, "attempt": self.attempt, "source": "payload", **fields}
        self.events.append(record)
        if self.echo:
            note(f"{record['time']} {event} " + " ".join(f"{k}={v}" for k, v in fields.items()))
        return record

    def extend(self, events: list[dict]) -> None:
        """Add events from an earlier attempt (checkpoint state)."""
        seen = {json.dumps(e, sort_keys=True) for e in self.events}
        self.events.extend(e for e in events if json.dumps(e, sort_keys=True) not in seen)

    def merge_host_events(self, path: str | Path | None) -> list[str]:
        """Merge the host's events.jsonl (a JSON object with ``event`` and ``time`` a line); warnings for the rest."""
        if not path:
            return []
        try:
            text = Path(path).read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return [f"GPUBENCH_HOST_EVENTS={path} does not exist; host events missing from timeline"]
        except OSError as exc:
            return [f"GPUBENCH_HOST_EVENTS={path} cannot be read ({exc}); host events missing from timeline"]
        warnings, records = [], []
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
                if not isinstance(rec, dict):
                    raise TypeError(f"a JSON object is expected, not {type(rec).__name__}")
                raw = rec["time"]
                # normalised to UTC "...Z": the result schema and every reader expect it
                ts = iso(parse_iso(raw) if isinstance(raw, str) else float(raw))
                attempt = int(rec.get("attempt", self.attempt))
                records.append({**rec, "time": ts, "event": str(rec["event"]), "attempt": attempt, "source": "host"})
            except (ValueError, KeyError, TypeError, OverflowError, OSError) as exc:
                warnings.append(f"{path}:{n}: skipped host event ({exc})")
        self.extend(records)
        return warnings

    def ordered(self) -> list[dict]:
        return sorted(self.events, key=lambda e: (parse_iso(e["time"]), e.get("attempt", 0)))

    def to_jsonl(self) -> bytes:
        return "".join(json.dumps(e, default=str) + "\n" for e in self.ordered()).encode()
