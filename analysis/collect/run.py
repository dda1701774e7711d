"""Collect the results buckets into the table and, if asked, tear down the stacks that are done:
`gpubench collect` is this call plus printing (CollectOutcome.text)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from analysis.collect.orchestrate import collect
from analysis.collect.sources import spot_history_pricer
from analysis.dataset.location import resolve
from analysis.dataset.store import delta_table, open_dataset
from analysis.options import DEFAULT_TABLE
from payload.result import FINAL_STATUSES

SpotHistory = Literal["auto", "on", "off"]
DEFAULT_URLS = ("results",)


@dataclass
class TeardownReport:
    outcomes: list[Any] = field(default_factory=list)  # analysis.teardown.Outcome
    error: str | None = None

    @property
    def failed(self) -> bool:
        return any(not getattr(o, "ok", True) for o in self.outcomes)

    @property
    def missing_pulumi(self) -> bool:
        return bool(self.error) and ("Pulumi CLI" in self.error or "not available" in self.error)

    def to_dict(self) -> dict[str, Any]:
        return {
            "outcomes": [o.to_dict() if hasattr(o, "to_dict") else o for o in self.outcomes],
            "error": self.error,
        }


@dataclass
class CollectOutcome:
    summary: Any  # analysis.collect's summary (to_dict, incomplete, skipped, ...)
    rows: Sequence[dict[str, Any]]  # the table's rows, read from it when first used
    urls: list[str]
    teardown: TeardownReport | None = None

    def to_dict(self) -> dict[str, Any]:
        doc = self.summary.to_dict()
        if self.teardown is not None:
            doc["teardown"] = self.teardown.to_dict()
        return doc

    def text(self) -> str:
        """What `gpubench collect` prints (`summary.incomplete` goes to stderr, by the command)."""
        summary, urls, table = self.summary, self.urls, self.summary.table
        lines = [
            f"collected {summary.valid} valid runs from {len(urls)} location(s) in {summary.seconds:.2f} s: "
            f"{summary.new} downloaded, {summary.cached} unchanged (not downloaded), {len(summary.skipped)} set aside"
        ]
        if summary.settled_stacks:
            lines.append(
                f"  {summary.settled_stacks} settled stack(s) not listed file by file (every run finished; "
                "checked by directory stamp, results journal or run directories); --full lists every file"
            )
        if summary.runs == 0:
            lines.append(
                f"  no runs/<stack>/<run-id>/ found under: {', '.join(urls)} (is that where the payload writes? "
                "see --results)"
            )
        lines += [f"  skipped {s.get('url') or s['key']}: {s['reason']}" for s in summary.set_aside()]
        unchanged = "" if summary.table_written else " (unchanged)"
        if "parquet" in table:
            lines.append(
                f"table: {table['parquet']} and {table['csv']}{unchanged}, exported from the dataset {table['dataset']}"
            )
        else:
            lines.append(f"table: {table.get('dataset')}{unchanged}")
            if resolve(table.get("dataset", ".")).local is not None:  # a local table large enough to skip it
                lines.append(
                    "  results.parquet/results.csv are not rewritten at this size: `gpubench collect --export` writes them"
                )
        if self.teardown is not None and not self.teardown.error:
            lines += [
                f"  teardown {o.get('stack')}: {o.get('action')} {o.get('reason') or ''}"
                f"{' ERROR ' + o['error'] if o.get('error') else ''}"
                for o in self.teardown.to_dict()["outcomes"]
            ]
        return "\n".join(lines) + "\n"


def finished_stacks(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Stacks whose every run finished (an interrupted run will resume); of StoredRows only two columns are read."""
    if (loc := getattr(rows, "loc", None)) is not None:
        found = delta_table(loc) is not None
        rows = open_dataset(loc.uri).to_table(columns=["stack", "status"]).to_pylist() if found else []
    state: dict[str, bool] = {}
    for r in rows:
        state[r["stack"]] = state.get(r["stack"], True) and r["status"] in FINAL_STATUSES
    return sorted(s for s, done in state.items() if done)


def teardown_finished(stacks: list[str], urls: Sequence[str]) -> TeardownReport:
    """Destroy `stacks` through analysis.teardown (which re-checks their results); none for an empty
    list (teardown_completed reads it as "every stack"). Never raises."""
    if not stacks:
        return TeardownReport()
    try:  # lazy: 0.2 s of infra and Pulumi helpers only --teardown needs; a broken install is advice, not a crash
        from analysis.teardown import teardown_completed
    except ImportError as exc:
        return TeardownReport(
            error=f"--teardown is not available: analysis.teardown.teardown_completed could not be "
            f"imported ({exc}). Destroy the stacks with `pulumi destroy -s STACK`: {', '.join(stacks)}"
        )
    try:
        return TeardownReport(list(teardown_completed(stacks, results_urls=list(urls))))
    except Exception as exc:  # noqa: BLE001 - PulumiMissing and friends carry their own advice
        return TeardownReport(error=f"teardown failed before destroying anything: {exc}")


def collect_results(
    urls: Sequence[str] = DEFAULT_URLS,
    table: str | Path = DEFAULT_TABLE,
    *,
    export: bool | None = None,
    workers: int | None = None,
    progress: bool = False,
    spot_history: SpotHistory = "auto",
    full: bool = False,
    teardown: bool = False,
) -> CollectOutcome:
    """collect of `urls` into `table`, pricing spot runs as `spot_history` says; with `teardown`, then
    destroy the stacks whose runs all finished. ValueError for workers < 1; StorageError for a bucket."""
    if workers is not None and workers < 1:
        raise ValueError(f"--workers must be at least 1, got {workers}")
    urls = list(urls) or list(DEFAULT_URLS)
    summary, rows = collect(
        urls,
        table,
        workers=workers,
        progress=progress,
        spot_pricer=spot_history_pricer(spot_history),
        full=full,
        export=export,
    )
    outcome = CollectOutcome(summary, rows, urls)
    if teardown:
        outcome.teardown = teardown_finished(finished_stacks(rows), urls)
    return outcome
