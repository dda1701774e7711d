"""De-duplication (analysis.collect.trust.dedupe): one row per run, the newest copy
wins, the others are set aside naming the winner, and a copy stored under
another stack never displaces the run it names."""

from __future__ import annotations

from analysis.collect.trust import dedupe
from analysis.collect.validation import Summary
from payload import layout


def _entry(stack: str, run_id: str, finished_at: str | None, *, url: str = "s3://b", under: str | None = None) -> dict:
    """The entry of a result claiming (stack, run_id), stored under `under`'s runs/ (its own stack by default)."""
    key = layout.result_key(under or stack, run_id)
    row = {"stack": stack, "run_id": run_id, "finished_at": finished_at, "source": url, "key": key}
    return {"source": url, "key": key, "url": f"{url}/{key}", "etag": "e", "row": row}


def _mkey(entry: dict) -> str:
    return f"{entry['source']}|{entry['key']}"


def _entries(*entries: dict) -> dict[str, dict]:
    return {_mkey(e): e for e in entries}


def _dropped(entries: dict[str, dict]) -> set[str]:
    """The copies that lost: a row, and why it lost in the entry."""
    return {mkey for mkey, e in entries.items() if "row" in e and "reason" in e}


def test_the_newest_copy_of_a_run_wins_and_the_other_is_set_aside_naming_it():
    older = _entry("aws-a", "r1", "2024-01-01T10:00:00Z", url="s3://one")
    newer = _entry("aws-a", "r1", "2024-01-01T12:00:00Z", url="s3://two")
    summary, entries = Summary(sources=[]), _entries(older, newer)
    rows = dedupe(entries, summary)
    assert rows == [newer["row"]] and _dropped(entries) == {_mkey(older)}
    (note,) = summary.skipped
    assert note["url"] == older["url"] and note["key"] == older["key"]
    assert note["reason"].startswith("duplicate of run r1") and newer["url"] in note["reason"]
    assert newer["row"]["finished_at"] in note["reason"]


def test_the_winner_does_not_depend_on_the_order_entries_were_found():
    a = _entry("aws-a", "r1", "2024-01-01T12:00:00Z", url="s3://a")
    b = _entry("aws-a", "r1", "2024-01-01T10:00:00Z", url="s3://b")
    forward, backward = _entries(a, b), _entries(b, a)
    assert list(forward) != list(backward)
    assert dedupe(forward, Summary(sources=[])) == dedupe(backward, Summary(sources=[])) == [a["row"]]


def test_equal_finish_times_keep_the_first_entry_key():
    first = _entry("aws-a", "r1", "2024-01-01T10:00:00Z", url="s3://a")
    second = _entry("aws-a", "r1", "2024-01-01T10:00:00Z", url="s3://b")
    assert _mkey(first) < _mkey(second)
    entries = _entries(second, first)
    assert dedupe(entries, Summary(sources=[])) == [first["row"]]
    assert _dropped(entries) == {_mkey(second)}


def test_a_missing_finish_time_loses_to_any_finish_time():
    unfinished = _entry("aws-a", "r1", None, url="s3://a")
    finished = _entry("aws-a", "r1", "2024-01-01T10:00:00Z", url="s3://b")
    assert dedupe(_entries(unfinished, finished), Summary(sources=[])) == [finished["row"]]


def test_a_copy_under_another_stack_is_misplaced_and_never_displaces_the_run():
    genuine = _entry("aws-a", "r1", "2024-01-01T10:00:00Z")
    copy = _entry("aws-a", "r1", "2024-01-02T10:00:00Z", under="gcp-b")  # newer, but not where it claims to be
    summary, entries = Summary(sources=[]), _entries(genuine, copy)
    assert dedupe(entries, summary) == [genuine["row"]]
    assert _dropped(entries) == {_mkey(copy)}
    (note,) = summary.skipped
    assert note["key"] == copy["key"] and note["reason"].startswith("misplaced:")
    assert layout.result_key("aws-a", "r1") in note["reason"]  # where it belongs


def test_entries_without_a_row_are_reported_with_their_reason():
    bad = {"source": "s3://b", "key": layout.result_key("aws-a", "r2"), "url": "s3://b/x", "reason": "corrupt: empty"}
    odd = {"source": "s3://b", "key": layout.result_key("aws-a", "r3"), "url": "s3://b/y"}
    good = _entry("aws-a", "r1", "2024-01-01T10:00:00Z")
    summary, entries = Summary(sources=[]), _entries(bad, odd, good)
    assert dedupe(entries, summary) == [good["row"]]
    assert {(n["key"], n["reason"]) for n in summary.skipped} == {(bad["key"], bad["reason"]), (odd["key"], "unknown")}
    assert _dropped(entries) == set()  # only copies that lost are dropped; unreadable files have no row to drop
    assert "reason" not in odd  # and keep the reason they had, or none


def test_rows_come_in_run_id_then_stack_order_one_per_run():
    entries = _entries(
        _entry("gcp-b", "r2", "2024-01-01T10:00:00Z"),
        _entry("aws-a", "r2", "2024-01-01T10:00:00Z"),
        _entry("aws-a", "r1", "2024-01-01T10:00:00Z"),
        _entry("aws-a", "r1", "2024-01-01T11:00:00Z", url="s3://other"),
    )
    rows = dedupe(entries, Summary(sources=[]))
    assert [(r["run_id"], r["stack"]) for r in rows] == [("r1", "aws-a"), ("r2", "aws-a"), ("r2", "gcp-b")]
    assert rows == sorted(rows, key=lambda r: (r["run_id"], r["stack"]))
    assert len({(r["stack"], r["run_id"]) for r in rows}) == len(rows)
