"""The report's figures of a runs DataFrame, computed the one way the report
computes them: the DataFrame handed to analysis.report.query as an Arrow
dataset (no file written), the summary's tables by metrics.analyse_summary."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pandas as pd

from analysis.metrics import Options, analyse_summary
from analysis.report.query import RunFacts, RunsQuery, connect


def as_collected(runs: pd.DataFrame) -> pd.DataFrame:
    """`runs` with the columns of a collected (and priced) table it lacks, all missing."""
    from analysis.dataset.row import COLUMNS
    from analysis.price.runs import PRICE_COLUMNS

    added = [c for c in (*COLUMNS, *PRICE_COLUMNS) if c not in runs.columns]
    return runs.assign(**{c: pd.Series(None, index=runs.index, dtype=object) for c in added})


@contextmanager
def query_of(runs: pd.DataFrame) -> Iterator[RunsQuery]:
    """The query over `runs` as_collected, handed over as an Arrow dataset."""
    import pyarrow as pa
    import pyarrow.dataset as ds

    table = as_collected(runs)
    with connect() as con:
        yield RunsQuery(con, ds.dataset(pa.Table.from_pandas(table, preserve_index=False)))


def summary_of(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per configuration x offering x market x GPUs x price (RunsQuery.summary)."""
    with query_of(runs) as q:
        return q.summary()


def tables_of(runs: pd.DataFrame, opts: Options | None = None) -> dict:
    """Every table the report shows (summary, scaling, breakeven, recommendations)."""
    return analyse_summary(summary_of(runs), opts or Options())


def facts_of(runs: pd.DataFrame) -> RunFacts:
    """What the page says about the full runs (RunsQuery.facts)."""
    with query_of(runs) as q:
        return q.facts()


def section(runs: pd.DataFrame) -> str:
    """The reference section of a page over `runs` (report.html.j2 includes the same template)."""
    from analysis.report import reference
    from analysis.report.page import render

    with query_of(runs) as q:
        return render("reference.html.j2", ref=reference.context(q.measured()))


def assumed_price_note(summary: pd.DataFrame) -> str:
    """The page's assumed-price banner over `summary` ("" when report.html.j2 shows none)."""
    from analysis.report import reference
    from analysis.report.page import render

    text = reference.assumed_rates(summary)
    return render("assumed_price.html.j2", assumed=text) if text else ""
