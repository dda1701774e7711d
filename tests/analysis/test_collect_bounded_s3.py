"""Collect from s3:// on the bulk path (obstore, against moto's S3 server)
stack by stack: at no time does it hold more parsed results than one stack's
(plus the batch waiting for its commit), whatever the number of stacks, and
its answer is the thread pool's."""

from __future__ import annotations

import weakref

import pytest
from synthetic_results import make_result, result_bytes

from analysis.collect import collect, orchestrate, sources
from analysis.dataset import open_dataset
from payload import layout
from payload.storage import open_store

OFFERINGS = ["aws/p2.xlarge", "aws/p3.2xlarge", "aws/p3.8xlarge", "gcp/n1-standard-4+1xk80"]


def _put(url: str, stacks: int, runs: int) -> dict[str, int]:
    """`runs` results in each of `stacks` stacks (named <offering's stack>-s<n>); {stack: runs}."""
    store, held = open_store(url), {}
    for s in range(stacks):
        r = make_result(OFFERINGS[s % len(OFFERINGS)], "resnet50", hourly_usd=1.0 + s, train_seconds=600.0)
        stack = f"{r['stack']}-s{s}"
        body = result_bytes(r).replace(f'"stack": "{r["stack"]}"'.encode(), f'"stack": "{stack}"'.encode())
        for i in range(runs):
            run_id = f"20250101T000000Z-i-{s:03d}{i:05d}-resnet50"
            store.put_bytes(layout.result_key(stack, run_id), body.replace(r["run_id"].encode(), run_id.encode()))
        held[stack] = runs
    return held


class _Row(dict):
    """A parsed row whose life can be watched (a plain dict takes no weak reference)."""

    __slots__ = ("__weakref__",)


class LiveRows:
    """Counts the rows parse() has made that are still alive, and the most alive at once."""

    def __init__(self, monkeypatch):
        self.live = self.most = self.made = 0
        real = sources.parse

        def parse(data, **kw):
            row, result = real(data, **kw)
            watched = _Row(row)
            self.live += 1
            self.made += 1
            self.most = max(self.most, self.live)
            weakref.finalize(watched, self._gone)
            return watched, result

        monkeypatch.setattr(sources, "parse", parse)

    def _gone(self) -> None:
        self.live -= 1


def test_a_cold_collect_from_s3_holds_one_stacks_results_at_a_time(s3_bucket, tmp_path, monkeypatch):
    url = f"s3://{s3_bucket}/team"
    stacks, runs = 6, 8
    _put(url, stacks, runs)
    monkeypatch.setattr(orchestrate, "COMMIT_ROWS", 1)  # each stack committed after its step: no batch held
    rows = LiveRows(monkeypatch)
    summary, _ = collect([url], tmp_path / "table", export=False)
    assert rows.made == summary.new == stacks * runs  # every result was parsed on the bulk path ...
    assert 0 < rows.most <= runs  # ... and never more than one stack's at once
    assert open_dataset(str(tmp_path / "table")).count_rows() == stacks * runs


def test_with_batches_it_holds_one_stack_and_one_batch(s3_bucket, tmp_path, monkeypatch):
    """Rows wait in a batch until it holds COMMIT_ROWS: then one stack's results
    besides the batch's rows, never the source's."""
    url = f"s3://{s3_bucket}"
    stacks, runs = 8, 5
    _put(url, stacks, runs)
    monkeypatch.setattr(orchestrate, "COMMIT_ROWS", 2 * runs)  # a commit every second stack
    rows = LiveRows(monkeypatch)
    summary, _ = collect([url], tmp_path / "table", export=False)
    assert rows.made == stacks * runs and summary.valid == stacks * runs
    assert 0 < rows.most <= runs + 2 * runs
    assert rows.most < stacks * runs


@pytest.mark.parametrize("workers", [1, 64])
def test_the_bulk_path_stack_by_stack_gives_the_table_a_local_copy_gives(s3_bucket, tmp_path, workers):
    url, local = f"s3://{s3_bucket}", str(tmp_path / "local")
    _put(url, stacks=3, runs=4)
    _put(local, stacks=3, runs=4)
    s_bulk, rows_bulk = collect([url], tmp_path / "bulk", workers=workers)
    s_file, rows_file = collect([local], tmp_path / "file")

    def facts(rows):  # where each row was read from differs (source, ETag), not what it says
        return [{k: v for k, v in r.items() if k not in ("source", "etag")} for r in rows]

    assert facts(rows_bulk) == facts(rows_file) and len(rows_bulk) == 12
    assert (s_bulk.runs, s_bulk.new, s_bulk.valid) == (s_file.runs, s_file.new, s_file.valid) == (12, 12, 12)


def test_a_settled_stack_that_gained_runs_is_listed_the_cheaper_way(s3_bucket, tmp_path, monkeypatch):
    """Up to one round of requests in flight (LISTING_THREADS new run directories):
    each listed alone, all at once. More (and more than the stack's pages): the
    stack is listed whole (a page of 1,000 objects is one request). Either way the
    table gets every run."""
    import threading
    import time

    import obstore

    from analysis.collect.survey import LISTING_THREADS

    url = f"s3://{s3_bucket}"
    store = open_store(url)
    (stack,) = _put(url, stacks=1, runs=3)
    listed: list[str] = []
    in_flight, most, lock = [0], [0], threading.Lock()
    real = obstore.list

    def listing(st, prefix=None, **kw):
        if prefix.startswith("journal/"):  # the stack's journal (its own test): not a listing of runs
            return real(st, prefix, **kw)
        with lock:
            listed.append(prefix)
            in_flight[0] += 1
            most[0] = max(most[0], in_flight[0])
        try:
            time.sleep(0.05 if prefix.count("/") == 3 else 0)  # a run directory's listing waits on the network
            return list(real(st, prefix, **kw))
        finally:
            with lock:
                in_flight[0] -= 1

    monkeypatch.setattr(obstore, "list", listing)
    table = tmp_path / "table"
    collect([url], table)
    body = store.get_bytes(layout.result_key(stack, "20250101T000000Z-i-00000000-resnet50"))

    def add(run_ids: list[str]) -> None:
        for run_id in run_ids:
            data = body.replace(b"20250101T000000Z-i-00000000-resnet50", run_id.encode())
            store.put_bytes(layout.result_key(stack, run_id), data)

    listed.clear()
    add(["20250102T000000Z-i-new-resnet50"])
    summary, rows = collect([url], table)
    assert listed == [f"runs/{stack}/20250102T000000Z-i-new-resnet50/"] and summary.new == 1 and len(rows) == 4

    listed.clear()
    most[0] = 0
    fresh = [f"20250103T000000Z-i-new{i}-resnet50" for i in range(4)]
    add(fresh)
    summary, rows = collect([url], table)
    assert sorted(listed) == sorted(f"runs/{stack}/{r}/" for r in fresh) and most[0] > 1  # at once
    assert summary.new == 4 and len(rows) == 8

    listed.clear()
    add([f"20250104T000000Z-i-new{i:02d}-resnet50" for i in range(LISTING_THREADS + 1)])
    summary, rows = collect([url], table)
    assert listed == [f"runs/{stack}/"] and summary.new == LISTING_THREADS + 1 and len(rows) == 25


def test_the_next_stack_is_listed_while_the_one_before_is_read(s3_bucket, tmp_path, monkeypatch):
    """A bucket's stacks are listed on threads of their own, two ahead, while the step
    before them reads its results (the listing's requests wait beside that work, not between
    two steps); a listing that fails there fails its own stack alone, as a
    listing in the step would; the table is the same."""
    import threading
    import time

    import obstore

    url = f"s3://{s3_bucket}"
    held = _put(url, stacks=4, runs=3)
    events: list[tuple[str, str, str]] = []  # (what, stack, thread)
    real_list, real_read = obstore.list, sources.bulk_read
    broken = {f"runs/{sorted(held)[2]}/"}

    def listing(st, prefix=None, **kw):
        events.append(("list", prefix, threading.current_thread().name))
        if prefix in broken:
            raise OSError("the server went away")
        return list(real_list(st, prefix, **kw))

    def reading(source, u, todo, *args):
        stack = f"runs/{todo[0][0].split('/')[1]}/"
        events.append(("read", stack, threading.current_thread().name))
        time.sleep(0.05)  # the results' requests in flight
        yield from real_read(source, u, todo, *args)
        events.append(("read done", stack, threading.current_thread().name))

    monkeypatch.setattr(obstore, "list", listing)
    monkeypatch.setattr("analysis.collect.stackstep.bulk_read", reading)  # the name the step calls
    summary, rows = collect([url], tmp_path / "table", export=False)

    stacks = [f"runs/{s}/" for s in sorted(held)]
    listed = {p: t for what, p, t in events if what == "list" and p in stacks}
    assert set(listed) == set(stacks)
    assert all(listed[p].startswith("collect-list-ahead") for p in stacks[1:])
    order = [(what, p) for what, p, _ in events if p in stacks]
    for before, after in zip(stacks, stacks[1:], strict=False):
        if before not in broken:  # listed while the stack before it was read
            assert order.index(("list", after)) < order.index(("read done", before))
    # two stacks ahead: the third stack's listing began while the first was read
    assert order.index(("list", stacks[2])) < order.index(("read done", stacks[0]))
    assert summary.valid == len(rows) == 9
    assert [i for i in summary.incomplete if "cannot list" in i] == [f"{url}/{sorted(broken)[0]}: cannot list"]
    assert {r["stack"] for r in rows} == set(held) - {sorted(held)[2]}
