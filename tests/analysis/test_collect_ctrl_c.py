"""Ctrl-C while collect downloads results ends within a second: downloads not started are
cancelled, the ones in flight are not waited for, and the command exits 130 without a traceback."""

from __future__ import annotations

import textwrap
from pathlib import Path

from servers import interrupt_when_ready

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
    sys.exit(guarded(lambda: len(list(sources.download(todo, 2, None, {}))) and 0, prog="collect"))
    """
)


def test_ctrl_c_during_downloads_ends_within_a_second_and_starts_no_more(tmp_path):
    lines, out, err, seconds, code = interrupt_when_ready(SCRIPT, [str(tmp_path / "bucket")], tmp_path, ROOT)
    assert seconds < 1.0, err
    assert code == exitcodes.CANCELLED and "collect: cancelled (Ctrl-C)" in err and "Traceback" not in err
    assert len([line for line in lines + out.splitlines() if line.startswith("read ")]) == 2
