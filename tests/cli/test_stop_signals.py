"""SIGTERM and SIGHUP (`timeout`, a closed terminal, a cancelled CI job) end every gpubench command as
Ctrl-C does: a collect killed so lets go of the table's lock and says it was cancelled (exit 130)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from payload import exitcodes

ROOT = Path(__file__).resolve().parents[2]

# collect, with the lock's heartbeat thread replaced by one that sends the signal once the lock is held
SCRIPT = textwrap.dedent(
    """
    import os, sys
    from analysis import cli
    from analysis.collect import lock

    def beat(backend, started, stop):
        os.kill(os.getpid(), int(sys.argv[1]))
        stop.wait()

    lock._beat = beat
    sys.exit(cli.main(["collect", "--results", sys.argv[2], "--table", sys.argv[3]], prog="gpubench"))
    """
)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_stop_signal_ends_collect_as_ctrl_c_does_and_lets_go_of_the_lock(tmp_path, signum):
    from synthetic_results import make_result, result_key

    results, table = tmp_path / "results", tmp_path / "table"
    result = make_result()
    (results / result_key(result)).parent.mkdir(parents=True)
    (results / result_key(result)).write_text(__import__("json").dumps(result))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")])}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(int(signum)), str(results), str(table)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == exitcodes.CANCELLED, done.stderr
    assert f"cancelled ({signal.Signals(signum).name})" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (table / "_gpubench" / "collect.lock").exists()
