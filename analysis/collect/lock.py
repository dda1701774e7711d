"""One writer at a time per results table: two collects deciding "these rows are new" against the same
snapshot would both append them. The lock is an object created only if absent (``O_EXCL`` locally; S3's
conditional put, If-None-Match, through obstore; GCS's ifGenerationMatch=0, payload.storage's write-once
upload) naming its owner (host, process, start) and a heartbeat (``at``) a thread renews every
HEARTBEAT_S. It is stale, and broken, when the heartbeat is older than LEASE_S, its owner is a process of
this host that no longer runs, or it stays unreadable (what a collect killed while creating it leaves)
for UNREADABLE_S; a live one is waited for up to WAIT_S, saying so on stderr every WAIT_NOTE_S."""

from __future__ import annotations

import json
import math
import os
import shlex
import socket
import stat
import sys
import threading
import time
from collections.abc import Callable
from contextlib import contextmanager, suppress
from functools import partial
from pathlib import Path

from analysis import fastjson
from analysis.collect.s3 import S3Bulk
from analysis.collect.sources import read_capped
from analysis.dataset.location import Location
from payload import proctree
from payload.storage import AlreadyExists, ObjectNotFound, open_store, with_retries

LOCK_KEY = "_gpubench/collect.lock"  # under the table; engines skip names that start with _
HEARTBEAT_S = 30.0
LEASE_S = 10 * HEARTBEAT_S  # ten missed heartbeats
UNREADABLE_S = 10.0
WAIT_S = 30 * 60.0
WAIT_NOTE_S = 60.0
POLL_S = 0.2
MAX_LOCK_BYTES = 64 * 1024  # a lock is a few hundred bytes: more is not one, and is never read whole


class LockTimeout(TimeoutError):
    """Another collect kept the table for longer than we wait (an OSError: the command says so and exits 1)."""


class LockNotAFile(OSError):
    """The lock's name holds a directory, a symlink or a device: no collect makes one, so none breaks it."""


@contextmanager
def table_lock(loc: Location, wait_s: float = WAIT_S, say: Callable[[str], None] | None = None):
    """Hold the table's lock for the block; waits for a live holder up to `wait_s`, telling `say` who holds it."""
    say = say or (lambda line: print(line, file=sys.stderr, flush=True))
    backend = _LocalLock(loc.local / LOCK_KEY) if loc.local is not None else _RemoteLock(loc)
    where = f"{loc.text.rstrip('/')}/{LOCK_KEY}"
    deadline = time.monotonic() + wait_s
    started = time.time()
    me = (socket.gethostname(), os.getpid(), started)
    unreadable_since = noted = None
    stop = threading.Event()
    beat = threading.Thread(target=_beat, args=(backend, started, stop), name="collect-lock-heartbeat", daemon=True)
    acquired = False
    try:
        while not (acquired := backend.create(_body(started))):
            holder = backend.read()
            if holder is None:
                continue  # released meanwhile
            if (holder.get("host"), holder.get("pid"), holder.get("started")) == me:
                acquired = True  # our own create, retried after its answer was lost
                break
            why = _stale(holder)
            if why is None and _heartbeat(holder) is None:  # unreadable: stale once it stays so
                unreadable_since = unreadable_since or time.monotonic()
                if time.monotonic() - unreadable_since > UNREADABLE_S:
                    why = f"unreadable for {UNREADABLE_S:.0f} s (a collect killed while creating it)"
            else:
                unreadable_since = None
            if why is not None:
                say(f"collect: breaking the lock {where} of {_owner(holder)}: {why}")
                backend.remove()
                continue
            if time.monotonic() > deadline:
                raise LockTimeout(
                    f"the table at {loc.text} is being written by {_owner(holder)}; try again when it is done "
                    f"(a lock whose heartbeat stops is broken {LEASE_S:.0f} s later: {where})"
                )
            if noted is None or time.monotonic() - noted >= WAIT_NOTE_S:
                say(
                    f"collect: waiting for {_owner(holder)}, which is writing the table (lock {where}; "
                    f"taken over if its heartbeat stops for {LEASE_S:.0f} s; giving up in "
                    f"{max(0.0, deadline - time.monotonic()):.0f} s)"
                )
                noted = time.monotonic()
            time.sleep(POLL_S)
        beat.start()  # in the try: a stop signal the moment the lock is taken still lets go of it
        yield
    finally:
        stop.set()
        if beat.ident is not None:
            beat.join()
        if acquired:
            backend.remove()


def _beat(backend, started: float, stop: threading.Event) -> None:
    while not stop.wait(HEARTBEAT_S):
        try:
            backend.overwrite(_body(started))
        except Exception:  # noqa: BLE001,S112 - a beat missed (a full disk, a network blip): the next one counts
            continue


def _body(started: float) -> bytes:
    owner = {"host": socket.gethostname(), "pid": os.getpid(), "started": started, "at": time.time()}
    return json.dumps({**owner, "command": "gpubench collect"}).encode()


def _heartbeat(holder: dict) -> float | None:
    """The holder's last heartbeat (epoch seconds), None when it is not a time (or lies ahead by more than a lease)."""
    at = holder.get("at")
    if isinstance(at, bool) or not isinstance(at, (int, float)) or not math.isfinite(at):
        return None
    return at if at <= time.time() + LEASE_S else None


def _stale(holder: dict) -> str | None:
    """Why the holder is gone (its heartbeat stopped, its process ended), None while it may live."""
    at = _heartbeat(holder)
    if at is not None and time.time() - at > LEASE_S:
        return f"no heartbeat for {time.time() - at:.0f} s"
    pid = holder.get("pid")
    if holder.get("host") == socket.gethostname() and isinstance(pid, int) and not isinstance(pid, bool) and pid > 0:
        return None if proctree.alive(pid) else f"process {pid} of this host is gone"
    return None


def _owner(holder: dict) -> str:
    """Who holds the lock, in words safe for a terminal (the lock is an object anyone with write access can forge)."""
    host, pid, started = holder.get("host"), holder.get("pid"), holder.get("started", holder.get("at"))
    if not isinstance(host, str) or not isinstance(pid, int) or isinstance(pid, bool):
        return "an unknown collect (the lock names no host and process)"
    since = ""
    if isinstance(started, (int, float)) and not isinstance(started, bool) and math.isfinite(started):
        try:
            since = f" since {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(started))}"
        except (OverflowError, OSError, ValueError):
            since = ""
    return f"the collect of process {pid} on host {ascii(host)[1:-1][:100]}{since}"


def _parse(data: bytes | None) -> dict:
    """The lock's document; {} for one that cannot be read (empty, too large, not JSON, not an object)."""
    try:
        doc = fastjson.loads(data) if data and len(data) <= MAX_LOCK_BYTES else None
    except ValueError:
        return {}
    return doc if isinstance(doc, dict) else {}


class _LocalLock:
    def __init__(self, path: Path):
        self.path = path

    def create(self, body: bytes) -> bool:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            return False
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(body)
        except BaseException:  # a full disk: no empty lock left behind for the next collect to wait on
            self.path.unlink(missing_ok=True)
            raise
        return True

    def overwrite(self, body: bytes) -> None:
        """Whole or not at all (a waiting collect never reads it half-written): a new file renamed onto it."""
        staged = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        staged.write_bytes(body)
        os.replace(staged, self.path)

    def read(self) -> dict | None:
        """The lock's document, at most MAX_LOCK_BYTES, never through a link, a FIFO or a device."""
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
        except FileNotFoundError:
            return None
        except OSError:  # ELOOP: a symlink
            fd = None
        if fd is None or not stat.S_ISREG(os.fstat(fd).st_mode):
            if fd is not None:
                os.close(fd)
            raise LockNotAFile(
                f"{self.path} is not a lock a collect wrote (a directory, a symlink, a FIFO or a device); "
                f"remove it (rm -r {shlex.quote(str(self.path))}) when no collect is running, then collect again"
            )
        with os.fdopen(fd, "rb") as f:
            return _parse(f.read(MAX_LOCK_BYTES + 1))

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)


class _RemoteLock:
    """The lock object in a bucket: s3:// through obstore (analysis.collect.s3), gs:// through payload.storage."""

    def __init__(self, loc: Location):
        folder, self.key = LOCK_KEY.split("/", 1)
        url = f"{loc.uri}/{folder}"
        self.store = S3Bulk(url) if loc.uri.startswith("s3://") else open_store(url)
        self.creator = self.store if isinstance(self.store, S3Bulk) else open_store(url, write_once=True)

    def create(self, body: bytes) -> bool:
        if isinstance(self.store, S3Bulk):
            return self.store.create(self.key, body)
        # every attempt's "exists" means taken (put_bytes takes one met on a retry for its own upload;
        # table_lock tells its own lock by the owner it reads): the store's one-attempt upload, retried
        put = partial(self.creator._put, self.key, body, None, None)  # noqa: SLF001
        try:
            with_retries(f"create {self.creator.url_for(self.key)}", put)
        except AlreadyExists:
            return False
        return True

    def overwrite(self, body: bytes) -> None:
        self.store.put_bytes(self.key, body)

    def read(self) -> dict | None:
        try:
            return _parse(read_capped(self.store, self.key, MAX_LOCK_BYTES))
        except ObjectNotFound:
            return None

    def remove(self) -> None:
        with suppress(ObjectNotFound):
            self.store.delete(self.key)
