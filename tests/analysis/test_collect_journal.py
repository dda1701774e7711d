"""A bucket stack's journal (payload.layout: `journal/<stack>/<stamp>-<run-id>`,
written when a run's result lands): a settled stack whose writers keep one is
checked by its journal, not by listing every run directory; new runs are read
alone; the answer is what a full listing gives. Against moto's S3 server (the
bulk path) and the Cloud Storage emulator."""

from __future__ import annotations

import time
from collections import Counter

import pytest
from synthetic_results import make_result, result_bytes

from analysis.collect import collect, stackstep, survey
from analysis.collect import manifest as manifest_mod
from payload import layout
from payload.spool import announce
from payload.storage import StorageError, open_store

STACK_OFFERING = "aws/p3.2xlarge"


@pytest.fixture(params=["s3", "gs"])
def bucket_url(request):
    if request.param == "s3":
        return f"s3://{request.getfixturevalue('s3_bucket')}/team"
    return f"gs://{request.getfixturevalue('gcs_bucket')}/team"


class Writer:
    """Puts results into one stack as the payload does: the result, then its journal entry."""

    def __init__(self, url: str, stack: str = "aws-p3-2x-a"):
        self.store, self.stack = open_store(url), stack
        r = make_result(STACK_OFFERING, "resnet50", hourly_usd=3.06, train_seconds=600.0)
        self.template, self.template_run = (
            result_bytes(r).replace(f'"stack": "{r["stack"]}"'.encode(), f'"stack": "{stack}"'.encode()),
            r["run_id"],
        )

    def run(self, run_id: str, *, journal: bool = True, when: float | None = None) -> None:
        body = self.template.replace(self.template_run.encode(), run_id.encode())
        self.store.put_bytes(layout.result_key(self.stack, run_id), body)
        if journal:
            self.announce(run_id, when)

    def announce(self, run_id: str, when: float | None = None) -> None:
        """The payload's own announcement (payload.spool), at `when` when given."""
        clock = time.time if when is None else (lambda: when)
        assert announce(self.store, layout.result_key(self.stack, run_id), clock=clock)


class Calls:
    """What a collect asked the bucket for: run-directory listings of a stack, journal
    reads, whole-stack listings and the run directories listed one by one."""

    def __init__(self, monkeypatch):
        self.seen: Counter = Counter()
        self.runs_listed: list[str] = []
        self._wrap(monkeypatch, survey._DelimiterStacks, "run_dirs", "run_dirs")
        self._wrap(monkeypatch, survey._DelimiterStacks, "journal", "journal")
        real_listed = survey.SourceView._listed

        def listed(view, prefix):
            if prefix.count("/") == 2:  # runs/<stack>/: the stack whole, not one run directory
                self.seen["whole"] += 1
            return real_listed(view, prefix)

        monkeypatch.setattr(survey.SourceView, "_listed", listed)
        real = stackstep._listed_runs

        def listed_runs(view, prefix, run_ids):
            self.runs_listed.extend(run_ids)
            return real(view, prefix, run_ids)

        monkeypatch.setattr(stackstep, "_listed_runs", listed_runs)

    def _wrap(self, monkeypatch, cls, name, label):
        real = getattr(cls, name)

        def counted(obj, *args, **kw):
            self.seen[label] += 1
            return real(obj, *args, **kw)

        monkeypatch.setattr(cls, name, counted)

    def take(self) -> tuple[dict, list[str]]:
        out = (dict(self.seen), sorted(self.runs_listed))
        self.seen.clear()
        self.runs_listed.clear()
        return out


def _ids(rows) -> set[str]:
    return {r["run_id"] for r in rows}


def _stamp(out, url: str, stack: str) -> str | None:
    return manifest_mod.Manifest(out / manifest_mod.MANIFEST_NAME).settled(url)[f"runs/{stack}/"].stamp


def test_a_journaled_stack_is_checked_by_its_journal_and_new_runs_are_read_alone(bucket_url, tmp_path, monkeypatch):
    w = Writer(bucket_url)
    for i in range(5):
        w.run(f"20250101T000000Z-i-{i:03d}-resnet50")
    out = tmp_path / "out"
    cold, cold_rows = collect([bucket_url], out)
    assert cold.valid == len(cold_rows) == 5
    assert survey.journal_since(_stamp(out, bucket_url, w.stack)) is not None  # the stack keeps a journal stamp

    calls = Calls(monkeypatch)
    warm, warm_rows = collect([bucket_url], out)
    seen, listed = calls.take()
    assert seen == {"journal": 1} and listed == []  # no run directory listed, no stack listed whole
    assert warm_rows == cold_rows and warm.new == 0

    w.run("20250102T000000Z-i-new-resnet50")
    summary, rows = collect([bucket_url], out)
    seen, listed = calls.take()
    assert seen == {"journal": 1} and listed == ["20250102T000000Z-i-new-resnet50"]
    assert summary.new == 1 and _ids(rows) == _ids(cold_rows) | {"20250102T000000Z-i-new-resnet50"}

    again, again_rows = collect([bucket_url], out)  # the new run's entry is in the window: known, not read
    seen, listed = calls.take()
    assert seen == {"journal": 1} and listed == [] and again.new == 0 and again_rows == rows
    full, full_rows = collect([bucket_url], tmp_path / "fresh")  # what a collect from nothing finds
    assert full_rows == rows and full.valid == summary.valid


def test_a_run_announced_late_within_the_window_is_found(bucket_url, tmp_path, monkeypatch):
    """An entry stamped before the last listing (a writer's clock a little behind, or an
    upload that took a while) but within JOURNAL_WINDOW_S of it is still read."""
    w = Writer(bucket_url)
    w.run("20250101T000000Z-i-000-resnet50")
    out = tmp_path / "out"
    collect([bucket_url], out)
    late = time.time() - layout.JOURNAL_WINDOW_S / 2
    w.run("20250101T000000Z-i-late-resnet50", when=late)
    summary, rows = collect([bucket_url], out)
    assert summary.new == 1 and "20250101T000000Z-i-late-resnet50" in _ids(rows)


def test_what_the_journal_does_not_name_waits_for_the_next_full_listing(bucket_url, tmp_path, monkeypatch):
    """A run put without an entry (an older payload's) in a journaled stack is not seen by a
    collect that trusts the journal; --full, or the settled record's age, lists it."""
    w = Writer(bucket_url)
    w.run("20250101T000000Z-i-000-resnet50")
    out = tmp_path / "out"
    collect([bucket_url], out)
    w.run("20250101T000000Z-i-quiet-resnet50", journal=False)
    summary, rows = collect([bucket_url], out)
    assert "20250101T000000Z-i-quiet-resnet50" not in _ids(rows)
    summary, rows = collect([bucket_url], out, full=True)
    assert summary.new == 1 and "20250101T000000Z-i-quiet-resnet50" in _ids(rows)
    w.run("20250101T000000Z-i-quiet2-resnet50", journal=False)
    monkeypatch.setattr(manifest_mod, "SETTLED_MAX_AGE_S", 0.0)  # trusted for no time: listed in full
    summary, rows = collect([bucket_url], out)
    assert "20250101T000000Z-i-quiet2-resnet50" in _ids(rows)


def test_an_entry_for_a_run_that_is_not_there_changes_nothing(bucket_url, tmp_path, monkeypatch):
    """An entry is a hint: one naming a run with no files (forged, or removed since) adds
    no row, and the stack's record stays what a full listing would make of it."""
    w = Writer(bucket_url)
    for i in range(3):
        w.run(f"20250101T000000Z-i-{i:03d}-resnet50")
    out = tmp_path / "out"
    _, cold_rows = collect([bucket_url], out)
    w.announce("20250101T000000Z-i-ghost-resnet50")
    stamp = layout.journal_stamp(time.time())
    for odd in (f"{stamp}-bad run", f"{stamp}-..", "not-an-entry", f"{stamp}-x/y"):  # not entries: never read
        w.store.put_bytes(f"{layout.journal_prefix(w.stack)}{odd}", b"")
    summary, rows = collect([bucket_url], out)
    assert rows == cold_rows and summary.new == 0
    record = manifest_mod.Manifest(out / manifest_mod.MANIFEST_NAME).settled(bucket_url)[f"runs/{w.stack}/"]
    assert record.runs == 3
    calls = Calls(monkeypatch)
    monkeypatch.setattr(manifest_mod, "SETTLED_MAX_AGE_S", 0.0)
    full, full_rows = collect([bucket_url], out)
    assert full_rows == cold_rows and calls.take()[0].get("whole") == 1


def test_a_stack_whose_journal_cannot_be_read_is_checked_by_its_run_directories(bucket_url, tmp_path, monkeypatch):
    w = Writer(bucket_url)
    w.run("20250101T000000Z-i-000-resnet50")
    out = tmp_path / "out"
    collect([bucket_url], out)
    w.run("20250101T000000Z-i-001-resnet50")

    def down(self, prefix, since):
        raise StorageError("the journal's listing failed")

    monkeypatch.setattr(survey._DelimiterStacks, "journal", down)
    calls = Calls(monkeypatch)
    summary, rows = collect([bucket_url], out)
    assert calls.take()[0].get("run_dirs") == 1 and summary.new == 1 and len(rows) == 2


def test_a_journal_read_further_moves_the_stamp_on(bucket_url, tmp_path):
    """Entries of runs already known (an upload burst just before the last listing) are
    read once: the stamp then moves on, and the next collect starts after them."""
    w = Writer(bucket_url)
    w.run("20250101T000000Z-i-000-resnet50")
    out = tmp_path / "out"
    collect([bucket_url], out)
    first = survey.journal_since(_stamp(out, bucket_url, w.stack))
    collect([bucket_url], out)  # the entry lies within the window: read, known
    second = survey.journal_since(_stamp(out, bucket_url, w.stack))
    assert second > first


def test_a_stack_without_a_journal_is_checked_by_run_directory_as_before(s3_bucket, tmp_path, monkeypatch):
    url = f"s3://{s3_bucket}"
    w = Writer(url)
    for i in range(2):
        w.run(f"20250101T000000Z-i-{i:03d}-resnet50", journal=False)
    out = tmp_path / "out"
    collect([url], out)
    assert _stamp(out, url, w.stack) is None
    calls = Calls(monkeypatch)
    w.run("20250101T000000Z-i-002-resnet50", journal=False)
    summary, rows = collect([url], out)
    seen, listed = calls.take()
    assert seen.get("run_dirs") == 1 and "journal" not in seen and listed == ["20250101T000000Z-i-002-resnet50"]
    assert summary.new == 1 and len(rows) == 3
    w.announce("20250101T000000Z-i-002-resnet50")  # its writers begin a journal: checked by it from the next collect
    collect([url], out)
    assert survey.journal_since(_stamp(out, url, w.stack)) is not None
    calls.take()
    collect([url], out)
    assert calls.take()[0] == {"journal": 1}
