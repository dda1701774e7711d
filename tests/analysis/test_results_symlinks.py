"""A local results directory holding symlinks (a link to /, a loop, a linked file or device): listing
it never follows a link, so the collect goes on with the real runs and no file outside it is read."""

from __future__ import annotations

import json
import os

import pytest
from synthetic_results import make_result, result_key

from analysis.collect import collect
from payload.storage import open_store


def _bucket(tmp_path):
    root = tmp_path / "results"
    good = make_result(run_id="20261127T120000Z-i-1-good")
    key = root / result_key(good)
    key.parent.mkdir(parents=True)
    key.write_text(json.dumps(good), encoding="utf-8")
    run = key.parent
    os.symlink("/", run / "root")  # the whole disk
    os.symlink(run.parent, run / "loop")  # itself
    os.symlink("/dev/zero", run.parent / "20261127T120000Z-i-1-zero")  # a run directory that is a device
    os.symlink(tmp_path / "outside.json", run / "log-tail.txt")  # a file outside the directory
    (tmp_path / "outside.json").write_text("secret")
    os.symlink("/", root / "runs" / "aws-linked")  # a stack that is a link
    return root, good


@pytest.mark.parametrize("full", [False, True])
def test_collect_of_a_results_directory_with_symlinks_keeps_to_its_own_runs(tmp_path, full):
    root, good = _bucket(tmp_path)
    summary, rows = collect([str(root)], tmp_path / "table", full=full)
    assert [r["run_id"] for r in rows] == [good["run_id"]]


def test_a_local_store_lists_no_symlink(tmp_path):
    root, good = _bucket(tmp_path)
    assert [o.key for o in open_store(str(root)).list("runs/")] == [result_key(good)]
