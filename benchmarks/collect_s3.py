"""Collect performance: `analysis collect` against a sequential boto3 loop and
`aws s3 sync` + parsing, over N result objects in a moto S3 server on loopback.

    python benchmarks/collect_s3.py                  # 10,000 objects
    python benchmarks/collect_s3.py --objects 2000 --latency-ms 20

Targets (issue 5): collect >= 5x faster than the sequential loop, no slower
than `aws s3 sync` + parsing, and a second collect with nothing new <= 1 s.
--latency-ms adds that much delay to every request through a loopback proxy,
to see the effect of real network round trips (S3 first-byte latency is
tens of milliseconds; moto on loopback has none, so on a small machine the
emulator's own CPU, not the network, bounds every client).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
BUCKET = "gpubench-bench"
PREFIX = "results"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_moto() -> tuple[subprocess.Popen, int]:
    exe = Path(sys.executable).parent / "moto_server"
    exe = str(exe) if exe.exists() else shutil.which("moto_server")
    if not exe:
        sys.exit("moto_server is not installed: pip install 'moto[server]'")
    port = free_port()
    proc = subprocess.Popen(
        [exe, "-H", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return proc, port
        except OSError:
            time.sleep(0.1)
    proc.kill()
    sys.exit("moto_server did not start within 30 s")


class LatencyProxy:
    """TCP proxy on loopback delaying each client->server chunk (one request) by `delay` s."""

    def __init__(self, target_port: int, delay: float):
        self.target, self.delay = target_port, delay
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(128)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _pipe(self, src, dst, delay):
        try:
            while data := src.recv(65536):
                if delay:
                    time.sleep(delay)
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def _accept(self):
        while True:
            client, _ = self.sock.accept()
            server = socket.create_connection(("127.0.0.1", self.target))
            threading.Thread(target=self._pipe, args=(client, server, self.delay), daemon=True).start()
            threading.Thread(target=self._pipe, args=(server, client, 0), daemon=True).start()


def s3_client(endpoint: str, pool: int = 10):
    import boto3
    from botocore.config import Config

    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(max_pool_connections=pool),
    )


def populate(endpoint: str, n: int) -> None:
    from analysis.synthetic import make_result, result_bytes, result_key

    offerings = ["aws/p2.xlarge", "aws/p3.2xlarge", "aws/p3.8xlarge", "gcp/n1-standard-4+1xk80"]
    client = s3_client(endpoint, 16)
    client.create_bucket(Bucket=BUCKET)
    template = {o: make_result(o, "resnet50", hourly_usd=1.0) for o in offerings}

    def put(i):
        r = json.loads(json.dumps(template[offerings[i % len(offerings)]]))
        r["run_id"] = f"20250101T000000Z-i-{i:08d}-resnet50"
        r["metrics"]["train_seconds"] = 600.0 + i % 97
        client.put_object(Bucket=BUCKET, Key=f"{PREFIX}/{result_key(r)}", Body=result_bytes(r))

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(put, range(n)))


def sequential_loop(endpoint: str) -> tuple[float, int]:
    """What one would write by hand: list, then get and parse each object in turn."""
    client = s3_client(endpoint)
    t = time.perf_counter()
    n = 0
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=PREFIX + "/"):
        for obj in page.get("Contents", []):
            json.loads(client.get_object(Bucket=BUCKET, Key=obj["Key"])["Body"].read())
            n += 1
    return time.perf_counter() - t, n


def process_cpu_seconds(pid: int) -> float | None:
    """User + system CPU of a process (Linux /proc), None elsewhere."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def list_only(endpoint: str) -> float:
    client = s3_client(endpoint)
    t = time.perf_counter()
    sum(
        len(p.get("Contents", []))
        for p in client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=PREFIX + "/")
    )
    return time.perf_counter() - t


def our_collect(out: Path, workers: int | None) -> tuple[float, dict]:
    from analysis.collect import DEFAULT_WORKERS, collect

    t = time.perf_counter()
    summary, _ = collect([f"s3://{BUCKET}/{PREFIX}"], out, workers=workers or DEFAULT_WORKERS)
    return time.perf_counter() - t, summary.to_dict()


def aws_sync(endpoint: str) -> tuple[float, int] | None:
    exe = shutil.which("aws") or (
        str(Path(sys.executable).parent / "aws") if (Path(sys.executable).parent / "aws").exists() else None
    )
    if not exe:
        return None
    dest = Path(tempfile.mkdtemp(prefix="s3sync-"))
    env = {
        **os.environ,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    try:
        t = time.perf_counter()
        subprocess.run(
            [exe, "s3", "sync", f"s3://{BUCKET}/{PREFIX}", str(dest), "--endpoint-url", endpoint, "--only-show-errors"],
            check=True,
            env=env,
        )
        n = 0
        for path in dest.rglob("result.json"):
            json.loads(path.read_bytes())
            n += 1
        return time.perf_counter() - t, n
    finally:
        shutil.rmtree(dest, ignore_errors=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--objects", type=int, default=10_000, help="result objects to put in the bucket (default 10000)")
    ap.add_argument("--workers", type=int, default=None, help="collect's download threads (default: collect's own)")
    ap.add_argument(
        "--latency-ms",
        type=float,
        default=0.0,
        help="simulated per-request network latency through a loopback proxy (default 0)",
    )
    ap.add_argument("--_proxy", nargs=2, metavar=("PORT", "MS"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args._proxy:
        # its own process, so the proxy's threads never compete with the clients for the GIL
        proxy = LatencyProxy(int(args._proxy[0]), float(args._proxy[1]) / 1000)
        print(proxy.port, flush=True)
        threading.Event().wait()
    if args.objects < 1:
        ap.error(f"--objects must be at least 1, got {args.objects}")

    proc, port = start_moto()
    helpers = [proc]
    try:
        direct = f"http://127.0.0.1:{port}"
        os.environ.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_DEFAULT_REGION="us-east-1")
        print(f"putting {args.objects} result objects into moto S3 at {direct} ...", flush=True)
        t = time.perf_counter()
        populate(direct, args.objects)
        print(f"  done in {time.perf_counter() - t:.1f} s")
        endpoint = direct
        if args.latency_ms > 0:
            proxy = subprocess.Popen(
                [sys.executable, __file__, "--_proxy", str(port), str(args.latency_ms)],
                stdout=subprocess.PIPE,
                text=True,
            )
            helpers.append(proxy)
            endpoint = f"http://127.0.0.1:{int(proxy.stdout.readline())}"
            print(f"requests go through a proxy adding {args.latency_ms:g} ms each: {endpoint}")
        os.environ["AWS_ENDPOINT_URL"] = endpoint
        os.environ.pop("AWS_ENDPOINT_URL_S3", None)

        listing = list_only(endpoint)
        cpu0 = process_cpu_seconds(proc.pid)
        seq, n = sequential_loop(endpoint)
        cpu1 = process_cpu_seconds(proc.pid)
        # moto serves requests under one GIL: its CPU time for the same requests
        # is a floor under any client's wall time, so seq / server_cpu bounds the ratio.
        server_cpu = None if cpu0 is None or cpu1 is None else cpu1 - cpu0
        print(
            f"sequential boto3 loop (list + get + parse): {seq:.2f} s for {n} objects "
            f"({listing:.2f} s of it is listing)"
        )
        out = Path(tempfile.mkdtemp(prefix="collect-bench-"))
        try:
            first, s1 = our_collect(out, args.workers)
            print(
                f"analysis collect, first run: {first:.2f} s (valid {s1['valid']}, new {s1['new']}, "
                f"skipped {len(s1['skipped'])}; includes schema validation and writing Parquet + CSV)"
            )
            second, s2 = our_collect(out, args.workers)
            print(
                f"analysis collect, nothing new: {second:.2f} s (new {s2['new']}, cached {s2['cached']}; "
                f"listing alone takes {listing:.2f} s on this server)"
            )
        finally:
            shutil.rmtree(out, ignore_errors=True)
        sync = aws_sync(endpoint)
        print()
        print(f"ratio sequential / collect:  {seq / first:5.2f}x   (target >= 5x)")
        if server_cpu:
            print(
                f"  ceiling on this machine:   {seq / server_cpu:5.2f}x   (moto spent {server_cpu:.2f} s of CPU "
                f"serving the sequential loop; no client can finish faster than the server)"
            )
        if sync is None:
            print("aws s3 sync: skipped, the aws CLI is not installed (pip install awscli)")
        else:
            print(f"aws s3 sync + parse: {sync[0]:.2f} s for {sync[1]} objects")
            print(f"ratio sync / collect:        {sync[0] / first:5.2f}x   (target >= 1x)")
        print(f"second collect:              {second:5.2f} s   (target <= 1 s)")
        print(f"machine: {os.cpu_count()} CPUs; moto server and client share them")
    finally:
        for p in helpers:
            p.terminate()
            p.wait(timeout=10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
