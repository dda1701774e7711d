"""The suite's file order (tests/suite_order.py): the files named to run first exist, and the
collected tests keep each file together."""

from __future__ import annotations

from pathlib import Path

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
