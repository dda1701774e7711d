"""analysis.collect.prefetch on moto S3: once a step's own downloads are done, the next stack's new
results are downloaded on a thread of their own and handed to its step, which parses and judges
them as if it had read them; the table is the one a collect without it writes. What is fetched
ahead is only what the step would read, within a byte budget; a ranged read that no longer parses
is read again whole by the step; a prefetch that fails costs nothing but its head start."""

from __future__ import annotations

import dataclasses
import threading

import pandas as pd
import pytest
from test_collect_bounded_s3 import _put

from analysis.collect import collect, prefetch
from payload import layout

PREFETCH_THREAD = "collect-prefetch"


class ReadsByThread:
    """Every bulk read (analysis.bulk.S3Bulk.get): (key, whole?, thread name)."""

    def __init__(self, monkeypatch):
        from analysis import bulk

        self.reads: list[tuple[str, bool, str]] = []
        real = bulk.S3Bulk.get

        async def get(source, key, size=None):
            self.reads.append((key, size is None, threading.current_thread().name))
            return await real(source, key, size)

        monkeypatch.setattr(bulk.S3Bulk, "get", get)

    def stacks_read_on(self, prefix: str) -> set[str]:
        return {layout.parse_key(k).stack for k, _, t in self.reads if t.startswith(prefix)}


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

    monkeypatch.setattr(prefetch.Prefetch, "start", lambda self, views: None)  # the same collect without it
    reads.reads.clear()
    plain_summary, plain_rows = collect([url], tmp_path / "plain")
    assert reads.stacks_read_on(PREFETCH_THREAD) == set()
    assert rows == plain_rows
    assert (summary.runs, summary.new, summary.valid) == (plain_summary.runs, plain_summary.new, plain_summary.valid)
    pd.testing.assert_frame_equal(_table(tmp_path / "ahead"), _table(tmp_path / "plain"))


def test_a_result_read_ahead_that_grew_since_the_listing_is_read_again_whole(four_stacks, tmp_path, monkeypatch):
    """Read ahead by range with the listing's size, a result replaced by a longer one in between
    arrives cut short: its step reads it whole before judging it, never sets it aside."""
    from analysis import bulk

    url, held = four_stacks
    grown = next(k for k in layout_keys(url) if layout.parse_key(k).stack == sorted(held)[2])
    real_info = bulk._info

    def stale_info(meta):  # the listing as it was before the object grew by 40 bytes
        info = real_info(meta)
        return dataclasses.replace(info, size=info.size - 40) if info.key == grown else info

    monkeypatch.setattr(bulk, "_info", stale_info)
    reads = ReadsByThread(monkeypatch)
    summary, rows = collect([url], tmp_path / "out")
    assert (grown, False, f"{PREFETCH_THREAD}-0") in reads.reads  # cut short, ahead of its step
    whole = [(k, t) for k, is_whole, t in reads.reads if is_whole]
    assert whole == [(grown, "MainThread")]  # read again whole by the step
    assert (summary.new, summary.valid, summary.skipped) == (12, 12, [])


def layout_keys(url: str) -> list[str]:
    from payload.storage import open_store

    return sorted(i.key for i in open_store(url).list(layout.ROOT))


def test_a_prefetch_that_fails_costs_only_its_head_start(four_stacks, tmp_path, monkeypatch):
    url, held = four_stacks

    def broken(*args):
        raise RuntimeError("the prefetch's loop died")

    monkeypatch.setattr(prefetch, "read_on_private_loop", broken)
    reads = ReadsByThread(monkeypatch)
    summary, rows = collect([url], tmp_path / "out")
    assert reads.stacks_read_on(PREFETCH_THREAD) == set() and len(reads.reads) == 12
    assert (summary.new, summary.valid, summary.skipped, summary.incomplete) == (12, 12, [], [])
    assert len(rows) == 12


def test_what_is_read_ahead_stays_within_its_byte_budget(four_stacks, tmp_path, monkeypatch):
    url, held = four_stacks
    size = max(i.size for i in _infos(url))
    monkeypatch.setattr(prefetch, "PREFETCH_BYTES", size + size // 2)  # room for one result a stack
    reads = ReadsByThread(monkeypatch)
    summary, rows = collect([url], tmp_path / "out")
    ahead = [k for k, _, t in reads.reads if t.startswith(PREFETCH_THREAD)]
    assert len(ahead) == 3 and {layout.parse_key(k).stack for k in ahead} == set(sorted(held)[1:])
    assert len(reads.reads) == 12 and summary.valid == len(rows) == 12  # the steps read the rest


def _infos(url: str):
    from payload.storage import open_store

    return list(open_store(url).list(layout.ROOT))


def test_only_what_the_step_would_read_is_read_ahead(four_stacks, tmp_path, monkeypatch):
    """A stack listed whole whose results the manifest holds unchanged has nothing read ahead;
    one new result among them is all that is."""
    from payload.storage import open_store

    url, held = four_stacks
    out = tmp_path / "out"
    collect([url], out)
    stack = sorted(held)[2]
    body = open_store(url).get_bytes(next(k for k in layout_keys(url) if layout.parse_key(k).stack == stack))
    old_run = layout.parse_key(next(k for k in layout_keys(url) if layout.parse_key(k).stack == stack)).run_id
    new_run = "20250102T000000Z-i-00900001-resnet50"
    new_key = layout.result_key(stack, new_run)
    open_store(url).put_bytes(new_key, body.replace(old_run.encode(), new_run.encode()))
    reads = ReadsByThread(monkeypatch)
    summary, rows = collect([url], out, full=True)  # every stack listed whole
    assert reads.reads == [(new_key, False, f"{PREFETCH_THREAD}-0")]
    assert (summary.new, summary.cached, len(rows)) == (1, 12, 13)
