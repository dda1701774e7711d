"""What the last collect saw, so the next one reads only what changed (docs/collect.md, "The manifest"
and "Settled stacks"): one SQLite file of ``entries`` (one per result object, never the rows), ``stacks``
(each source's settled stacks, not listed file by file again until SETTLED_MAX_AGE_S or `collect --full`)
and ``meta`` (format, table version, price catalog). An unreadable one, or of another format, is a cold start."""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Callable, Iterable
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from analysis.collect.validation import UNKNOWN_RUN_FILE, Summary, classify
from analysis.dataset.location import DiskFull, is_disk_full
from analysis.fastjson import dumps as _dumps
from analysis.fastjson import loads as _loads
from payload import layout
from payload.result import FINAL_STATUSES

MANIFEST_NAME = ".collect-manifest.sqlite"
FORMAT = "3"  # what the tables below hold (3: no rows, entries by stack prefix): another format is started over
# A settled stack is trusted for a day: a final result rewritten by hand is seen within that time.
SETTLED_MAX_AGE_S = 24 * 3600.0
ENTRY_COLUMNS = ("mkey", "source", "prefix", "key", "url", "etag", "size", "has_row", "status", "reason")


class ManifestDamaged(OSError):
    """The entries proved unreadable mid-collect: the manifest was started over and the collect reads
    every file again (once: met again in the same collect, it stops it with this message)."""

    def __init__(self, path: Path, detail: str):
        super().__init__(
            f"the collect manifest {path} could not be read or written ({detail}) and was started over, twice in "
            "one collect: check the disk it is on, then run the same collect again (the manifest is a cache: "
            "starting over costs one collect that reads every result again; the table keeps its rows)"
        )


@dataclass(frozen=True)
class SettledStack:
    runs: int  # run directories, each with one result.json (what settled means)
    digest: str  # of the run ids (runs_digest): what the next listing is compared with
    notes: tuple[dict, ...]  # files set aside in it, replayed as found
    listed_at: float  # epoch seconds of that listing
    # file:// only: the stack directory's stamp taken before that listing (analysis.collect.survey);
    # while it is the same, not even the run directories are read
    stamp: str | None = None

    def fresh(self, now: float) -> bool:
        return now - self.listed_at < SETTLED_MAX_AGE_S


DIGEST_KIND = "sum128:"  # a digest without it (a damaged record) is never extended and matches nothing
_MODULUS = 1 << 128


def runs_digest(run_ids: Iterable[str]) -> str:
    """A stack's run ids in one value: the sum of their 128-bit BLAKE2b (a grown stack's needs only the new)."""
    return f"{DIGEST_KIND}{_hash_sum(run_ids) % _MODULUS:032x}"


def runs_digest_with(digest: str, added: Iterable[str]) -> str | None:
    """The digest once `added` (new run ids) joined; None for a digest of another kind."""
    if not digest.startswith(DIGEST_KIND):
        return None
    return f"{DIGEST_KIND}{(int(digest[len(DIGEST_KIND) :], 16) + _hash_sum(added)) % _MODULUS:032x}"


def _hash_sum(run_ids: Iterable[str]) -> int:
    blake2b, number = hashlib.blake2b, int.from_bytes
    return sum([number(blake2b(r.encode(), digest_size=16).digest(), "little") for r in run_ids])


def replay(summary: Summary, stack: SettledStack) -> None:
    """Count a settled stack carried over: its runs (not read again) and the files set aside in it."""
    summary.settled_stacks += 1
    summary.runs += stack.runs
    summary.cached += stack.runs
    summary.skipped.extend(stack.notes)


def settled_stack(objects: dict, status_of: Callable[[str], str | None], notes: list[dict], now: float):
    """The SettledStack of a stack's listing (`objects`), None unless every run directory has a result
    with a final status (`status_of(key)`) and nothing is half-uploaded or lies beside them."""
    results, set_aside, runs = classify(objects)
    if not runs or any(n["reason"] != UNKNOWN_RUN_FILE for n in set_aside):
        return None
    if any(status_of(key) not in FINAL_STATUSES for key in results):
        return None
    return SettledStack(runs, runs_digest({layout.parse_key(k).run_id for k in results}), tuple(notes), now)


class Manifest:
    def __init__(self, path: Path):
        self.path = path
        self._meta: dict[str, str] = {}
        self._db = None
        try:
            self._db = self._connect()
        except sqlite3.DatabaseError as exc:  # not a database, or a damaged one: rebuild
            if is_disk_full(exc):  # not damaged: kept for when there is room again
                raise DiskFull(str(path), f"opening the collect manifest: {exc}") from exc
            self._start_over()

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.path, isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("BEGIN IMMEDIATE")  # two collects starting at once agree on one format
            db.execute("CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT)")
            meta = dict(db.execute("SELECT k, v FROM meta"))
            if meta.get("format") != FORMAT:
                for table in ("entries", "stacks", "meta"):
                    db.execute(f"DROP TABLE IF EXISTS {table}")  # noqa: S608 - fixed table names
                db.execute("CREATE TABLE meta (k TEXT PRIMARY KEY, v TEXT)")
                db.execute("INSERT INTO meta VALUES ('format', ?)", (FORMAT,))
                meta = {}
            db.execute(
                "CREATE TABLE IF NOT EXISTS entries (mkey TEXT PRIMARY KEY, source TEXT, prefix TEXT, key TEXT,"
                " url TEXT, etag TEXT, size INTEGER, has_row INTEGER, status TEXT, reason TEXT)"
            )
            # (source, prefix, key): a stack's keys are read from the index alone (a grown stack of 20,000 runs)
            db.execute("CREATE INDEX IF NOT EXISTS entries_by_stack_key ON entries (source, prefix, key)")
            db.execute(
                "CREATE TABLE IF NOT EXISTS stacks (source TEXT, prefix TEXT, runs INTEGER,"
                " digest TEXT, notes BLOB, listed_at REAL, stamp TEXT, PRIMARY KEY (source, prefix))"
            )
            db.execute("COMMIT")
            self._meta = meta
            return db
        except BaseException:
            db.close()
            raise

    def _start_over(self) -> None:
        if self._db is not None:
            self._db.close()
        for suffix in ("", "-wal", "-shm"):
            Path(f"{self.path}{suffix}").unlink(missing_ok=True)
        self._meta = {}
        self._db = self._connect()

    def readable(self) -> bool:
        """Whether the first pages of the entries read (a damaged file is rebuilt); later damage raises ManifestDamaged."""
        try:
            for table in ("entries", "stacks"):
                self._db.execute(f"SELECT * FROM {table} LIMIT 1").fetchall()  # noqa: S608 - fixed names
        except sqlite3.DatabaseError:
            self._start_over()
            return False
        return True

    def stack_entries(self, source: str, prefix: str) -> dict[str, dict]:
        rows = self._read(
            f"SELECT {', '.join(ENTRY_COLUMNS)} FROM entries WHERE source = ? AND prefix = ?",  # noqa: S608
            (source, prefix),
        )
        found = {}
        for mkey, *values in rows:  # an entry as collect uses it: `reason` only when set aside
            e = found[mkey] = dict(zip(ENTRY_COLUMNS[1:], values, strict=True))
            e["has_row"] = bool(e["has_row"])
            if e["reason"] is None:
                del e["reason"]
        return found

    def stack_keys(self, source: str, prefix: str) -> list[str]:
        """The object keys of one source's stack (from the index alone)."""
        return [k for (k,) in self._read("SELECT key FROM entries WHERE source = ? AND prefix = ?", (source, prefix))]

    def runs_known(self, source: str, prefix: str, run_ids: Iterable[str]) -> set[str]:
        """Which of `run_ids` the manifest has entries of in a stack: an index seek each (keys may be a million)."""
        query = "SELECT 1 FROM entries WHERE source = ? AND prefix = ? AND key >= ? AND key < ? LIMIT 1"
        # '0' follows '/': every key of run r lies in [prefix r/, prefix r0)
        return {r for r in run_ids if self._read(query, (source, prefix, f"{prefix}{r}/", f"{prefix}{r}0"))}

    def prefixes(self, source: str) -> set[str]:
        """The stack prefixes of `source` with entries (the stacks the last collects saw there)."""
        return set(self._skip_scan("SELECT min(prefix) FROM entries WHERE source = ? AND prefix > ?", source))

    def _read(self, query: str, args: tuple) -> list[tuple]:
        """A query's rows; ManifestDamaged (the file started over) when they cannot be read."""
        try:
            return self._db.execute(query, args).fetchall()
        except sqlite3.DatabaseError as exc:
            self._damaged(exc)

    def _skip_scan(self, query: str, *args) -> list[str]:
        """The distinct values of an index's next column, one seek each (`query` selects the least value
        greater than its last parameter), not a pass over a million entries."""
        found, last = [], ""
        while (value := self._read(query, (*args, last))[0][0]) is not None:
            found.append(value)
            last = value
        return found

    def settled(self, source: str) -> dict[str, SettledStack]:
        """The settled stacks of `source` by prefix (``runs/<stack>/``)."""
        try:
            found = self._db.execute(
                "SELECT prefix, runs, digest, notes, listed_at, stamp FROM stacks WHERE source = ?", (source,)
            ).fetchall()
        except sqlite3.DatabaseError:
            return {}
        return {p: SettledStack(r, d, tuple(_loads(notes)), t, stamp) for p, r, d, notes, t, stamp in found}

    def write(
        self,
        entries: Iterable[tuple[str, dict]],
        removed: Iterable[str] = (),
        settled: dict[tuple[str, str], SettledStack | None] | None = None,
        table_version: int | None = None,
    ) -> None:
        """One transaction: `entries` ((mkey, entry)) written, `removed` dropped, settled records set or
        (None) dropped by (source, prefix), the table version recorded."""
        with self._transaction() as db:
            db.executemany(
                f"INSERT OR REPLACE INTO entries VALUES ({', '.join('?' * len(ENTRY_COLUMNS))})",
                (_entry_values(k, e) for k, e in entries),
            )
            db.executemany("DELETE FROM entries WHERE mkey = ?", ((k,) for k in removed))
            for (source, prefix), s in (settled or {}).items():
                db.execute("DELETE FROM stacks WHERE source = ? AND prefix = ?", (source, prefix))
                if s is not None:
                    db.execute(
                        "INSERT INTO stacks VALUES (?, ?, ?, ?, ?, ?, ?)",
                        (source, prefix, s.runs, s.digest, _dumps(list(s.notes)), s.listed_at, s.stamp),
                    )
            self._set_meta(db, table_version=table_version)

    @contextmanager
    def _transaction(self):
        """Committed whole, rolled back on an error; a database damaged where it writes starts over (ManifestDamaged)."""
        db = self._db
        db.execute("BEGIN")
        try:
            yield db
            db.execute("COMMIT")
        except sqlite3.DatabaseError as exc:
            self._damaged(exc)
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def _damaged(self, exc: sqlite3.DatabaseError):
        """A full disk is named as such (the manifest is kept: not damaged); anything else starts it over."""
        if is_disk_full(exc):
            if self._db.in_transaction:
                with suppress(sqlite3.Error):
                    self._db.execute("ROLLBACK")
            raise DiskFull(str(self.path), f"writing the collect manifest: {exc}") from exc
        self._start_over()
        raise ManifestDamaged(self.path, str(exc)) from exc

    def sources(self) -> set[str]:
        found = set(self._skip_scan("SELECT min(source) FROM entries WHERE source > ?"))
        return found | {s for (s,) in self._db.execute("SELECT DISTINCT source FROM stacks")}

    def _set_meta(self, db, **values) -> None:
        for k, v in values.items():
            if v is not None:
                db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (k, str(v)))
                self._meta[k] = str(v)

    def finish(self, restamped: dict[str, dict[str, str]], sources: Iterable[str], table_version, priced_with) -> None:
        """The end of a collect: settled stacks' stamps moved on (a journal read further than they said:
        {source: {prefix: stamp}}), sources not in `sources` forgotten, the table version and catalog recorded."""
        gone = sorted(self.sources() - set(sources))
        with self._transaction() as db:
            for source, stamps in restamped.items():
                db.executemany(
                    "UPDATE stacks SET stamp = ? WHERE source = ? AND prefix = ?",
                    [(stamp, source, prefix) for prefix, stamp in stamps.items()],
                )
            for table in ("entries", "stacks"):
                db.executemany(f"DELETE FROM {table} WHERE source = ?", ((s,) for s in gone))  # noqa: S608
            self._set_meta(db, table_version=table_version, priced_with=priced_with)

    @property
    def table_version(self) -> int | None:
        text = self._meta.get("table_version") or ""
        return int(text) if text.isdigit() else None

    @property
    def priced_with(self) -> str | None:
        return self._meta.get("priced_with")

    def close(self) -> None:
        self._db.close()


def _entry_values(mkey: str, e: dict) -> tuple:
    """An entry's ENTRY_COLUMNS, from a "row" (read now) or `has_row`."""
    row = e.get("row")
    made = {
        "mkey": mkey,
        "prefix": e.get("prefix") or layout.stack_prefix_of(e.get("key") or ""),
        "has_row": int(row is not None or bool(e.get("has_row"))),
        "status": row.get("status") if row is not None else e.get("status"),
    }
    return tuple(made[c] if c in made else e.get(c) for c in ENTRY_COLUMNS)
