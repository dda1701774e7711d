"""The results journal, writer's side: once a result file is in the bucket, its writer creates the empty
object ``journal/<stack>/<stamp>-<run-id>`` (payload.layout) with its own clock read just before, so a
collect lists a settled stack's journal instead of every run. The stamp is the point, so an entry is
never spooled (a spooled one would land under a stale stamp): a spool flush announces what it delivers
with its own clock. An entry is a hint a full listing makes up for: announcing never fails a run.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from payload.layout import JOURNAL_WINDOW_S, BadKeyPart, journal_key, parse_key
from payload.storage import AlreadyExists, StorageError, Store

CONTENT_TYPE = "application/octet-stream"  # an entry has no body: its key is the message


def _direct(store) -> Store:
    """The bucket itself behind a spooling store (payload.spool.SpoolingStore wraps it as `.store`):
    an entry that cannot be written now is not kept for later."""
    inner = store if isinstance(store, Store) else getattr(store, "store", None)
    return inner if isinstance(inner, Store) else store


def _put_entry(store: Store, stack: str, run_id: str, clock: Callable[[], float]) -> str:
    """Create one entry stamped just before its put; its key. A put that took half the journal window or
    more (its retries waited) is followed by one stamped afresh, which a collect's next read still sees."""
    stamp = clock()
    key = journal_key(stack, run_id, stamp)
    store.put_bytes(key, b"", CONTENT_TYPE)
    if clock() - stamp >= JOURNAL_WINDOW_S / 2:
        key = journal_key(stack, run_id, clock())
        store.put_bytes(key, b"", CONTENT_TYPE)
    return key


def announce(
    store, key: str, warn: Callable[[str], None] | None = None, clock: Callable[[], float] = time.time
) -> bool:
    """Announce the upload of `key` in its stack's journal, if it is a result file.

    Call it after the result's upload succeeded (an entry must never precede its result).
    Returns False when an entry was due and could not be written, after telling `warn` why;
    True otherwise (written, or `key` is not a result file). A name already taken (a
    write-once store, the same run in the same microsecond) is retried once with a new stamp.
    """
    run_key = parse_key(key)
    if run_key is None or not run_key.is_result:
        return True
    bucket = _direct(store)
    try:
        try:
            _put_entry(bucket, run_key.stack, run_key.run_id, clock)
        except AlreadyExists:
            _put_entry(bucket, run_key.stack, run_key.run_id, clock)
    except (StorageError, BadKeyPart) as exc:
        if warn is not None:
            warn(f"{key} landed but its journal entry was not written (a collect finds it by a full listing): {exc}")
        return False
    return True
