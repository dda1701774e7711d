"""Several stacks' changes in one commit to the table (one per stack is slow, one per collect holds every
row), then their manifest entries: a collect interrupted between batches loses nothing."""

from __future__ import annotations

from dataclasses import replace

from analysis.collect.stackstep import StackChanges
from analysis.collect.summary import Summary
from analysis.dataset.stackwise import commit
from payload import layout

COMMIT_ROWS = 10_000  # rows written or removed per commit
COMMIT_ENTRIES = 50_000  # manifest entries held before they are written


class Batch:
    def __init__(self, loc, table, manifest, summary: Summary, identity: str):
        self.loc, self.table, self.manifest, self.summary, self.identity = loc, table, manifest, summary, identity
        self.pending = StackChanges()

    def add(self, changes: StackChanges) -> None:
        p = self.pending
        p.rows += changes.rows
        p.replacing |= changes.replacing
        p.deleted += changes.deleted
        p.entries += changes.entries
        p.removed += changes.removed
        p.settled.update(changes.settled)

    def full(self) -> bool:
        p = self.pending
        return len(p.rows) + len(p.deleted) >= COMMIT_ROWS or len(p.entries) >= COMMIT_ENTRIES

    def flush(self) -> None:
        p = self.pending
        written, refused = commit(self.loc, p.rows, p.deleted, p.replacing, self.identity)
        if written:
            self.table.refresh()
            self.summary.table_written = True
        if refused:
            self._set_aside(refused)
        self.manifest.write(p.entries, p.removed, p.settled, table_version=self.table.version)
        self.pending = StackChanges()

    def _set_aside(self, refused: list[tuple[dict, str]]) -> None:
        """Rows the table cannot hold, set aside with the reason (summary, manifest entry, settled record);
        a row re-priced from the table keeps its row."""
        entries = {(e.get("source"), e.get("key")): e for _, e in self.pending.entries if e.get("row") is not None}
        for row, reason in refused:
            entry = entries.get((row["source"], row["key"]))
            if entry is None:
                self.summary.skipped.append(
                    {"key": row["key"], "url": row["source"], "reason": f"kept the previous row: {reason}"}
                )
                continue
            entry.pop("row")
            entry["reason"] = reason
            note = {"key": entry["key"], "url": entry.get("url"), "reason": reason}
            self.summary.skipped.append(note)
            where = (entry["source"], layout.stack_prefix_of(entry["key"]))
            if (record := self.pending.settled.get(where)) is not None:
                self.pending.settled[where] = replace(record, notes=(*record.notes, note))
