"""What one collect reports: counts, set-aside files, the table's paths (``to_dict``: ``--json``)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Summary:
    sources: list[str]
    runs: int = 0
    valid: int = 0
    new: int = 0
    cached: int = 0
    skipped: list[dict] = field(default_factory=list)
    table: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    table_written: bool = False
    settled_stacks: int = 0  # not listed file by file: checked by stamp, journal or run directories
    # why this collect is incomplete (a location not listed, a download failed): the exit code says so
    incomplete: list[str] = field(default_factory=list)

    def set_aside(self) -> list[dict]:
        """The set-aside files by key: the same order however they were found."""
        return sorted(self.skipped, key=lambda n: (str(n.get("key")), str(n.get("reason"))))

    def to_dict(self) -> dict:
        return {
            **vars(self),
            "skipped": self.set_aside(),
            "complete": not self.incomplete,
            "seconds": round(self.seconds, 3),
        }
