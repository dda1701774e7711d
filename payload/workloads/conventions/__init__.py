"""Progress conventions read from a job's output as its framework prints it.

Besides gpubench's own lines (payload.workloads.metrics): `keras`, `hf`, `tqdm` (and bars drawn like it)
and `pattern` (the task file's regular expression), one small parser each; `ProgressReader` keeps the
first that reads a count and counts through payload.workloads.conventions.base."""

from __future__ import annotations

import re

from payload.workloads.conventions.base import Count, Counter, Parser, Reading, bounded, plain
from payload.workloads.conventions.frameworks import PARSERS
from payload.workloads.conventions.pattern import Pattern, compile_pattern

__all__ = [
    "FRAMEWORK_CONVENTIONS",
    "PARSERS",
    "Count",
    "Parser",
    "ProgressReader",
    "Reading",
    "bounded",
    "compile_pattern",
    "plain",
]


FRAMEWORK_CONVENTIONS = (*PARSERS, "pattern")
# What looks like progress in a line no convention read: a counter `n/total`, or an epoch or step number.
_PROGRESS_LIKE = re.compile(r"\d+\s*/\s*\d+|\b(?:epoch|step|iter|iteration|batch)\b\W{0,3}\d", re.IGNORECASE)
GIVE_UP_PROGRESS_LINES = 10  # lines that look like progress, none read: the job's convention is unknown
GIVE_UP_LINES = 5000  # lines of any kind, none read as progress


class ProgressReader:
    """Lines in, counts out, from the first convention (of those named) that reads a count."""

    def __init__(
        self,
        names: tuple[str, ...],
        *,
        pattern: str | None = None,
        epoch_end: str | None = None,
        samples_per_step: float | None = None,
        samples_per_epoch: float | None = None,
    ):
        self.parsers: list[Parser] = []
        if pattern is not None and "pattern" in names:
            p = Pattern(pattern, epoch_end)
            self.parsers.append(Parser(p.name, p.expects, p.read))
        self.parsers += [PARSERS[n] for n in PARSERS if n in names]
        self.counters = {
            p.name: Counter(samples_per_step=samples_per_step, samples_per_epoch=samples_per_epoch)
            for p in self.parsers
        }
        self.matched: str | None = None
        self.lines = 0
        self.progress_like = 0

    def feed(self, line: str) -> Count | None:
        """One output line: the count it reports (from the matched convention), if any."""
        self.lines += 1
        text = plain(line)
        if self.matched is not None:
            reading = self._parser(self.matched).read(text)
            return self.counters[self.matched].feed(reading) if reading is not None else None
        for parser in self.parsers:
            reading = parser.read(text)
            if reading is None:
                continue
            count = self.counters[parser.name].feed(reading)
            if count is not None and count.value is not None:
                self.matched = parser.name
            return count
        if _PROGRESS_LIKE.search(text):
            self.progress_like += 1
        return None

    def _parser(self, name: str) -> Parser:
        return next(p for p in self.parsers if p.name == name)

    @property
    def counter(self) -> Counter | None:
        return self.counters.get(self.matched) if self.matched else None

    def unread(self) -> bool:
        """True once it is clear no convention reads this job: many progress-like lines, none read."""
        return self.matched is None and (self.progress_like >= GIVE_UP_PROGRESS_LINES or self.lines >= GIVE_UP_LINES)

    def tried(self) -> list[tuple[str, str]]:
        """(convention, a line it reads) for each convention tried."""
        return [(p.name, p.expects) for p in self.parsers]
