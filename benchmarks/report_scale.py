"""The report over a large results table, the way `gpubench report` makes it.

Writes synthetic results tables of N rows directly as Parquet, in batches:
the rows of a small real collect (tests/synthetic_results.py's demo-like
results, through `collect_results`, so every column is what collect writes)
repeated with their numbers varied per run (times, costs, throughput, spot
prices), each with its own run_id. Then runs `gpubench report --table DIR
--out DIR` in a subprocess per size (analysis.cli.main: the command's parsing,
`write_report` and the summary it prints; DataFusion over the dataset), for its
own wall time and peak memory (VmHWM: see peak_rss.py).

    python benchmarks/report_scale.py                     # 100k, 300k, 1M rows
    python benchmarks/report_scale.py --rows 1000000 --json

Goal: 1,000,000 rows in at most 10 s and under 1 GB peak. Deletes its tables
when done (--keep DIR to keep them).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(1, str(ROOT / "tests"))  # synthetic_results: the tests' schema-valid results
sys.path.insert(2, str(ROOT / "benchmarks"))
from peak_rss import peak_rss_kb  # noqa: E402

BATCH = 50_000
# Columns varied per run, by one factor per run: what a run measured and what it cost.
SCALED = (
    "train_seconds",
    "phase_total_seconds",
    "train_hours",
    "instance_hours",
    "instance_seconds",
    "billed_hours",
    "billed_cost_usd",
    "train_cost_usd",
)
INVERSE = ("samples_per_second", "samples_per_second_p10", "samples_per_second_p90")
GOAL_SECONDS, GOAL_MB = 10.0, 1024


def template_rows(work: Path) -> Any:
    """The table collect writes for the demo-like results plus spot runs: the row shape, every column."""
    import pyarrow.parquet as pq
    from synthetic_results import demo_like_results, make_result, result_bytes, result_key

    from analysis.collect.run import collect_results
    from payload.storage import open_store

    results = demo_like_results() + [
        make_result("aws/p2.xlarge", b, market="spot", spot_hourly_usd=0.28, repeat=500 + i)
        for i, b in enumerate(("resnet50", "bilstm-sentiment"))
    ]
    store = open_store(str(work / "results"))
    for r in results:
        store.put_bytes(result_key(r), result_bytes(r))
    collect_results([str(work / "results")], work / "template", spot_history="off")
    return pq.read_table(work / "template" / "results.parquet")


def _varied(row: dict, n: int, rng: random.Random) -> dict:
    """Run `n`: the template's configuration with its own id and numbers."""
    out = dict(row)
    factor = rng.uniform(0.8, 1.25)
    for col in SCALED:
        if isinstance(out.get(col), float) and out[col] == out[col]:
            out[col] = out[col] * factor
    for col in INVERSE:
        if isinstance(out.get(col), float) and out[col] == out[col]:
            out[col] = out[col] / factor
    if out.get("market") == "spot" and isinstance(out.get("hourly_usd"), float):
        out["hourly_usd"] = round(rng.uniform(0.2, 0.4), 4)  # each spot run at its own price
    out["run_id"] = f"{row['run_id']}-{n:07d}"
    out["key"] = f"{row['key']}-{n:07d}"
    return out


def write_table(rows: int, template: Any, out: Path, seed: int = 0) -> Path:
    """A results.parquet of `rows` runs under `out`, written BATCH rows at a time."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = random.Random(seed)
    out.mkdir(parents=True, exist_ok=True)
    schema, templates = template.schema, template.to_pylist()
    with pq.ParquetWriter(out / "results.parquet", schema) as writer:
        for start in range(0, rows, BATCH):
            batch = [_varied(templates[n % len(templates)], n, rng) for n in range(start, min(rows, start + BATCH))]
            writer.write_table(pa.Table.from_pylist(batch, schema=schema))
    return out


def child(table: str) -> None:
    """One report, timed from the call (after imports); prints its seconds, the
    page's share of them (templates and charts) and the process's peak RSS."""
    from contextlib import redirect_stdout

    import analysis.report.page as page
    from analysis.cli import main

    spent = {"page_s": 0.0}
    real = page.write_pages

    def timed(*args, **kwargs):
        t = time.perf_counter()
        try:
            return real(*args, **kwargs)
        finally:
            spent["page_s"] += time.perf_counter() - t

    page.write_pages = timed  # write_report imports it when called
    start = time.perf_counter()
    with open(os.devnull, "w") as quiet, redirect_stdout(quiet):
        if main(["report", "--table", table, "--out", table]):
            raise SystemExit("gpubench report failed")
    call = time.perf_counter() - start
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu = usage.ru_utime + usage.ru_stime  # the whole process, imports included: less load-bound than wall time
    print(json.dumps({"call_s": call, "peak_kb": peak_rss_kb(), "cpu_s": cpu, **spent}))


def measure(table: Path) -> dict:
    """Wall time of the call and of the process, and the process's own peak RSS."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, __file__, "--child", str(table)], capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    if proc.returncode:
        return {"error": proc.stderr.strip().splitlines()[-1:]}
    return {"process_s": wall, **json.loads(proc.stdout)}


def machine() -> str:
    load = os.getloadavg()[0]
    return f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, load {load:.1f}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, nargs="+", default=[100_000, 300_000, 1_000_000])
    p.add_argument("--keep", metavar="DIR", help="write (and keep) the tables under DIR")
    p.add_argument("--json", action="store_true")
    p.add_argument("--child", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        child(args.child)
        return 0
    with tempfile.TemporaryDirectory(prefix="gpubench-report-scale-") as tmp:
        work = Path(args.keep) if args.keep else Path(tmp)
        templates = template_rows(work)
        results = []
        for rows in args.rows:
            t0 = time.perf_counter()
            table = write_table(rows, templates, work / f"table-{rows}")
            written = time.perf_counter() - t0
            load = os.getloadavg()[0]
            results.append({"rows": rows, "write_s": round(written, 1), "start_load": load, **measure(table)})
            print(_line(results[-1]), file=sys.stderr, flush=True)
    doc = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "machine": machine(), "results": results}
    print(json.dumps(doc, indent=2) if args.json else _text(doc))
    return 0


def _line(r: dict) -> str:
    if "error" in r:
        return f"{r['rows']:>9,} failed: {r['error']}"
    mb = r["peak_kb"] / 1024
    goal = ""
    if r["rows"] >= 1_000_000:
        goal = "  [met]" if r["process_s"] <= GOAL_SECONDS and mb < GOAL_MB else "  [not met]"
    return (
        f"{r['rows']:>9,} {r['call_s']:>8.2f} {r['call_s'] - r['page_s']:>8.2f} "
        f"{r['process_s']:>9.2f} {r['cpu_s']:>6.1f} {mb:>8.0f}  (load {r['start_load']:.1f}){goal}"
    )


def _text(doc: dict) -> str:
    head = f"{doc['date']}, {doc['machine']}\n     rows   call s  table s process s  cpu s  peak MB"
    notes = (
        "(call: the report's call after imports; table: the call without the page (templates and charts);\n"
        " process: with interpreter start and imports; cpu: the process's user + system CPU seconds;\n"
        " peak: VmHWM of the process)"
    )
    return "\n".join([head, *(_line(r) for r in doc["results"]), notes])


if __name__ == "__main__":
    sys.exit(main())
