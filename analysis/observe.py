"""What the results bucket says about one stack: its runs since the launch, their results, the last event.

Lists `runs/<stack>/` once. A run directory with `result.json` is a result (status,
start/end, and the time of its `upload` event from the result's own timeline); one
without is in progress, and its newest event comes from `events.jsonl` or the
checkpoint's `state.json` timeline. Runs that started before this campaign's
launch of the stack (minus clock skew) belong to an earlier launch and are ignored.
Unreadable files become problems, never errors.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from analysis import fastjson
from payload.layout import newest_versions, stack_prefix
from payload.storage import StorageError
from payload.timestamps import parse_time

RESULT, EVENTS, STATE = "result.json", "events.jsonl", "checkpoints/state.json"
UNREACHABLE = "cannot list "  # how a problem reading the bucket at all begins: nothing could be checked
# Boot time is measured on the instance, the update start on the laptop.
CLOCK_SKEW = timedelta(minutes=5)


def launch_floor(since: datetime | None) -> datetime | None:
    """The earliest start of a run of the launch that began at `since` (clock skew allowed); None (every
    run) when there is no start, or one so early that the skew cannot be taken off (a forged year 1)."""
    try:
        return since - CLOCK_SKEW if since else None
    except OverflowError:
        return None


@dataclass(frozen=True)
class RunView:
    run_id: str
    benchmark: str
    status: str  # completed | failed | interrupted
    started_at: datetime | None
    finished_at: datetime | None
    upload_at: datetime | None  # the run's last `upload` event
    result_key: str = ""  # the key of the newest version of its result.json


def run_time(run: RunView) -> float:
    """A run's time for ordering runs: its finish, else its start; a result that carries neither
    (written by hand or by a job) sorts before every timed one."""
    moment = run.finished_at or run.started_at
    return moment.timestamp() if moment else 0.0


@dataclass
class StackObservation:
    runs: list[RunView] = field(default_factory=list)  # results of this launch
    in_progress: list[str] = field(default_factory=list)  # run ids with no result yet
    last_event: dict[str, Any] | None = None
    problems: list[str] = field(default_factory=list)

    @property
    def unreachable(self) -> bool:
        """The bucket could not be listed: nothing about the stack's runs is known."""
        return any(p.startswith(UNREACHABLE) for p in self.problems)

    @property
    def run_ids(self) -> list[str]:
        return sorted({r.run_id for r in self.runs} | set(self.in_progress))

    def latest_by_benchmark(self) -> dict[str, RunView]:
        return {run.benchmark: run for run in sorted(self.runs, key=run_time)}

    @property
    def last_upload(self) -> datetime | None:
        times = [r.upload_at or r.finished_at for r in self.runs if (r.upload_at or r.finished_at)]
        return max(times) if times else None


def time_of(value: Any) -> datetime | None:
    """The time a bucket's document or a job's event names, None for none or for anything not an ISO time
    (a number or a list where a time belongs: what a job wrote is read, never trusted)."""
    try:
        return parse_time(str(value)) if value else None
    except ValueError:
        return None


def _newest(events: list[dict[str, Any]]) -> dict[str, Any] | None:
    dated = [(e, time_of(e.get("time"))) for e in events if isinstance(e, dict)]
    dated = [(e, t) for e, t in dated if t is not None]
    return max(dated, key=lambda et: et[1])[0] if dated else None


def _last_upload(timeline: list[dict[str, Any]]) -> datetime | None:
    times = [time_of(e.get("time")) for e in timeline if isinstance(e, dict) and e.get("event") == "upload"]
    times = [t for t in times if t is not None]
    return max(times) if times else None


def observe(store: Any, stack: str, since: datetime | None) -> StackObservation:
    """Read the stack's runs of this launch from the bucket."""
    obs = StackObservation()
    prefix = stack_prefix(stack)
    try:
        keys = [o.key for o in store.list(prefix)]
    except StorageError as exc:
        obs.problems.append(f"{UNREACHABLE}{store.url_for(prefix)}: {exc}")
        return obs
    # run id -> {file name: key of its newest version}: files are written once, rewrites are new versions
    runs: dict[str, dict[str, str]] = {}
    for plain, key in newest_versions(keys).items():
        run_id, _, rest = plain[len(prefix) :].partition("/")
        if rest in (RESULT, EVENTS, STATE):
            runs.setdefault(run_id, {})[rest] = key
    floor = launch_floor(since)
    events: list[dict[str, Any]] = []
    for run_id, files in sorted(runs.items()):
        doc = (
            _read_json(store, files[RESULT if RESULT in files else STATE], obs)
            if (RESULT in files or STATE in files)
            else None
        )
        started = time_of((doc or {}).get("started_at"))
        if floor and started and started < floor:
            continue
        timeline = list((doc or {}).get("timeline") or [])
        if RESULT in files and doc is not None:
            bench = doc.get("benchmark")
            name = bench.get("name") if isinstance(bench, dict) else (bench or run_id)
            obs.runs.append(
                RunView(
                    run_id,
                    str(name),
                    str(doc.get("status")),
                    started,
                    time_of(doc.get("finished_at")),
                    _last_upload(timeline),
                    files[RESULT],
                )
            )
        else:
            obs.in_progress.append(run_id)
        if EVENTS in files:
            timeline += _read_jsonl(store, files[EVENTS], obs)
        newest = _newest(timeline)
        if newest is not None:
            events.append(newest)
    obs.last_event = _newest(events)
    return obs


# The most of an events.jsonl read: a payload's events of a long job fit many times over.
MAX_EVENTS_BYTES = 32 * 1024 * 1024


def read_bounded(store: Any, key: str, limit: int) -> bytes:
    """An object's bytes, by a ranged read of at most `limit` (+1) bytes: ValueError when it is larger
    (an object no payload writes: never downloaded whole, whatever its size)."""
    from analysis.collect.sources import read_capped  # the collect package loads pyarrow: status stays light

    data = read_capped(store, key, limit)
    if len(data) > limit:
        raise ValueError(f"larger than {limit:,} bytes, more than gpubench ever writes there; not read")
    return data


def read_result(store: Any, key: str) -> Any:
    """A result.json's document, read at most to the size collect accepts."""
    from analysis.collect.validation import MAX_RESULT_BYTES  # the collect package loads pyarrow, as above

    return fastjson.loads(read_bounded(store, key, MAX_RESULT_BYTES))


def _read_json(store: Any, key: str, obs: StackObservation) -> dict[str, Any] | None:
    try:
        doc = read_result(store, key)
        return doc if isinstance(doc, dict) else None
    except Exception as exc:  # noqa: BLE001 - half-written or foreign file
        obs.problems.append(f"{store.url_for(key)}: unreadable ({exc})")
        return None


def _read_jsonl(store: Any, key: str, obs: StackObservation) -> list[dict[str, Any]]:
    try:
        text = read_bounded(store, key, MAX_EVENTS_BYTES).decode()
    except Exception as exc:  # noqa: BLE001
        obs.problems.append(f"{store.url_for(key)}: unreadable ({exc})")
        return []
    out = []
    for line in text.splitlines():
        try:
            out.append(fastjson.loads(line))
        except ValueError:
            continue
    return out
