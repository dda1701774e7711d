"""The suite's file order (tests/suite_order.py): the files named to run first exist, and the
collected tests keep each file together."""

from __future__ import annotations

from pathlib import Path

import pytest
from suite_order import LONGEST_FILES_FIRST, TESTS


def test_every_file_named_to_run_first_exists_once():
    assert len(set(LONGEST_FILES_FIRST)) == len(LONGEST_FILES_FIRST)
    missing = [name for name in LONGEST_FILES_FIRST if not (TESTS / name).is_file()]
    assert not missing, f"renamed or removed: {missing}; update LONGEST_FILES_FIRST in tests/suite_order.py"


def test_the_longest_file_is_collected_first_and_each_file_stays_together(request):
    files = [Path(item.path).relative_to(TESTS).as_posix() for item in request.session.items]
    runs = [f for i, f in enumerate(files) if i == 0 or f != files[i - 1]]
    assert len(runs) == len(set(runs)), "a file's tests were split apart"
    if LONGEST_FILES_FIRST[0] in files:  # the whole suite (or a selection that includes it)
        assert files[0] == LONGEST_FILES_FIRST[0]


def test_cpu_seconds_are_recorded_per_test_and_summed_per_file(tmp_path):
    """The record GPUBENCH_SUITE_CPU asks for: a child's CPU counts once it is waited for, and the sum ranks files."""
    import subprocess
    import sys

    from suite_order import cpu_by_file, cpu_seconds, record_cpu

    before = cpu_seconds()
    subprocess.run([sys.executable, "-c", "sum(i * i for i in range(3_000_000))"], check=True)
    spent = cpu_seconds() - before
    assert spent > 0.05  # the child's work, not only this process's
    record = tmp_path / "cpu.jsonl"
    record_cpu(str(record), "tests/a.py::test_one", spent)
    record_cpu(str(record), "tests/b.py::test_two", 0.01)
    record_cpu(str(record), "tests/a.py::test_three", 0.02)
    (first, a), (second, b) = cpu_by_file(str(record))
    assert (first, second) == ("tests/a.py", "tests/b.py")
    assert a == pytest.approx(spent + 0.02, abs=0.01) and b == 0.01
