"""bench shows its probes' progress with an upper bound of the time left, on a terminal only."""

from __future__ import annotations

import io
import time

from analysis.bench import probes as probes_mod
from analysis.bench.probes import ProbeReport, Probes, run_all
from analysis.progress import Printer


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class _Candidate:
    def __init__(self, name: str):
        self.name = name


def _probe(seconds: float):
    def run(candidate, probes):
        time.sleep(seconds)
        return ProbeReport(candidate, candidate.name, "measured")

    return run


def _run(monkeypatch, stream) -> list[ProbeReport]:
    monkeypatch.setattr(probes_mod, "Progress", _bar_on(stream))
    jobs = [(_Candidate("a"), _probe(0.2)), (_Candidate("b"), _probe(1.5))]
    return run_all(jobs, Probes(Printer(io.StringIO()), bound_seconds=600))


def _bar_on(stream):
    from analysis.progress import Progress

    return lambda total, desc, unit="step": Progress(total, desc, unit=unit, stream=stream)


def test_a_terminal_sees_probes_ended_and_the_bound(monkeypatch):
    monkeypatch.delenv("GPUBENCH_NO_PROGRESS", raising=False)
    stream = _Terminal()
    reports = _run(monkeypatch, stream)
    assert [r.stack for r in reports] == ["a", "b"]
    shown = stream.getvalue()
    assert "probes (time left at most)" in shown and "/600" in shown
    assert "1/2 probes ended" in shown  # moved each second while the slower probe ran


def test_no_bar_when_stderr_is_not_a_terminal(monkeypatch):
    stream = io.StringIO()
    _run(monkeypatch, stream)
    assert stream.getvalue() == ""
