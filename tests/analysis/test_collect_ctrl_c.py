"""Ctrl-C while collect downloads results ends within a second: downloads not started are
cancelled, the ones in flight are not waited for, and the command exits 130 without a traceback."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from payload import exitcodes

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent(
    """
    import sys, threading, time
    from analysis.collect import sources
    from payload.entrypoint import guarded
    from payload.storage import ObjectInfo, open_store

    started = []
    lock = threading.Lock()

    def slow_read(store, key, limit):
        with lock:
            started.append(key)
            print("read " + key, flush=True)
            if len(started) == 2:
                print("ready", flush=True)
        time.sleep(60)  # a download that hangs

    sources.read_capped = slow_read
    store = open_store(sys.argv[1])
    todo = [
        (store, sys.argv[1], f"runs/s/r{i}/result.json", ObjectInfo(f"runs/s/r{i}/result.json", 10, None, None))
        for i in range(8)
    ]
    sys.exit(guarded(lambda: len(list(sources.download(todo, 2, None))) and 0, prog="collect"))
    """
)


def test_ctrl_c_during_downloads_ends_within_a_second_and_starts_no_more(tmp_path):
    proc = subprocess.Popen(
        [sys.executable, "-c", SCRIPT, str(tmp_path / "bucket")],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        lines = []
        while (line := proc.stdout.readline().strip()) != "ready":
            assert line, proc.stderr.read()
            lines.append(line)
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert time.monotonic() - sent < 1.0, err
    assert proc.returncode == exitcodes.CANCELLED and "collect: cancelled (Ctrl-C)" in err and "Traceback" not in err
    assert len([line for line in lines + out.splitlines() if line.startswith("read ")]) == 2
