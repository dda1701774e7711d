"""Where the results table is read (`results_dataset`: a local results.parquet export when there is one, else the
results dataset of a directory or bucket prefix) and the one place its runs are aggregated: DataFusion SQL, so the
report holds only the aggregated rows (a few hundred) however many runs there are. A median is the mean of the two
middle values; a summary row's texts are joined in the order its runs appear in the table."""

from __future__ import annotations

import math
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import date
from pathlib import Path
from typing import Any, NamedTuple

import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from analysis.dataset import TableNotFound, open_dataset, resolve
from analysis.dataset.sql import Engine, connect, num, one_of, q, text
from analysis.metrics import GROUP, JOINED, MEDIANS, SPREADS, add_throughput_metrics
from analysis.price.runs import PRICE_COLUMNS, price_runs
from analysis.reference.studies import reference_figures
from analysis.report.answer import present
from infra.catalog import load_catalog

REFERENCE_KEYS = ("benchmark", "offering_id", "market", "gpus_used", "per_gpu_batch_size", "precision", "data")
# The runs that did not complete are summarised, not listed (a table of a million runs holds tens of thousands):
# counted per NOT_DONE_KEYS (missing keys a group of their own, last), the NOT_DONE_SAMPLE most recent in full with
# the NOT_DONE_READ and PRICE_NOTE_READ columns; NOT_COMPLETED_SQL lists them all.
NOT_DONE_KEYS = ("stack", "offering_id", "status")
NOT_DONE_SAMPLE = 50
NOT_DONE_READ = ("run_id", "started_at", "offering_id", "status", "billed_cost_usd", "error")
PRICE_NOTE_READ = ("price_source", "price_as_of", "billing", "price_note")
NOT_COMPLETED_SQL = (
    "SELECT run_id, stack, offering_id, status, started_at, billed_cost_usd, error FROM runs "
    "WHERE status IS DISTINCT FROM 'completed' ORDER BY started_at DESC"
)
# Run columns a summary row shows but does not carry, joined per FACT_KEYS (RunsQuery.row_facts).
RUN_FACTS = ("recorded_price_origin", "data")
FACT_KEYS = ["benchmark", "workload", "offering_id", "market"]


class RunFacts(NamedTuple):
    """What the page says about the full runs (probe runs are counted apart), beside the metrics tables."""

    total: int
    completed: int
    not_done: Any  # DataFrame: the NOT_DONE_SAMPLE most recent runs that did not complete, most recent first
    measured: Any  # DataFrame: RunsQuery.measured, median samples/s per setup of the studies' benchmarks
    row_facts: Any  # DataFrame: RunsQuery.row_facts, price origins and data kinds per FACT_KEYS
    not_done_counts: Any  # DataFrame: the runs that did not complete, counted per NOT_DONE_KEYS

    @property
    def not_done_total(self) -> int:
        return self.total - self.completed


TABLE_FILE = "results.parquet"


class NoResultsTable(FileNotFoundError, ValueError):
    """No results table at a location (a FileNotFoundError, and a ValueError as the dataset's contract says)."""


def results_dataset(table: str) -> Any:
    """The results table collect wrote at `table` as a pyarrow Dataset; NoResultsTable (naming the fix) if none."""
    local = resolve(table).local
    export = local / TABLE_FILE if local is not None else None
    if export is not None and export.is_file():  # the export, in its rows' order
        return ds.dataset(str(export), format="parquet")
    try:
        return open_dataset(table)
    except TableNotFound:
        raise NoResultsTable(
            f"no results table at {table}: neither a results dataset nor {TABLE_FILE}; "
            f"run `gpubench collect --table {table}` first"
        ) from None


def _same(left: str, right: str, keys: Iterable[str]) -> str:
    """A join on `keys` where a missing key matches a missing key (GROUP BY groups them so);
    each test in parentheses: DataFusion's parser binds IS [NOT] DISTINCT FROM looser than AND."""
    return " AND ".join(f"({left}.{q(k)} IS NOT DISTINCT FROM {right}.{q(k)})" for k in keys)


class RunsQuery:
    """The report's aggregations over one results dataset. Views: `runs` (every row, `_idx` its position),
    `full_runs` (probe runs left out), `done` (the completed full runs, with the columns `summary` derives)."""

    def __init__(self, con: Engine, dataset: Any):
        self.con = con
        self.columns = set(dataset.schema.names)
        con.register("_dataset", dataset)
        # each row's place in the table: the scan is one stream, in the file's order
        self.rows("CREATE OR REPLACE VIEW runs AS SELECT *, row_number() OVER () AS _idx FROM _dataset")
        self.rows(
            "CREATE OR REPLACE VIEW full_runs AS SELECT * FROM runs WHERE NOT coalesce(CAST(probe AS BOOLEAN), false)"
        )
        self._done_view()

    def frame(self, sql: str) -> Any:
        return self.con.table(sql).to_pandas()

    def scalar(self, sql: str) -> Any:
        return self.rows(sql)[0][0]

    def rows(self, sql: str) -> list[tuple]:
        return self.con.rows(sql)

    def _done_view(self) -> None:
        """The `done` view: completed full runs, price key, samples per dollar, numbers as numbers."""
        self.rows("CREATE OR REPLACE VIEW done_base AS SELECT * FROM full_runs WHERE status = 'completed'")
        prices = self.rows(
            f"SELECT DISTINCT {num('hourly_usd')} FROM done_base "
            f"WHERE (market IS DISTINCT FROM 'spot') AND {num('hourly_usd')} IS NOT NULL"
        )
        # the price_key of each distinct hourly price a non-spot run paid: a literal that reads back as the same double
        keys = [f"SELECT CAST({float(h)!r} AS DOUBLE) AS hourly, {text(price_key(h))} AS price_key" for (h,) in prices]
        empty = "SELECT CAST(NULL AS DOUBLE) AS hourly, CAST(NULL AS VARCHAR) AS price_key WHERE false"
        self.rows(f"CREATE OR REPLACE VIEW _price_keys AS {' UNION ALL '.join(keys) or empty}")
        raw = [c for c in GROUP if c != "price_key"]
        numbers = [c for c in MEDIANS if c != "samples_per_usd"]
        hourly, per_second = num("done_base.hourly_usd"), num("done_base.samples_per_second")
        self.rows(
            "CREATE OR REPLACE VIEW done AS SELECT "
            + ", ".join(f"done_base.{q(c)}" for c in raw)
            + ", CASE WHEN done_base.market = 'spot' THEN 'spot' "
            f"WHEN {hourly} IS NULL THEN 'unpriced' ELSE _price_keys.price_key END AS price_key, "
            + ", ".join(f"{num('done_base.' + q(c))} AS {q(c)}" for c in numbers)
            + f", CASE WHEN {hourly} > 0 AND {per_second} > 0 "
            f"THEN {per_second} * 3600.0 / {hourly} END AS samples_per_usd, "
            + ", ".join(f"CAST(done_base.{q(c)} AS VARCHAR) AS {q(c)}" for c in JOINED)
            + f", {num('done_base.setup_fee_usd')} AS setup_fee_usd, done_base._idx "
            f"FROM done_base LEFT JOIN _price_keys ON {hourly} = _price_keys.hourly"
        )

    def probes(self) -> int:
        """Probe runs (short runs of a job) left out of every figure."""
        return int(self.scalar("SELECT count(*) FROM runs WHERE coalesce(CAST(probe AS BOOLEAN), false)"))

    def facts(self) -> RunFacts:
        ((total, completed),) = self.rows(
            "SELECT count(*), count(*) FILTER (WHERE status = 'completed') FROM full_runs"
        )
        return RunFacts(
            int(total), int(completed), self.not_done(), self.measured(), self.row_facts(), self.not_done_counts()
        )

    def not_done(self, n: int = NOT_DONE_SAMPLE) -> Any:
        """The `n` most recent full runs that did not complete (no start time last, ties in table order)."""
        shown = ", ".join(q(c) for c in (*NOT_DONE_READ, *PRICE_NOTE_READ))
        return self.frame(
            f"SELECT {shown} FROM full_runs "
            f"WHERE status IS DISTINCT FROM 'completed' ORDER BY started_at DESC NULLS LAST, _idx LIMIT {int(n)}"
        )

    def not_done_counts(self) -> Any:
        """The full runs that did not complete per NOT_DONE_KEYS: how many, billed USD, the latest start."""
        listed = ", ".join(q(k) for k in NOT_DONE_KEYS)
        counts = self.frame(
            f"SELECT {listed}, count(*) AS runs, sum({num('billed_cost_usd')}) AS billed_cost_usd, "
            f"max(started_at) AS latest_start FROM full_runs WHERE status IS DISTINCT FROM 'completed' GROUP BY {listed}"
        )
        return _in_key_order(counts, list(NOT_DONE_KEYS))

    def row_facts(self) -> Any:
        """Per FACT_KEYS group of the full runs, their distinct RUN_FACTS each joined in one text (None for none)."""
        facts, keys = list(RUN_FACTS), list(FACT_KEYS)
        rows = self.frame(f"SELECT DISTINCT {', '.join(q(c) for c in keys + facts)} FROM full_runs")
        if rows.empty:
            return pd.DataFrame(columns=keys + facts)
        rows = rows.astype({c: object for c in facts})
        for c in facts:
            rows[c] = rows[c].map(present)
        joined = lambda v: "; ".join(sorted({x for x in v if isinstance(x, str)})) or None  # noqa: E731
        return rows.groupby(keys, dropna=False)[facts].agg(joined).reset_index()

    def measured(self) -> Any:
        """Median samples/s and hourly price of the completed runs of the studies' benchmarks per REFERENCE_KEYS,
        with the price source and device of each setup's first run."""
        benchmarks = sorted({f.benchmark for f in reference_figures()})
        keys = ", ".join(q(k) for k in REFERENCE_KEYS)
        first = "first_value({c} ORDER BY _idx) FILTER (WHERE {c} IS NOT NULL) AS {c}"
        per_second = num("samples_per_second")
        m = self.frame(
            f"SELECT {keys}, median({per_second}) AS value, count(run_id) AS runs, "
            f"median({num('hourly_usd')}) AS hourly_usd, {first.format(c='price_source')}, {first.format(c='device')} "
            f"FROM full_runs WHERE status = 'completed' AND {one_of('benchmark', benchmarks)} "
            f"AND {per_second} > 0 GROUP BY {keys}"
        )
        if m.empty:
            return pd.DataFrame()
        return _in_key_order(m, list(REFERENCE_KEYS))

    def summary(self) -> Any:
        """The completed full runs, one row per GROUP: `repeats`, the median of each of MEDIANS (and min, max and
        spread of SPREADS), JOINED's texts, the prices paid, the ImageNet-scale figures. Every cost and per-dollar
        figure is the median of per-run figures, each run priced at its own price."""
        keys = ", ".join(q(k) for k in GROUP)
        figures = ["count(*) AS repeats"]
        for col in MEDIANS:
            figures.append(f"median({q(col)}) AS {q(col)}")
            if col in SPREADS:
                figures += [f"min({q(col)}) AS {q(col + '_min')}", f"max({q(col)}) AS {q(col + '_max')}"]
        figures += [
            "max(setup_fee_usd) AS setup_fee_usd",
            "array_agg(DISTINCT hourly_usd) FILTER (WHERE hourly_usd IS NOT NULL) AS _paid",
        ]
        texts = ", ".join(f"max(joined) FILTER (WHERE col = {text(c)}) AS {q(c)}" for c in JOINED)
        texts_read = ", ".join(q(c) for c in JOINED)
        # each text's first run per group: over the distinct combinations of the texts (a few hundred),
        # each with its first run, not over every run unpivoted (a row per run and text); both small
        # tables are held, not views, since DataFusion would scan the runs again for every reference
        self.rows(f"CREATE OR REPLACE TABLE _agg AS SELECT {keys}, {', '.join(figures)} FROM done GROUP BY {keys}")
        self.rows(
            f"CREATE OR REPLACE TABLE _combos AS SELECT {keys}, {texts_read}, min(_idx) AS f "
            f"FROM done GROUP BY {keys}, {texts_read}"
        )
        unpivoted = " UNION ALL ".join(
            f"SELECT {keys}, {text(c)} AS col, {q(c)} AS v, f FROM _combos WHERE {q(c)} IS NOT NULL" for c in JOINED
        )
        out = self.frame(
            f"WITH firsts AS (SELECT {keys}, col, v, min(f) AS f FROM ({unpivoted}) GROUP BY {keys}, col, v), "
            f"joined AS (SELECT {keys}, col, string_agg(v, '; ' ORDER BY f) AS joined FROM firsts "
            f"GROUP BY {keys}, col), "
            f"wide AS (SELECT {keys}, {texts} FROM joined GROUP BY {keys}) "
            f"SELECT _agg.*, {', '.join('wide.' + q(c) for c in JOINED)} "
            f"FROM _agg LEFT JOIN wide ON {_same('_agg', 'wide', GROUP)}"
        )
        if out.empty:
            return pd.DataFrame(columns=GROUP + ["repeats"])
        return _summary_frame(_in_key_order(out, GROUP))

    def catalog_price_dates(self) -> list[Any] | None:
        """The dates of launch-time prices taken from the catalog, each once; None for a table without runs."""
        if not self.scalar("SELECT count(*) FROM runs"):
            return None
        sql = "SELECT DISTINCT price_as_of FROM runs WHERE strpos(CAST(price_basis AS VARCHAR), 'catalog') > 0"
        return [r[0] for r in self.rows(sql)]


def _in_key_order(frame: Any, keys: list[str]) -> Any:
    return frame.sort_values(keys, na_position="last", kind="mergesort").reset_index(drop=True)


def price_key(hourly: float | None) -> str:
    """A non-spot run's price as a summary key: runs at different prices are different rows."""
    if hourly is None or (isinstance(hourly, float) and math.isnan(hourly)):
        return "unpriced"
    return f"{float(hourly):.6g}"


def prices_paid(market: str, vals: list[float]) -> str | None:
    """What the runs of one summary row paid per hour (one price, or a spot range)."""
    if not vals:
        return None
    if len(vals) == 1:
        return f"USD {vals[0]:g}/h"
    return f"USD {vals[0]:g}-{vals[-1]:g}/h ({market}, {len(vals)} prices, each run at its own)"


def _summary_frame(agg: Any) -> Any:
    """The summary's columns in their order; spreads and prices paid worked out on the few aggregated rows."""
    out = pd.DataFrame({k: agg[k] for k in GROUP})
    out["repeats"] = agg["repeats"]
    for col in MEDIANS:
        out[col] = agg[col]
        if col in SPREADS:
            out[f"{col}_min"], out[f"{col}_max"] = agg[f"{col}_min"], agg[f"{col}_max"]
            out[f"{col}_spread"] = (out[f"{col}_max"] - out[f"{col}_min"]) / out[col]
    for col in JOINED:
        out[col] = agg[col]
    out["setup_fee_usd"] = agg["setup_fee_usd"]
    paid = [sorted({round(float(v), 6) for v in (vals if vals is not None else ()) if v == v}) for vals in agg["_paid"]]
    out["prices_paid"] = [prices_paid(m, v) for m, v in zip(out["market"], paid)]
    return add_throughput_metrics(out)


def billed_seconds(dataset: Any, stacks: Iterable[str] | None = None) -> dict[tuple[str, str], list[float]]:
    """Billed seconds of the completed runs per (stack, benchmark), of `stacks` only (None: all)."""
    columns = set(dataset.schema.names)
    if not {"stack", "benchmark", "billed_hours"} <= columns:
        return {}
    where = ["stack IS NOT NULL", "benchmark IS NOT NULL"]
    if "status" in columns:
        where.append("status = 'completed'")
    if stacks is not None:
        where.append(one_of("stack", stacks))
    with connect() as con:
        con.register("_dataset", dataset, columns=sorted({"stack", "benchmark", "billed_hours", "status"} & columns))
        rows = con.rows(
            f"SELECT stack, benchmark, {num('billed_hours * 3600.0')} FROM _dataset WHERE {' AND '.join(where)}"
        )
    seconds: dict[tuple[str, str], list[float]] = {}
    for stack, bench, s in rows:
        seconds.setdefault((stack, bench), []).extend([] if s is None else [float(s)])
    return seconds


REPRICE_BATCH_ROWS = 20_000
_PRICE_TEXT = {"price_basis", "price_source", "price_as_of", "billing", "billing_as_of", "price_note"}


def reprice_dataset(dataset: Any, as_of: date, path: str | Path) -> Any:
    """`dataset` with every run re-priced from the catalog in force on `as_of`, written to `path` (Parquet) a
    batch at a time (bounded memory); returns it as a Dataset."""
    catalog = load_catalog()
    fields = [f for f in dataset.schema if f.name not in PRICE_COLUMNS]
    fields += [pa.field(c, pa.string() if c in _PRICE_TEXT else pa.float64()) for c in PRICE_COLUMNS]
    schema = pa.schema(fields)
    with pq.ParquetWriter(str(path), schema) as writer:
        for batch in dataset.to_batches(batch_size=REPRICE_BATCH_ROWS):
            if batch.num_rows:
                priced = price_runs(batch.to_pandas(), as_of=as_of, catalog=catalog)
                writer.write_table(pa.Table.from_pandas(priced[schema.names], schema=schema, preserve_index=False))
    return ds.dataset(str(path), format="parquet")


@contextmanager
def report_query(dataset: Any, as_of: date | None = None) -> Iterator[RunsQuery]:
    """A RunsQuery over `dataset` on its own connection; with `as_of`, over the runs re-priced at that date."""
    with connect() as con, tempfile.TemporaryDirectory(prefix="gpubench-priced-") as work:
        if as_of is not None and dataset.count_rows():  # an empty table has nothing to re-price
            dataset = reprice_dataset(dataset, as_of, Path(work) / "priced.parquet")
        yield RunsQuery(con, dataset)
