"""A settled stack that only gained run directories is collected at the cost of
its new runs: neither its manifest entries nor its table keys are read, and the
table, the manifest and the summary come out exactly as the whole step makes
them. A manifest damaged past its first pages is found while a stack is read,
started over, and the collect lists and reads everything again."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import deltalake
import pytest
from synthetic_results import make_result, result_bytes, result_key

import analysis.collect.orchestrate as orchestrate
from analysis.collect import collect
from analysis.collect.manifest import MANIFEST_NAME, Manifest
from payload.storage import open_store

OFFERINGS = ("aws/p3.2xlarge", "aws/g4dn.xlarge", "gcp/n1-standard-4+1xk80")


def _put(bucket: Path, offering: str, repeats: range, status: str = "completed") -> list[str]:
    store, keys = open_store(str(bucket)), []
    for i in repeats:
        r = make_result(offering, "resnet50", samples_per_second=100.0 + i, hourly_usd=1.0, repeat=i, status=status)
        store.put_bytes(result_key(r), result_bytes(r))
        keys.append(result_key(r))
    return keys


def _table(table: Path) -> list[dict]:
    rows = deltalake.DeltaTable(str(table)).to_pyarrow_table().to_pylist()
    for row in rows:
        row.pop("collected_at", None)
    return sorted(rows, key=lambda r: (r["source"], r["key"]))


def _manifest(table: Path) -> tuple[list, list]:
    db = sqlite3.connect(table / MANIFEST_NAME)
    entries = db.execute("SELECT * FROM entries ORDER BY mkey").fetchall()
    stacks = db.execute("SELECT source, prefix, runs, digest, notes FROM stacks ORDER BY source, prefix").fetchall()
    db.close()
    return entries, stacks


def _summary(summary) -> dict:
    d = summary.to_dict()
    d.pop("seconds")
    d.pop("table")
    return d


@pytest.fixture
def grown(tmp_path: Path) -> tuple[Path, Path]:
    """A bucket of three settled stacks (one with an unknown file beside a result),
    collected, then two of its stacks gain runs: the table before the second collect."""
    bucket = tmp_path / "bucket"
    first = [_put(bucket, o, range(4)) for o in OFFERINGS]
    (bucket / first[0][0]).with_name("notes.weird").write_text("kept beside the result")
    collect([str(bucket)], tmp_path / "table")
    _put(bucket, OFFERINGS[0], range(4, 7))
    _put(bucket, OFFERINGS[1], range(4, 5))
    return bucket, tmp_path / "table"


def _both_ways(bucket: Path, table: Path, monkeypatch) -> tuple[tuple, tuple, list]:
    """(summary, table, manifest) of the next collect with and without appended steps, and what each appended step returned."""
    whole = table.with_name("whole")
    shutil.copytree(table, whole)
    taken = []
    real = orchestrate.appended_step

    def spy(*args):
        got = real(*args)
        taken.append(got is not None)
        return got

    monkeypatch.setattr(orchestrate, "appended_step", spy)
    fast, _ = collect([str(bucket)], table)
    monkeypatch.setattr(orchestrate, "appended_step", lambda *args: None)
    slow, _ = collect([str(bucket)], whole)
    return (
        (_summary(fast), _table(table), _manifest(table)),
        (_summary(slow), _table(whole), _manifest(whole)),
        taken,
    )


def test_a_stack_that_gained_runs_costs_its_new_runs_and_ends_as_the_whole_step_ends(grown, monkeypatch):
    bucket, table = grown
    read_entries = []
    real_entries = Manifest.stack_entries

    def entries(self, source, prefix):
        read_entries.append(prefix)
        return real_entries(self, source, prefix)

    monkeypatch.setattr(Manifest, "stack_entries", entries)
    fast, slow, taken = _both_ways(bucket, table, monkeypatch)
    assert taken == [True, True]  # the two stacks that grew; the third was not opened
    assert fast == slow
    summary = fast[0]
    assert (summary["new"], summary["runs"], summary["valid"], summary["cached"]) == (4, 16, 16, 12)
    assert any(s["key"].endswith("notes.weird") for s in summary["skipped"])
    _, stacks = fast[2]
    assert [runs for _, _, runs, _, _ in stacks] == [5, 7, 4]  # still settled, with their new runs
    # the appended steps read no stack's entries (the slow path, after them, read the two that grew)
    assert len(read_entries) == 2


def test_a_new_run_still_running_leaves_the_stack_unsettled_as_the_whole_step_does(grown, monkeypatch):
    bucket, table = grown
    _put(bucket, OFFERINGS[2], range(9, 10), status="running")
    fast, slow, taken = _both_ways(bucket, table, monkeypatch)
    assert taken == [True, True, True] and fast == slow
    _, stacks = fast[2]
    assert len(stacks) == 2  # the stack with a run still going is listed file by file next time


def test_a_stack_that_lost_a_run_takes_the_whole_step(grown, monkeypatch):
    bucket, table = grown
    collected = make_result(OFFERINGS[1], "resnet50", samples_per_second=100.0, hourly_usd=1.0, repeat=0)
    shutil.rmtree((bucket / result_key(collected)).parent)  # a run the first collect read
    fast, slow, taken = _both_ways(bucket, table, monkeypatch)
    assert False in taken and fast == slow


def test_a_stack_with_a_run_swapped_for_another_takes_the_whole_step(grown, monkeypatch):
    """As many runs as its record says, but not the same ones: the digest tells them apart."""
    bucket, table = grown
    collected = make_result(OFFERINGS[2], "resnet50", samples_per_second=100.0, hourly_usd=1.0, repeat=0)
    shutil.rmtree((bucket / result_key(collected)).parent)
    _put(bucket, OFFERINGS[2], range(20, 21))
    fast, slow, taken = _both_ways(bucket, table, monkeypatch)
    assert taken == [True, True, False] and fast == slow
    assert (fast[0]["new"], fast[0]["valid"]) == (5, 16)


def test_a_manifest_with_digests_of_no_known_kind_reads_the_stacks_again(grown, monkeypatch):
    """Records whose digest is of no known kind (damaged): the stacks are read again and
    the collect finds what one without appended steps finds; the two grown stacks get a digest of the current kind."""
    from analysis.collect.manifest import DIGEST_KIND

    bucket, table = grown
    db = sqlite3.connect(table / MANIFEST_NAME)
    db.execute("UPDATE stacks SET digest = 'damaged', stamp = NULL")
    db.commit()
    db.close()
    fast, slow, _ = _both_ways(bucket, table, monkeypatch)
    assert fast[:2] == slow[:2] and fast[2][0] == slow[2][0]  # the summary, the table, the manifest's entries
    digests = [digest for _, _, _, digest, _ in fast[2][1]]
    assert [d.startswith(DIGEST_KIND) for d in digests[:2]] == [True, True]


def _run_ids_by_stack(table: Path) -> dict[str, set[str]]:
    """{stack prefix: run ids} of the settled stacks, as the manifest's entries know them."""
    from analysis.collect.stackstep import run_dirs_of

    manifest = Manifest(table / MANIFEST_NAME)
    stacks = manifest._db.execute("SELECT source, prefix FROM stacks").fetchall()
    found = {prefix: run_dirs_of(prefix, manifest.stack_keys(source, prefix)) for source, prefix in stacks}
    manifest.close()
    return found


def _damage_a_leaf(path: Path) -> None:
    """Overwrite the last leaf page of the entries table: its first pages still read."""
    db = sqlite3.connect(path)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    leaf = db.execute("SELECT max(pageno) FROM dbstat WHERE name = 'entries' AND pagetype = 'leaf'").fetchone()[0]
    root = db.execute("SELECT rootpage FROM sqlite_master WHERE name = 'entries'").fetchone()[0]
    size = db.execute("PRAGMA page_size").fetchone()[0]
    db.close()
    assert leaf != root  # enough entries for more than one page
    data = bytearray(path.read_bytes())
    data[(leaf - 1) * size : leaf * size] = b"\x07" * size
    path.write_bytes(bytes(data))


def test_a_manifest_damaged_past_its_first_pages_starts_over_and_loses_nothing(tmp_path):
    bucket = tmp_path / "bucket"
    for o in OFFERINGS:
        _put(bucket, o, range(12))
    collect([str(bucket)], tmp_path / "table")
    before = _table(tmp_path / "table")
    _damage_a_leaf(tmp_path / "table" / MANIFEST_NAME)
    _put(bucket, OFFERINGS[1], range(12, 13))
    summary, _ = collect([str(bucket)], tmp_path / "table")
    assert summary.new == 37 and summary.valid == 37 and not summary.incomplete  # every result read again
    after = _table(tmp_path / "table")
    assert len(after) == 37 and [r for r in after if r in before] == before
    summary, _ = collect([str(bucket)], tmp_path / "table")  # and the manifest it rebuilt works
    assert (summary.new, summary.cached) == (0, 37)


def test_a_local_settled_stack_whose_directory_is_as_listed_is_not_read(tmp_path, monkeypatch):
    """file://: a settled stack's directory stamp (mtime, inode, links) taken before its
    listing stands for its run directories: while it is the same, they are not read; a
    run added or removed changes it, and the stack is read again at once."""
    from analysis.collect import survey

    bucket = tmp_path / "bucket"
    for o in OFFERINGS:
        _put(bucket, o, range(3))
    collect([str(bucket)], tmp_path / "table")
    read = []
    real = survey._FileStacks.run_dirs
    monkeypatch.setattr(survey._FileStacks, "run_dirs", lambda self, prefix: read.append(prefix) or real(self, prefix))
    summary, _ = collect([str(bucket)], tmp_path / "table")
    assert read == [] and (summary.new, summary.cached, summary.settled_stacks) == (0, 9, 3)
    added = _put(bucket, OFFERINGS[1], range(3, 4))[0]
    summary, _ = collect([str(bucket)], tmp_path / "table")
    assert read == [added.rsplit("/", 2)[0] + "/"] and (summary.new, summary.valid) == (1, 10)
    shutil.rmtree((bucket / added).parent)
    read.clear()
    summary, _ = collect([str(bucket)], tmp_path / "table")
    assert read == [added.rsplit("/", 2)[0] + "/"] and summary.valid == 9


def test_a_bucket_stack_that_gained_runs_ends_as_the_whole_step_ends(s3_bucket, tmp_path, monkeypatch):
    """s3:// (moto): the same appended step, the new runs listed by run directory or the stack whole."""
    url = f"s3://{s3_bucket}"
    store = open_store(url)
    for o in OFFERINGS:
        for i in range(3):
            r = make_result(o, "resnet50", samples_per_second=100.0 + i, hourly_usd=1.0, repeat=i)
            store.put_bytes(result_key(r), result_bytes(r))
    collect([url], tmp_path / "table")
    for i in range(3, 5):
        r = make_result(OFFERINGS[2], "resnet50", samples_per_second=100.0 + i, hourly_usd=1.0, repeat=i)
        store.put_bytes(result_key(r), result_bytes(r))
    whole = tmp_path / "whole"
    shutil.copytree(tmp_path / "table", whole)
    taken = []
    real = orchestrate.appended_step
    monkeypatch.setattr(orchestrate, "appended_step", lambda *a: taken.append(got := real(*a)) or got)
    fast, _ = collect([url], tmp_path / "table")
    monkeypatch.setattr(orchestrate, "appended_step", lambda *a: None)
    slow, _ = collect([url], whole)
    assert [t is not None for t in taken] == [True]
    assert (_summary(fast), _table(tmp_path / "table"), _manifest(tmp_path / "table")) == (
        _summary(slow),
        _table(whole),
        _manifest(whole),
    )
    assert (fast.new, fast.valid) == (2, 11)
