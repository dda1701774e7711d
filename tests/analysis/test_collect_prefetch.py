"""analysis.collect.sources.Prefetch on moto S3: once a step's own downloads are done, the next stack's new
results are downloaded on a thread of their own and handed to its step, which parses and judges
them as if it had read them; the table is the one a collect without it writes. What is fetched
ahead is only what the step would read, within a byte budget; a ranged read that no longer parses
is read again whole by the step; a prefetch that fails costs nothing but its head start."""

from __future__ import annotations

import threading

import pandas as pd
import pytest
from test_collect import listed_before_it_grew
from test_collect_bounded_s3 import _put

from analysis.collect import collect, sources
from payload import layout
from payload.storage import open_store

PREFETCH_THREAD = "collect-prefetch"


class ReadsByThread:
    """Every bulk read (analysis.collect.s3.S3Bulk.get): (key, whole?, thread name)."""

    def __init__(self, monkeypatch):
        from analysis.collect import s3 as bulk

        self.reads: list[tuple[str, bool, str]] = []
        real = bulk.S3Bulk.get

        async def get(source, key, size=None):
            self.reads.append((key, size is None, threading.current_thread().name))
            return await real(source, key, size)

        monkeypatch.setattr(bulk.S3Bulk, "get", get)

    def stacks_read_on(self, prefix: str) -> set[str]:
        return {layout.parse_key(k).stack for k, _, t in self.reads if t.startswith(prefix)}


def _infos(url: str):
    return list(open_store(url).list(layout.ROOT))


def first_key_of(url: str, stack: str) -> str:
    """The first result key of `stack` in the bucket at `url`."""
    return min(i.key for i in _infos(url) if layout.parse_key(i.key).stack == stack)


def _table(path) -> pd.DataFrame:
    return pd.read_parquet(path / "results.parquet").sort_values(["stack", "run_id"]).reset_index(drop=True)


@pytest.fixture
def four_stacks(s3_bucket):
    url = f"s3://{s3_bucket}"
    return url, _put(url, stacks=4, runs=3)


def test_the_next_stacks_results_are_read_ahead_and_the_table_is_the_same(four_stacks, tmp_path, monkeypatch):
    url, held = four_stacks
    stacks = sorted(held)
    reads = ReadsByThread(monkeypatch)
    summary, rows = collect([url], tmp_path / "ahead")
    # the first stack is read by its step; every later one by the prefetch, during the step before it
    assert reads.stacks_read_on(PREFETCH_THREAD) == set(stacks[1:])
    assert {layout.parse_key(k).stack for k, _, t in reads.reads if not t.startswith(PREFETCH_THREAD)} == {stacks[0]}
    assert len(reads.reads) == summary.new == summary.valid == 12  # each result read once

    monkeypatch.setattr(sources.Prefetch, "start", lambda self, views: None)  # the same collect without it
    reads.reads.clear()
    plain_summary, plain_rows = collect([url], tmp_path / "plain")
    assert reads.stacks_read_on(PREFETCH_THREAD) == set()
    assert rows == plain_rows
    assert (summary.runs, summary.new, summary.valid) == (plain_summary.runs, plain_summary.new, plain_summary.valid)
    pd.testing.assert_frame_equal(_table(tmp_path / "ahead"), _table(tmp_path / "plain"))


def test_a_result_read_ahead_that_grew_since_the_listing_is_read_again_whole(four_stacks, tmp_path, monkeypatch):
    """Read ahead by range with the listing's size, a result replaced by a longer one in between
    arrives cut short: its step reads it whole before judging it, never sets it aside."""
    url, held = four_stacks
    grown = first_key_of(url, sorted(held)[2])
    listed_before_it_grew(monkeypatch, grown)
    reads = ReadsByThread(monkeypatch)
    summary, rows = collect([url], tmp_path / "out")
    assert (grown, False, f"{PREFETCH_THREAD}-0") in reads.reads  # cut short, ahead of its step
    whole = [(k, t) for k, is_whole, t in reads.reads if is_whole]
    assert whole == [(grown, "MainThread")]  # read again whole by the step
    assert (summary.new, summary.valid, summary.skipped) == (12, 12, [])


def test_a_prefetch_that_fails_costs_only_its_head_start(four_stacks, tmp_path, monkeypatch):
    url, held = four_stacks

    def broken(*args):
        raise RuntimeError("the prefetch's loop died")

    monkeypatch.setattr(sources, "_fetch_ahead", broken)
    reads = ReadsByThread(monkeypatch)
    summary, rows = collect([url], tmp_path / "out")
    assert reads.stacks_read_on(PREFETCH_THREAD) == set() and len(reads.reads) == 12
    assert (summary.new, summary.valid, summary.skipped, summary.incomplete) == (12, 12, [], [])
    assert len(rows) == 12


def test_what_is_read_ahead_stays_within_its_byte_budget(four_stacks, tmp_path, monkeypatch):
    url, held = four_stacks
    size = max(i.size for i in _infos(url))
    monkeypatch.setattr(sources, "PREFETCH_BYTES", size + size // 2)  # room for one result a stack
    reads = ReadsByThread(monkeypatch)
    summary, rows = collect([url], tmp_path / "out")
    ahead = [k for k, _, t in reads.reads if t.startswith(PREFETCH_THREAD)]
    assert len(ahead) == 3 and {layout.parse_key(k).stack for k in ahead} == set(sorted(held)[1:])
    assert len(reads.reads) == 12 and summary.valid == len(rows) == 12  # the steps read the rest


def test_only_what_the_step_would_read_is_read_ahead(four_stacks, tmp_path, monkeypatch):
    """A stack listed whole whose results the manifest holds unchanged has nothing read ahead;
    one new result among them is all that is."""
    url, held = four_stacks
    out = tmp_path / "out"
    collect([url], out)
    stack = sorted(held)[2]
    old_key = first_key_of(url, stack)
    body, old_run = open_store(url).get_bytes(old_key), layout.parse_key(old_key).run_id
    new_run = "20250102T000000Z-i-00900001-resnet50"
    new_key = layout.result_key(stack, new_run)
    open_store(url).put_bytes(new_key, body.replace(old_run.encode(), new_run.encode()))
    reads = ReadsByThread(monkeypatch)
    summary, rows = collect([url], out, full=True)  # every stack listed whole
    assert reads.reads == [(new_key, False, f"{PREFETCH_THREAD}-0")]
    assert (summary.new, summary.cached, len(rows)) == (1, 12, 13)


def test_a_read_ahead_that_fails_is_left_to_the_step(four_stacks, tmp_path, monkeypatch):
    """One result's read fails on the prefetch thread (after its retries): the step reads it
    itself, with its own retries, instead of taking the failure as the result's."""
    from analysis.collect import s3 as bulk
    from payload.storage import StorageError

    url, held = four_stacks
    flaky = first_key_of(url, sorted(held)[1])
    real = bulk.S3Bulk.get

    async def get(source, key, size=None):
        if key == flaky and threading.current_thread().name.startswith(PREFETCH_THREAD):
            raise StorageError(f"download {key} failed: SlowDown")
        return await real(source, key, size)

    monkeypatch.setattr(bulk.S3Bulk, "get", get)
    reads = ReadsByThread(monkeypatch)  # wraps the flaky get
    summary, rows = collect([url], tmp_path / "out")
    assert [t for k, _, t in reads.reads if k == flaky] == [f"{PREFETCH_THREAD}-0", "MainThread"]
    assert (summary.new, summary.valid, summary.skipped, summary.incomplete) == (12, 12, [], [])


def test_the_byte_budget_is_shared_by_every_source(s3_bucket, tmp_path, monkeypatch):
    """Two buckets' stacks read ahead together stay within the one budget."""
    first, second = f"s3://{s3_bucket}/team-a", f"s3://{s3_bucket}/team-b"
    held = _put(first, stacks=3, runs=3)
    _put(second, stacks=3, runs=3)
    size = max(i.size for i in _infos(first) + _infos(second))
    monkeypatch.setattr(sources, "PREFETCH_BYTES", 2 * size + size // 2)  # room for one result a source
    reads = ReadsByThread(monkeypatch)
    summary, rows = collect([first, second], tmp_path / "out")
    ahead = [layout.parse_key(k).stack for k, _, t in reads.reads if t.startswith(PREFETCH_THREAD)]
    assert sorted(ahead) == sorted(2 * sorted(held)[1:])  # one result of each source, for each later stack
    assert summary.new == 18 and len(rows) == 9  # each run read in both, one row each


def test_an_abandoned_collect_stops_its_prefetch(s3_bucket, tmp_path, monkeypatch):
    """Ctrl-C in a step while the next stack is read ahead: the prefetch stops at the next
    result that arrives, rather than reading the rest of the stack in the background."""
    import asyncio
    import time

    from analysis.collect import s3 as bulk
    from analysis.collect import stackstep

    url = f"s3://{s3_bucket}"
    held = _put(url, stacks=2, runs=20)
    real_get = bulk.S3Bulk.get
    ahead: list[str] = []

    async def slow_get(source, key, size=None):
        if threading.current_thread().name.startswith(PREFETCH_THREAD):
            ahead.append(key)
            await asyncio.sleep(0.05)
        return await real_get(source, key, size)

    def interrupted(*args, **kw):
        time.sleep(0.2)  # the prefetch of the second stack is under way
        raise KeyboardInterrupt

    monkeypatch.setattr(bulk.S3Bulk, "get", slow_get)
    monkeypatch.setattr(stackstep, "dedupe", interrupted)
    with pytest.raises(KeyboardInterrupt):
        collect([url], tmp_path / "out", workers=1)
    deadline = time.monotonic() + 10
    while any(t.name.startswith(PREFETCH_THREAD) for t in threading.enumerate()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(t.name.startswith(PREFETCH_THREAD) for t in threading.enumerate())
    assert 0 < len(ahead) < held[sorted(held)[1]] // 2  # begun, then stopped: not the whole stack


def test_the_step_takes_what_was_read_ahead_out_of_its_hands():
    """bulk_read takes each object read ahead out of the prefetch's dict as it is used, so its
    bytes go once parsed, not when the stack's all are."""
    from synthetic_results import make_result, result_bytes, result_key

    from analysis.collect.sources import bulk_read
    from payload.storage import ObjectInfo

    class NoStore:  # nothing may be read: everything was read ahead
        url = "s3://bucket"

        def url_for(self, key):
            return f"{self.url}/{key}"

    result = make_result("aws/p3.2xlarge", "resnet50")
    key, body = result_key(result), result_bytes(result)
    info = ObjectInfo(key, len(body), "etag-1", None)
    ready = {key: (len(body), memoryview(body), True)}
    got = dict(bulk_read(NoStore(), "s3://bucket", [(key, info)], None, [], ready))
    assert ready == {}
    assert got[f"s3://bucket|{key}"]["row"]["run_id"] == result["run_id"]
