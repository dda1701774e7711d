"""Fetch a run's files over SFTP and upload them to the results bucket from this machine: the host's `file://`
bucket keys unchanged (SSH runs land where cloud runs do), the wrapper's files under `ssh/<stack>/<run-id>/`.
Each result is announced afresh in the results journal: the host's journal stamps are not the bucket's.
"""

from __future__ import annotations

import json
import stat
from dataclasses import dataclass, field

from infra.ssh.layout import RunLayout
from payload.layout import JOURNAL_ROOT
from payload.spool import announce

CONTENT_TYPES = {".json": "application/json", ".jsonl": "application/x-ndjson", ".csv": "text/csv"}
WRAPPER_FILES = ("record", "log", "state")


@dataclass
class Upload:
    keys: list[str] = field(default_factory=list)
    bytes: int = 0
    payload_runs: list[str] = field(default_factory=list)  # runs/<stack>/<payload-run-id>/ prefixes
    statuses: dict[str, dict] = field(default_factory=dict)  # prefix -> {benchmark, status} from result.json
    unannounced: list[str] = field(default_factory=list)  # uploaded results whose journal entry failed


def _walk(sftp, top: str, rel: str = ""):
    try:
        entries = sftp.listdir_attr(top + ("/" + rel if rel else ""))
    except FileNotFoundError:
        return
    for e in sorted(entries, key=lambda e: e.filename):
        child = f"{rel}/{e.filename}" if rel else e.filename
        if stat.S_ISDIR(e.st_mode or 0):
            yield from _walk(sftp, top, child)
        elif stat.S_ISREG(e.st_mode or 0):
            yield child


def _content_type(key: str) -> str | None:
    return next((t for ext, t in CONTENT_TYPES.items() if key.endswith(ext)), None)


def _summary(data: bytes) -> dict:
    try:
        doc = json.loads(data)
    except ValueError:
        return {"status": "unreadable"}
    bench = doc.get("benchmark")
    return {"benchmark": bench.get("name") if isinstance(bench, dict) else bench, "status": doc.get("status")}


def _read(sftp, path: str) -> bytes:
    with sftp.open(path, "rb") as f:
        f.prefetch()
        return f.read()


def fetch_and_upload(sftp, layout: RunLayout, store) -> Upload:
    """Copy the run's bucket and wrapper files into `store` (payload.storage.Store); idempotent."""
    out = Upload()
    for rel in _walk(sftp, layout.results):
        if rel.startswith(JOURNAL_ROOT):
            continue  # stamped by the host's clock when it wrote its own copy: announced afresh below
        if rel.startswith("runs/") and rel.count("/") >= 3:
            prefix = "/".join(rel.split("/")[:3]) + "/"
            if prefix not in out.payload_runs:
                out.payload_runs.append(prefix)
        data = _read(sftp, f"{layout.results}/{rel}")
        store.put_bytes(rel, data, _content_type(rel))
        announce(store, rel, warn=out.unannounced.append)  # a result now in the bucket: its journal entry
        if rel.endswith("/result.json") and rel.count("/") == 3:
            out.statuses[rel[: -len("result.json")]] = _summary(data)
        out.keys.append(rel)
        out.bytes += len(data)
    side = f"ssh/{layout.stack}/{layout.run_id}/"
    wrapper = [(layout.path(name), side + layout.path(name).rsplit("/", 1)[1]) for name in WRAPPER_FILES]
    for path, key in [*wrapper, (f"{layout.host}/events.jsonl", side + "host-events.jsonl")]:
        try:
            data = _read(sftp, path)
        except FileNotFoundError:
            continue
        store.put_bytes(key, data, _content_type(key) or "text/plain")
        out.keys.append(key)
        out.bytes += len(data)
    return out
