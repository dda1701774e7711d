"""What the results bucket says about one stack: its runs of this launch, their results, the last event.

Lists `runs/<stack>/` once. A run with `result.json` is a result; one without is in progress, its newest
event from `events.jsonl` or the checkpoint's `state.json`. A run that started (its newest attempt, after a
spot restart) before the launch, less clock skew, is an earlier launch's and only counted. Unreadable files
become problems, never errors.
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
CLOCK_SKEW = timedelta(minutes=5)  # boot time is measured on the instance, the update start on the laptop
MAX_EVENTS_BYTES = 32 * 1024 * 1024  # the most of an events.jsonl read: a long job's events fit many times over


def launch_floor(since: datetime | None) -> datetime | None:
    """The earliest start of a run of the launch that began at `since`; None (every run) without one, or
    for one so early that the skew cannot be taken off (a forged year 1)."""
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
    """A run's finish, else its start, for ordering; a result with neither sorts before every timed one."""
    moment = run.finished_at or run.started_at
    return moment.timestamp() if moment else 0.0


@dataclass
class StackObservation:
    runs: list[RunView] = field(default_factory=list)  # results of this launch
    in_progress: list[str] = field(default_factory=list)  # run ids with no result yet
    last_event: dict[str, Any] | None = None
    problems: list[str] = field(default_factory=list)
    earlier: int = 0  # runs of an earlier launch, not looked at further

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
        return max((r.upload_at or r.finished_at for r in self.runs if r.upload_at or r.finished_at), default=None)


def time_of(value: Any) -> datetime | None:
    """The time a document or a job's event names; None for none or anything not an ISO time (what a job
    wrote is read, never trusted)."""
    try:
        return parse_time(str(value)) if value else None
    except ValueError:
        return None


def _newest(events: list[Any], name: str | None = None) -> tuple[dict[str, Any] | None, datetime | None]:
    """(the newest event, named `name` if given, with a readable time; its time)."""
    dated = [(e, time_of(e.get("time"))) for e in events if isinstance(e, dict) and name in (None, e.get("event"))]
    return max(((e, t) for e, t in dated if t is not None), key=lambda et: et[1], default=(None, None))


def _started(doc: dict[str, Any]) -> datetime | None:
    """A run's start: its newest attempt's (a run resumed after a spot restart belongs to that launch)."""
    attempts = [a for a in doc.get("attempts") or [] if isinstance(a, dict) and a.get("start")]
    return time_of(max(attempts, key=lambda a: a.get("attempt") or 0)["start"] if attempts else doc.get("started_at"))


def runs_of(store: Any, stack: str) -> dict[str, dict[str, Any]]:
    """run id -> {"updated": newest object time, "files": names, "newest": {name: key of its newest
    version}} for every run of the stack (files are written once, each rewrite under a new version)."""
    prefix = stack_prefix(stack)
    listed: dict[str, list] = {}
    for info in store.list(prefix):
        run_id, _, rest = info.key[len(prefix) :].partition("/")
        if rest:
            listed.setdefault(run_id, []).append(info)
    runs = {}
    for run_id, infos in listed.items():
        newest = {k[len(f"{prefix}{run_id}/") :]: v for k, v in newest_versions([i.key for i in infos]).items()}
        updated = max((i.updated for i in infos if i.updated), default=None)
        runs[run_id] = {"updated": updated, "files": set(newest), "newest": newest}
    return runs


def observe(store: Any, stack: str, since: datetime | None) -> StackObservation:
    """Read the stack's runs of the launch that began at `since` from the bucket."""
    obs = StackObservation()
    try:
        runs = runs_of(store, stack)
    except StorageError as exc:
        obs.problems.append(f"{UNREACHABLE}{store.url_for(stack_prefix(stack))}: {exc}")
        return obs
    floor = launch_floor(since)
    events: list[dict[str, Any]] = []
    for run_id, run in sorted(runs.items()):
        files = {name: key for name, key in run["newest"].items() if name in (RESULT, EVENTS, STATE)}
        if not files:
            continue
        doc_key = files.get(RESULT) or files.get(STATE)
        doc = _read(store, doc_key, obs, read_result) if doc_key else None
        doc = doc if isinstance(doc, dict) else {}
        started = _started(doc)
        if floor and started and started < floor:
            obs.earlier += 1
            continue
        timeline = list(doc.get("timeline") or [])
        if RESULT in files and doc:
            bench = doc.get("benchmark")
            name = bench.get("name") if isinstance(bench, dict) else (bench or run_id)
            finished, upload = time_of(doc.get("finished_at")), _newest(timeline, "upload")[1]
            obs.runs.append(
                RunView(run_id, str(name), str(doc.get("status")), started, finished, upload, files[RESULT])
            )
        else:
            obs.in_progress.append(run_id)
        if EVENTS in files:
            timeline += _read(store, files[EVENTS], obs, _read_jsonl) or []
        newest = _newest(timeline)[0]
        if newest is not None:
            events.append(newest)
    obs.last_event = _newest(events)[0]
    return obs


def read_bounded(store: Any, key: str, limit: int, cut: bool = False) -> bytes:
    """An object's bytes by a ranged read of at most `limit` (+1) bytes: ValueError when it is larger
    (no payload writes that: never downloaded whole); with `cut` the limit+1 bytes, the caller says so."""
    from analysis.collect.sources import read_capped  # the collect package loads pyarrow: status stays light

    data = read_capped(store, key, limit)
    if len(data) > limit and not cut:
        raise ValueError(f"larger than {limit:,} bytes, more than gpubench ever writes there; not read")
    return data


def read_result(store: Any, key: str) -> Any:
    """A result.json's document, read at most to the size collect accepts."""
    from analysis.collect.validation import MAX_RESULT_BYTES  # the collect package loads pyarrow, as above

    return fastjson.loads(read_bounded(store, key, MAX_RESULT_BYTES))


def _read_jsonl(store: Any, key: str) -> list[Any]:
    out = []
    for line in read_bounded(store, key, MAX_EVENTS_BYTES).decode().splitlines():
        try:
            out.append(fastjson.loads(line))
        except ValueError:
            continue
    return out


def _read(store: Any, key: str, obs: StackObservation, reader) -> Any:
    try:
        return reader(store, key)
    except Exception as exc:  # noqa: BLE001 - a half-written or foreign file
        obs.problems.append(f"{store.url_for(key)}: unreadable ({exc})")
        return None
