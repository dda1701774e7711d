"""tests/shared_once.py: a value computed once per session, shared by the xdist workers as a pickle."""

from __future__ import annotations

from pathlib import Path

from shared_once import once_per_session


class _Factory:
    """A worker's tmp_path_factory: its base temp dir is one of the session's workers' dirs."""

    def __init__(self, base: Path):
        self._base = base

    def getbasetemp(self) -> Path:
        self._base.mkdir(parents=True, exist_ok=True)
        return self._base


def test_the_first_worker_computes_and_the_second_loads_its_copy(tmp_path, monkeypatch):
    calls = []

    def compute() -> dict:
        calls.append(1)
        return {"stacks": [1, 2, 3], "calls": len(calls)}

    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")
    first = once_per_session(_Factory(tmp_path / "popen-gw0"), "thing", compute)
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw1")
    second = once_per_session(_Factory(tmp_path / "popen-gw1"), "thing", compute)
    assert first == second == {"stacks": [1, 2, 3], "calls": 1} and len(calls) == 1
    assert second is not first  # a copy, loaded from the pickle
    other = once_per_session(_Factory(tmp_path / "popen-gw1"), "other", lambda: "x")
    assert other == "x"  # another name is computed apart


def test_without_xdist_each_call_computes(tmp_path, monkeypatch):
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    calls = []
    for _ in range(2):
        once_per_session(_Factory(tmp_path / "base"), "thing", lambda: calls.append(1))
    assert len(calls) == 2 and not list(tmp_path.glob("*.pickle"))
