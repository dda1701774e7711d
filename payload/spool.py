"""Delivery: the local spool where results wait while the bucket is down, and the results journal.

An object the store would not take after its retries waits here (``<id>.json`` metadata + ``<id>.bin``) for
``flush`` (``python -m payload flush``, and the start of every run), which deletes it once uploaded. When the
spool cannot be written, the first writable fallback (``$TMPDIR/gpubench-fallback/``, ``./gpubench-fallback/``;
the run exits STRANDED) takes it, else a text object is printed to stderr between LOST-FILE markers.

The journal: once a result file is in the bucket, its writer creates the empty object
``journal/<stack>/<stamp>-<run-id>`` with its own clock, so a collect lists a settled stack's journal instead
of every run. An entry is never spooled (it would carry a stale stamp) and never fails a run: it is a hint.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from payload.events import note
from payload.layout import JOURNAL_WINDOW_S, BadKeyPart, journal_key, parse_key
from payload.storage import AlreadyExists, StorageError, Store, open_store
from payload.userdirs import user_path

FALLBACK_DIRNAME = "gpubench-fallback"
LAST_RESORT_LIMIT = 4 * 1024 * 1024  # larger objects (model checkpoints) are not printed


class SpoolError(OSError):
    """Neither the spool nor any fallback directory could be written."""


def default_spool_dir() -> Path:
    return user_path("GPUBENCH_SPOOL", "cache", "spool")


@dataclass
class FlushReport:
    delivered: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    unannounced: list[str] = field(default_factory=list)  # delivered results whose journal entry failed

    @property
    def ok(self) -> bool:
        return not self.failed


class Spool:
    """A directory of objects waiting for upload."""

    def __init__(self, directory: Path | str | None = None, fallbacks: list[Path] | None = None):
        self.dir = Path(directory) if directory else default_spool_dir()
        if fallbacks is None:  # where an object goes when the spool cannot be written, in order
            fallbacks = [Path(tempfile.gettempdir()) / FALLBACK_DIRNAME, Path.cwd() / FALLBACK_DIRNAME]
        self.fallbacks = [Path(f) for f in fallbacks]
        self.used_fallbacks: list[Path] = []  # where objects went because the spool refused them

    def add(self, url: str, key: str, data: bytes, content_type: str | None, reason: str = "", tags=None) -> Path:
        """Write one object to the spool, else to the first fallback that takes it (SpoolError if none)."""
        item = hashlib.sha256(f"{url}\0{key}".encode()).hexdigest()[:24]
        meta = {
            "url": url,
            "key": key,
            "content_type": content_type,
            "tags": dict(tags) if tags else None,
            "spooled_at": time.time(),
            "reason": reason[:500],
        }
        errors = []
        for directory in [self.dir, *(f for f in self.fallbacks if f != self.dir)]:
            try:
                path = _write_item(directory, item, data, meta)
            except OSError as exc:
                errors.append(f"{directory}: {exc.strerror or exc}")
                continue
            if directory != self.dir and directory not in self.used_fallbacks:
                self.used_fallbacks.append(directory)
            return path
        raise SpoolError(f"no spool or fallback directory could be written ({'; '.join(errors)})")

    def pending(self) -> list[dict]:
        """Spooled items, oldest first, each with its metadata and ``id``."""
        if not self.dir.is_dir():
            return []
        items = []
        for meta_path in self.dir.glob("*.json"):
            try:
                meta = json.loads(meta_path.read_text())
            except (OSError, ValueError):
                continue
            if (self.dir / f"{meta_path.stem}.bin").exists():
                items.append({**meta, "id": meta_path.stem})
        return sorted(items, key=lambda m: m.get("spooled_at", 0))

    def flush(self, retries: int | None = None, backoff: float | None = None) -> FlushReport:
        """Upload every spooled object; keep the ones that still fail."""
        report = FlushReport()
        stores: dict[str, Store] = {}
        down: dict[str, str] = {}  # url -> error: one failure per bucket is enough per flush
        for item in self.pending():
            dest = f"{item['url'].rstrip('/')}/{item['key']}"
            if item["url"] in down:
                report.failed[dest] = f"not tried, bucket still down: {down[item['url']]}"
                continue
            try:
                if item["url"] not in stores:
                    stores[item["url"]] = open_store(item["url"], retries=retries, backoff=backoff, write_once=True)
                store = stores[item["url"]]
                data = (self.dir / f"{item['id']}.bin").read_bytes()
                store.put_bytes(item["key"], data, item.get("content_type"), tags=item.get("tags") or None)
            except AlreadyExists:
                pass  # its write-once name is taken: an upload whose answer was lost delivered it
            except (StorageError, OSError) as exc:
                report.failed[dest] = down[item["url"]] = str(exc)
                continue
            announce(store, item["key"], warn=report.unannounced.append)  # now: the stamp is the flush's
            (self.dir / f"{item['id']}.json").unlink(missing_ok=True)
            (self.dir / f"{item['id']}.bin").unlink(missing_ok=True)
            report.delivered.append(dest)
        return report


def _write_item(directory: Path, item: str, data: bytes, meta: dict) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for suffix, blob in ((".bin", data), (".json", json.dumps(meta).encode())):  # metadata last: then complete
        tmp = directory / f"{item}{suffix}.tmp"
        tmp.write_bytes(blob)
        os.replace(tmp, directory / f"{item}{suffix}")
    return directory / f"{item}.bin"


class SpoolingStore:
    """Wraps a Store: uploads that fail after retries land in the spool; reads go to the store. ``spooled``:
    what did not make it; ``stranded``: what went to a fallback or stderr; ``lost``: not even there."""

    def __init__(self, store: Store, spool: Spool):
        self.store, self.spool = store, spool
        self.spooled: list[str] = []
        self.stranded: list[str] = []
        self.lost: list[str] = []

    def put_bytes(self, key: str, data: bytes, content_type: str | None = None, tags=None) -> bool:
        """Upload; False (and spooled, with the tags) when the bucket is unreachable."""
        try:
            self.store.put_bytes(key, data, content_type, tags=tags)
            return True
        except AlreadyExists as exc:  # write-once: nothing to spool, the name is taken for good
            note(f"not uploaded: {exc}")
            return False
        except StorageError as exc:
            before = len(self.spool.used_fallbacks)
            try:
                path = self.spool.add(self.store.url, key, data, content_type, reason=str(exc), tags=tags)
            except SpoolError as spool_exc:
                self._last_resort(key, data, spool_exc)
                return False
            self.spooled.append(key)
            if path.parent != self.spool.dir:
                self.stranded.append(key)
                if len(self.spool.used_fallbacks) > before:
                    note(f"spool {self.spool.dir} cannot be written; files go to fallback {path.parent}")
            return False

    def _last_resort(self, key: str, data: bytes, exc: SpoolError) -> None:
        """Print a text object to stderr (the container log keeps it): the last copy there is."""
        self.stranded.append(key)
        note(f"{key}: {exc}")
        try:
            text = data.decode("utf-8") if len(data) <= LAST_RESORT_LIMIT else None
        except UnicodeDecodeError:
            text = None
        if text is None:
            self.lost.append(key)
            note(f"{key} ({len(data)} bytes, binary or large) is LOST")
            return
        note(f"LOST-FILE-BEGIN {self.store.url_for(key)}")
        print(text, file=sys.stderr)
        note(f"LOST-FILE-END {self.store.url_for(key)}")

    def __getattr__(self, name):  # get_bytes, list, exists, url_for, delete
        return getattr(self.store, name)


def _put_entry(store: Store, stack: str, run_id: str, clock: Callable[[], float]) -> None:
    """One entry (no body: the key is the message) stamped just before its put; a put that took half the journal
    window or more (its retries waited) is followed by one stamped afresh, which a collect's next read sees."""
    stamp = clock()
    store.put_bytes(journal_key(stack, run_id, stamp), b"", "application/octet-stream")
    if clock() - stamp >= JOURNAL_WINDOW_S / 2:
        store.put_bytes(journal_key(stack, run_id, clock()), b"", "application/octet-stream")


def announce(
    store, key: str, warn: Callable[[str], None] | None = None, clock: Callable[[], float] = time.time
) -> bool:
    """Announce the upload of `key` in its stack's journal if it is a result file, after its upload succeeded
    (an entry never precedes its result), in the bucket itself (never spooled). False when an entry was due
    and could not be written, after telling `warn` why. A name already taken (the same run in the same
    microsecond) is retried once with a new stamp."""
    run_key = parse_key(key)
    if run_key is None or not run_key.is_result:
        return True
    bucket = store.store if isinstance(store, SpoolingStore) else store
    entry = partial(_put_entry, bucket, run_key.stack, run_key.run_id, clock)
    try:
        try:
            entry()
        except AlreadyExists:
            entry()
    except (StorageError, BadKeyPart) as exc:
        if warn is not None:
            warn(f"{key} landed but its journal entry was not written (a collect finds it by a full listing): {exc}")
        return False
    return True
