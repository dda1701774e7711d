"""Local spool: where results wait when the bucket stays down.

A result that cannot be uploaded after the store's retries is written to the
spool directory together with its destination (store URL + key). ``flush``
(``python -m payload flush``, and the start of every run) re-sends spooled
objects oldest first and deletes each one only after its upload succeeded,
so nothing is lost and a later write of the same key wins.

Directory: ``GPUBENCH_SPOOL``, else ``$XDG_CACHE_HOME/gpubench/spool``, else
``~/.cache/gpubench/spool``. One ``<id>.json`` (metadata) + ``<id>.bin``
(payload) pair per object; the id hashes URL + key so re-spooling a key
replaces the older copy.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from payload.storage import StorageError, Store, open_store

__all__ = ["Spool", "SpoolingStore", "FlushReport", "default_spool_dir"]


def default_spool_dir() -> Path:
    if os.environ.get("GPUBENCH_SPOOL"):
        return Path(os.environ["GPUBENCH_SPOOL"]).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "gpubench" / "spool"


@dataclass
class FlushReport:
    delivered: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.failed


class Spool:
    """A directory of objects waiting for upload."""

    def __init__(self, directory: Path | str | None = None):
        self.dir = Path(directory) if directory else default_spool_dir()

    def add(self, url: str, key: str, data: bytes, content_type: str | None, reason: str = "") -> Path:
        self.dir.mkdir(parents=True, exist_ok=True)
        item = hashlib.sha256(f"{url}\0{key}".encode()).hexdigest()[:24]
        meta = {"url": url, "key": key, "content_type": content_type, "spooled_at": time.time(), "reason": reason[:500]}
        bin_path, meta_path = self.dir / f"{item}.bin", self.dir / f"{item}.json"
        tmp = bin_path.with_suffix(".bin.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, bin_path)
        tmp = meta_path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(meta))
        os.replace(tmp, meta_path)  # metadata last: an item is complete when it has one
        return bin_path

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
                store = stores.get(item["url"]) or open_store(item["url"], retries=retries, backoff=backoff)
                stores[item["url"]] = store
                data = (self.dir / f"{item['id']}.bin").read_bytes()
                store.put_bytes(item["key"], data, item.get("content_type"))
            except (StorageError, OSError) as exc:
                report.failed[dest] = down[item["url"]] = str(exc)
                continue
            (self.dir / f"{item['id']}.json").unlink(missing_ok=True)
            (self.dir / f"{item['id']}.bin").unlink(missing_ok=True)
            report.delivered.append(dest)
        return report


class SpoolingStore:
    """Wraps a Store: uploads that fail after retries land in the spool.

    Reads go straight to the store. ``spooled`` lists what did not make it,
    so the caller can say so in its events and exit code.
    """

    def __init__(self, store: Store, spool: Spool):
        self.store, self.spool = store, spool
        self.spooled: list[str] = []

    def put_bytes(self, key: str, data: bytes, content_type: str | None = None, tags=None) -> bool:
        """Upload; return False (and spool) when the bucket is unreachable.
        A spooled object is flushed later without its tags (they only drive
        lifecycle expiry; the data is what must not be lost)."""
        try:
            self.store.put_bytes(key, data, content_type, tags=tags)
            return True
        except StorageError as exc:
            self.spool.add(self.store.url, key, data, content_type, reason=str(exc))
            self.spooled.append(key)
            return False

    def __getattr__(self, name):  # get_bytes, list, exists, url_for, delete
        return getattr(self.store, name)
