"""Settled stacks: what a collect carries over from the manifest instead of
listing and reading it again.

A stack is settled when every run directory in it holds a final result that
parsed, nothing is half-uploaded and nothing lies beside the run
directories (analysis.manifest says why that is safe to trust). Its own
module because deciding what is settled, carrying it over and answering a
whole collect from the manifest must agree on one definition."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from analysis.collect.store import table_paths
from analysis.collect.summary import Summary
from analysis.collect.validation import UNKNOWN_RUN_FILE, run_file_problem
from analysis.manifest import SettledStack
from payload import layout

Stacks = dict[str, SettledStack]  # stack prefix (runs/<stack>/) -> as last listed file by file


@dataclass
class SettledBook:
    """The settled stacks of one collect, by source: as stored, not listed this
    time, and what the manifest will hold."""

    before: dict[str, Stacks] = field(default_factory=dict)
    unlisted: dict[str, list[str]] = field(default_factory=dict)  # stack prefixes whose files were not listed
    now: dict[str, Stacks] = field(default_factory=dict)
    # sources whose every stack was settled and unchanged: not yet carried over (the stored outcome may answer)
    deferred: list[str] = field(default_factory=list)
    nothing_listed: bool = True  # every source took the bulk path and every stack in it was settled
    # every stack of every source settled at the end: only then may the outcome answer a later collect
    # (a stack that was not settled may vanish, and settled stacks alone would not show it)
    all_settled: bool = True

    def not_settled(self) -> None:
        """A source listed in full, or not at all: the stored outcome cannot answer for it."""
        self.nothing_listed = self.all_settled = False

    def unsettle(self, entry: dict) -> None:
        """The stack of `entry` (a run to read again next time) is not settled."""
        if self.now.get(entry["source"], {}).pop(layout.stack_prefix_of(entry["key"]), None) is not None:
            self.all_settled = False


def keep_unlisted(url: str, prefixes, settled: Stacks, old_entries: dict, entries: dict, summary: Summary) -> int:
    """Carry the entries, run count and set-aside notes of `url`'s settled
    stacks that were not listed file by file over from the manifest; returns their runs."""
    if not prefixes:
        return 0
    wanted = set(prefixes)
    for mkey, e in old_entries.items():
        if e.get("source") == url and layout.stack_prefix_of(e["key"]) in wanted:
            entries[mkey] = e
            summary.cached += 1
    return count_settled(summary, (settled[p] for p in prefixes))


def count_settled(summary: Summary, stacks: Iterable[SettledStack]) -> int:
    """Add settled stacks carried over from the manifest to `summary` (stacks,
    runs, set-aside notes); returns their runs."""
    runs = 0
    for s in stacks:
        summary.settled_stacks += 1
        runs += s.runs
        summary.skipped.extend(s.notes)
    summary.runs += runs
    return runs


def settled_stacks(url: str, listing: dict, entries: dict, failed: set[str], store, now: float) -> Stacks:
    """The stacks of `url`'s file-by-file listing that are settled: every run
    directory has a result.json that parsed, with a final status, read without
    failure this time; no half-uploaded file and nothing outside a run
    directory. Unknown files in run directories are allowed, kept as notes."""
    from analysis.bulk import runs_digest
    from payload.result import FINAL_STATUSES

    stacks: dict[str, dict] = {}
    for key in listing:
        prefix = layout.stack_prefix_of(key)
        if prefix is None:
            continue
        s = stacks.setdefault(prefix, {"runs": set(), "with_result": set(), "ok": True, "notes": []})
        m = layout.parse_key(key)
        if m is None:  # beside the run directories
            s["ok"] = False
            continue
        s["runs"].add(m.run_id)
        if m.is_result:
            mkey = f"{url}|{key}"
            row = (entries.get(mkey) or {}).get("row")
            if mkey in failed or row is None or row.get("status") not in FINAL_STATUSES:
                s["ok"] = False
            s["with_result"].add(m.run_id)
        elif (why := run_file_problem(m.rest)) == UNKNOWN_RUN_FILE:
            s["notes"].append({"key": key, "reason": why, "url": store.url_for(key)})
        elif why is not None:
            s["ok"] = False  # an upload in progress
    return {
        prefix: SettledStack(len(s["runs"]), runs_digest(s["runs"]), tuple(s["notes"]), now)
        for prefix, s in stacks.items()
        if s["ok"] and s["runs"] == s["with_result"]
    }


def answer_from_manifest(
    manifest, outcome: dict, settled: dict[str, Stacks], summary: Summary, out: Path
) -> Sequence[dict] | None:
    """A collect that found every stack settled and as before: the stored rows
    and the last de-duplication's notes, without judging every row again.
    None (and `summary` untouched) when the stored rows cannot be read."""
    rows = manifest.stored_rows(set(outcome.get("dropped", [])))
    if rows is None:
        return None
    for stacks in settled.values():
        summary.cached += count_settled(summary, stacks.values())  # one result per run
    summary.skipped.extend(outcome.get("skipped", []))
    summary.valid = len(rows)
    summary.table = table_paths(out)
    return rows
