"""What the last collect saw, so the next one reads only what changed.

One SQLite file in the output directory (``.collect-manifest.sqlite``):

- ``entries``: one row per result object: etag, size, and the table row or
  the reason it was set aside. A JSON document would be re-parsed and
  rewritten whole (200 MB at 100,000 results); here a collect writes only
  the rows that changed.
- ``stacks``: the *settled* stacks of each s3:// source, as last listed file
  by file: every run directory holds a result.json with a final status
  (completed or failed), nothing is half-uploaded, and no stray object sits
  beside the run directories. The payload writes a final result once and
  never again, so such a stack changes only by gaining or losing run
  directories; the next collect lists its run directories (one entry per
  run, not per file) and, while they are the same ones, neither lists its
  files nor reads its results. A settled stack is listed file by file again
  after SETTLED_MAX_AGE_S, or on `gpubench collect --full`.
- ``meta``: the row version, the table's fingerprint, and the outcome of the
  last de-duplication (which copies lost, and why), kept only when every
  stack of every source was settled, so a collect that finds those stacks
  unchanged and nothing else answers from here without judging 100,000 rows
  again.

An unreadable manifest is a cold start, never an error; an old JSON
manifest is read once and replaced.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from analysis.fastjson import dumps as _dumps
from analysis.fastjson import loads as _loads
from analysis.table import ROW_VERSION

MANIFEST_NAME = ".collect-manifest.sqlite"
OLD_MANIFEST_NAME = ".collect-manifest.json"  # before the SQLite manifest: migrated once, then removed
# A settled stack is trusted for a day, then listed file by file again: a
# final result rewritten by hand (not by the payload) is seen within that time.
SETTLED_MAX_AGE_S = 24 * 3600.0


@dataclass(frozen=True)
class SettledStack:
    """One settled stack of one source, as its last file-by-file listing found it."""

    runs: int  # run directories, each with one result.json (what settled means)
    digest: str  # of the run ids (analysis.bulk.runs_digest): what the next listing is compared with
    notes: tuple[dict, ...]  # files set aside in it (unknown files in run directories), replayed as found
    listed_at: float  # epoch seconds of that listing

    def fresh(self, now: float | None = None) -> bool:
        return (now if now is not None else time.time()) - self.listed_at < SETTLED_MAX_AGE_S


class StoredRows(Sequence):
    """The table's rows as the manifest stores them (every row but the dropped
    entries'), by run id then stack; read from the manifest file on first use."""

    def __init__(self, path: Path, dropped: set[str], count: int):
        self.path, self.dropped, self.count = path, dropped, count
        self._rows: list[dict] | None = None

    def _all(self) -> list[dict]:
        if self._rows is None:
            from analysis.collect.dedupe import row_order

            db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)
            try:
                rows = db.execute("SELECT mkey, row FROM entries WHERE row IS NOT NULL").fetchall()
            finally:
                db.close()
            self._rows = sorted((_loads(r) for k, r in rows if k not in self.dropped), key=row_order)
        return self._rows

    def __len__(self) -> int:
        return self.count if self._rows is None else len(self._rows)

    def __getitem__(self, i):
        return self._all()[i]

    def __iter__(self):
        return iter(self._all())

    def __eq__(self, other) -> bool:
        return list(self) == list(other) if isinstance(other, (list, Sequence)) else NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"StoredRows({len(self)} rows of {self.path})"


class Manifest:
    """The collect manifest; `entries` is read on first use (a collect that
    finds nothing new never needs it)."""

    def __init__(self, path: Path):
        self.path = path
        self._entries: dict[str, dict] | None = None
        self.table_fingerprint: str | None = None
        self._meta: dict[str, str] = {}
        # set when the entries proved unreadable after opening: the settled
        # stacks read before then stand for rows that are gone (collect starts over)
        self.damaged = False
        try:
            self._db = self._connect()
        except sqlite3.DatabaseError:  # not a database, or a damaged one: rebuild
            self._rebuild()
        if not self._meta.get("table_fingerprint") and not self.entries:
            self._migrate_json(path.with_name(OLD_MANIFEST_NAME))

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.path, isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT)")
            # a rowid table: WITHOUT ROWID grows to twice the size under upserts of kB-sized rows
            db.execute(
                "CREATE TABLE IF NOT EXISTS entries (mkey TEXT PRIMARY KEY, source TEXT, key TEXT, url TEXT,"
                " etag TEXT, size INTEGER, row BLOB, reason TEXT)"
            )
            db.execute(
                "CREATE TABLE IF NOT EXISTS stacks (source TEXT, prefix TEXT, runs INTEGER,"
                " digest TEXT, notes BLOB, listed_at REAL, PRIMARY KEY (source, prefix))"
            )
            meta = dict(db.execute("SELECT k, v FROM meta"))
            if meta.get("row_version") != str(ROW_VERSION):
                for table in ("entries", "stacks", "meta"):
                    db.execute(f"DELETE FROM {table}")  # noqa: S608 - fixed table names
                db.execute("INSERT INTO meta VALUES ('row_version', ?)", (str(ROW_VERSION),))
                self._entries, meta = {}, {}
            self._meta = meta
            self.table_fingerprint = meta.get("table_fingerprint")
            return db
        except BaseException:
            db.close()
            raise

    def _rebuild(self) -> None:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{self.path}{suffix}").unlink(missing_ok=True)
        self._entries, self._meta, self.table_fingerprint = {}, {}, None
        self._db = self._connect()

    @property
    def entries(self) -> dict[str, dict]:
        if self._entries is None:
            try:
                self._entries = self._read_entries()
            except sqlite3.DatabaseError:  # damaged past the header: a cold start
                self._start_over()
        return self._entries

    def _start_over(self) -> None:
        self._db.close()
        self._rebuild()
        self.damaged = True

    def _read_entries(self) -> dict[str, dict]:
        entries = {}
        for mkey, source, key, url, etag, size, row, reason in self._db.execute("SELECT * FROM entries"):
            e = {"source": source, "key": key, "url": url, "etag": etag, "size": size}
            if row is not None:
                e["row"] = _loads(row)
            else:
                e["reason"] = reason
            entries[mkey] = e
        return entries

    def settled(self, source: str) -> dict[str, SettledStack]:
        """The settled stacks of `source` by prefix (``runs/<stack>/``)."""
        try:
            found = self._db.execute(
                "SELECT prefix, runs, digest, notes, listed_at FROM stacks WHERE source = ?", (source,)
            ).fetchall()
        except sqlite3.DatabaseError:
            return {}
        return {p: SettledStack(r, d, tuple(_loads(notes)), t) for p, r, d, notes, t in found}

    def outcome(self) -> dict | None:
        """The last collect's sources and de-duplication outcome (see update)."""
        text = self._meta.get("outcome")
        try:
            return json.loads(text) if text else None
        except ValueError:
            return None

    def kept_rows(self, dropped: set[str]) -> list[dict] | None:
        """Every stored row but those of `dropped` entries (copies that lost to
        another); None when the entries are unreadable (the manifest is rebuilt)."""
        try:
            return [
                _loads(row)
                for mkey, row in self._db.execute("SELECT mkey, row FROM entries WHERE row IS NOT NULL")
                if mkey not in dropped
            ]
        except sqlite3.DatabaseError:
            self._start_over()
            return None

    def stored_rows(self, dropped: set[str]) -> StoredRows | None:
        """kept_rows, counted now and read only when first used (a collect that
        finds nothing new answers without decoding every row); None when the
        entries are unreadable (the manifest is rebuilt)."""
        try:
            total = self._db.execute("SELECT count(*) FROM entries WHERE row IS NOT NULL").fetchone()[0]
            gone = [
                k
                for (k,) in self._db.execute(
                    "SELECT mkey FROM entries WHERE row IS NOT NULL AND mkey IN (SELECT value FROM json_each(?))",
                    (json.dumps(sorted(dropped)),),
                )
            ]
        except sqlite3.DatabaseError:
            self._start_over()
            return None
        return StoredRows(self.path, dropped, total - len(gone))

    def _migrate_json(self, old: Path) -> None:
        try:
            data = json.loads(old.read_text())
        except OSError:
            return
        except ValueError:
            data = None
        old.unlink(missing_ok=True)
        if isinstance(data, dict) and data.get("row_version") == ROW_VERSION and isinstance(data.get("entries"), dict):
            self.update(data["entries"], data["entries"].keys(), (), data.get("table_fingerprint"))

    def update(
        self,
        entries: dict[str, dict],
        changed,
        removed,
        table_fingerprint: str | None,
        settled: dict[str, dict[str, SettledStack]] | None = None,
        outcome: dict | None = None,
        table_version: int | None = None,
    ) -> None:
        """One transaction: write the `changed` keys of `entries`, drop
        `removed`; with `settled` ({source: {prefix: SettledStack}}) replace
        every settled-stack record; `outcome` (sources, dropped entry keys and
        de-duplication notes) replaces the stored one, None removes it."""
        db = self._db
        db.execute("BEGIN")
        try:
            db.executemany(
                "INSERT OR REPLACE INTO entries VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    (
                        k,
                        e.get("source"),
                        e.get("key"),
                        e.get("url"),
                        e.get("etag"),
                        e.get("size"),
                        _dumps(e["row"]) if "row" in e else None,
                        e.get("reason"),
                    )
                    for k in changed
                    for e in (entries[k],)
                ),
            )
            db.executemany("DELETE FROM entries WHERE mkey = ?", ((k,) for k in removed))
            db.execute("INSERT OR REPLACE INTO meta VALUES ('table_fingerprint', ?)", (table_fingerprint,))
            version = "" if table_version is None else str(table_version)
            db.execute("INSERT OR REPLACE INTO meta VALUES ('table_version', ?)", (version,))
            if settled is not None:
                db.execute("DELETE FROM stacks")
                db.executemany(
                    "INSERT INTO stacks (source, prefix, runs, digest, notes, listed_at) VALUES (?, ?, ?, ?, ?, ?)",
                    (
                        (source, prefix, s.runs, s.digest, _dumps(list(s.notes)), s.listed_at)
                        for source, stacks in settled.items()
                        for prefix, s in stacks.items()
                    ),
                )
            if outcome is None:  # nothing stored may answer for this state
                db.execute("DELETE FROM meta WHERE k = 'outcome'")
                self._meta.pop("outcome", None)
            else:
                text = json.dumps(outcome, sort_keys=True)
                db.execute("INSERT OR REPLACE INTO meta VALUES ('outcome', ?)", (text,))
                self._meta["outcome"] = text
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        self._entries = entries
        self.table_fingerprint = table_fingerprint
        self._meta["table_fingerprint"] = table_fingerprint or ""
        self._meta["table_version"] = "" if table_version is None else str(table_version)

    @property
    def table_version(self) -> int | None:
        """The dataset's version the last collect wrote or found in step (None: unknown)."""
        text = self._meta.get("table_version") or ""
        return int(text) if text.isdigit() else None

    def close(self) -> None:
        self._db.close()
