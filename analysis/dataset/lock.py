"""One writer at a time per results table: a lock object beside the data.

The table format's commit protocol already keeps every commit whole (a
reader sees the old snapshot or the new one) and refuses a commit that lost
a race. The lock adds what a commit cannot know: two collects that each
decide "these rows are new" against the same snapshot would both append
them. Holding the lock from reading the table's keys to the last commit
makes the second collect decide against the first one's result.

The lock is an object created only if absent (``O_EXCL`` on a local disk; a
conditional put, If-None-Match, on S3 and GCS) naming its holder and the
time. A lock whose holder is gone (a process on this host that no longer
runs) or older than LEASE_S (a holder elsewhere that died) is broken."""

from __future__ import annotations

import json
import os
import socket
import time
from contextlib import contextmanager
from pathlib import Path

from analysis.dataset.location import Location

LOCK_KEY = "_gpubench/collect.lock"  # under the table; engines skip names that start with _
LEASE_S = 15 * 60.0
WAIT_S = 30 * 60.0
POLL_S = 0.2


class LockTimeout(RuntimeError):
    """Another collect kept the table for longer than we wait."""


class Held:
    """A lock being held: `touch()` renews its time, so a long collect's lock is not taken for a dead one's."""

    def __init__(self, backend):
        self.backend, self.at = backend, time.time()

    def touch(self) -> None:
        if time.time() - self.at > LEASE_S / 10:
            self.backend.overwrite(_body())
            self.at = time.time()


@contextmanager
def table_lock(loc: Location, wait_s: float = WAIT_S):
    """Hold the table's lock for the block (yields a Held); waits for another holder up to `wait_s`."""
    backend = _LocalLock(loc.local / LOCK_KEY) if loc.local is not None else _RemoteLock(loc)
    deadline = time.monotonic() + wait_s
    while not backend.create(_body()):
        holder = backend.read()
        if holder is None or _stale(holder):
            backend.remove()
            continue
        if time.monotonic() > deadline:
            raise LockTimeout(
                f"the table at {loc.text} is being written by {holder.get('host')} (process {holder.get('pid')}) "
                f"since {time.strftime('%H:%M:%S', time.localtime(holder.get('at', 0)))}; try again when it is done"
            )
        time.sleep(POLL_S)
    try:
        yield Held(backend)
    finally:
        backend.remove()


def _body() -> bytes:
    return json.dumps({"host": socket.gethostname(), "pid": os.getpid(), "at": time.time()}).encode()


def _stale(holder: dict) -> bool:
    """Its holder is gone: a process of this host that no longer runs, or a lease run out."""
    if time.time() - float(holder.get("at", 0)) > LEASE_S:
        return True
    if holder.get("host") == socket.gethostname() and isinstance(holder.get("pid"), int):
        try:
            os.kill(holder["pid"], 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
    return False


def _parse(data: bytes | None) -> dict | None:
    try:
        doc = json.loads(data) if data else None
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None


class _LocalLock:
    def __init__(self, path: Path):
        self.path = path

    def create(self, body: bytes) -> bool:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            return False
        with os.fdopen(fd, "wb") as f:
            f.write(body)
        return True

    def overwrite(self, body: bytes) -> None:
        self.path.write_bytes(body)

    def read(self) -> dict | None:
        try:
            return _parse(self.path.read_bytes()) or {"at": time.time()}  # being written: not stale yet
        except FileNotFoundError:
            return None

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)


class _RemoteLock:
    """The lock object in a bucket, through payload.storage's store for its scheme."""

    def __init__(self, loc: Location):
        from payload.storage import open_store

        self.store = open_store(f"{loc.uri}/_gpubench")
        self.key = LOCK_KEY.split("/", 1)[1]

    def create(self, body: bytes) -> bool:
        return _CREATE[type(self.store).__name__](self.store, self.key, body)

    def overwrite(self, body: bytes) -> None:
        self.store.put_bytes(self.key, body)

    def read(self) -> dict | None:
        from payload.storage import ObjectNotFound

        try:
            return _parse(self.store.get_bytes(self.key)) or {"at": time.time()}
        except ObjectNotFound:
            return None

    def remove(self) -> None:
        from payload.storage import ObjectNotFound

        try:
            self.store.delete(self.key)
        except ObjectNotFound:
            pass


def _create_s3(store, key: str, body: bytes) -> bool:
    from botocore.exceptions import ClientError

    try:
        store._client.put_object(Bucket=store.bucket, Key=store._key(key), Body=body, IfNoneMatch="*")  # noqa: SLF001
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") in (
            "PreconditionFailed",
            "ConditionalRequestConflict",
            "412",
            "409",
        ):
            return False
        raise
    return True


def _create_gcs(store, key: str, body: bytes) -> bool:
    from google.api_core.exceptions import PreconditionFailed

    try:
        store._bucket.blob(store._key(key)).upload_from_string(body, if_generation_match=0)  # noqa: SLF001
    except PreconditionFailed:
        return False
    return True


_CREATE = {"S3Store": _create_s3, "GCSStore": _create_gcs}
