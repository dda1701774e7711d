"""Ctrl-C during `campaign up` ends the command within a second (exit 130, no traceback), starts no
further `pulumi up`, and leaves the stacks in flight `launching` in the manifest for the next `up`."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from campaign_project import make_project
from servers import interrupt_when_ready

from payload import exitcodes

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent(
    """
    import sys, threading, time
    import analysis.campaign.cli as campaign_cli
    from analysis.cli import main

    started = []
    lock = threading.Lock()

    class Stack:
        def __init__(self, name):
            self.name = name
        def outputs(self):
            return {}
        def set_config(self, key, value):
            pass
        def up(self, on_output=None, **kw):
            with lock:
                started.append(self.name)
                print("up " + self.name, flush=True)
                if len(started) == 2:
                    print("ready", flush=True)
            time.sleep(60)  # a long `pulumi up`

    class Backend:
        def select_stack(self, name):
            return Stack(name)
        def list_stacks(self):
            return []

    campaign_cli.BACKEND_FACTORY = lambda work_dir: Backend()
    sys.exit(main(sys.argv[1:]))
    """
)


def test_ctrl_c_during_campaign_up_ends_within_a_second_and_starts_nothing_more(tmp_path):
    names = ["aws-g4dn-1x", "aws-g4dn-2x", "aws-g5-12x", "gcp-t4-1x"]
    project = make_project(tmp_path / "project", {n: {} for n in names}, tiny=False)
    bucket = tmp_path / "bucket"
    argv = ["campaign", "up", *names, "--results", bucket.as_uri(), "--concurrency", "2"]
    argv += ["--project-dir", str(project), "--campaign-id", "c1"]
    lines, out, err, seconds, code = interrupt_when_ready(SCRIPT, [*argv], tmp_path, ROOT)
    assert seconds < 1.0, err
    assert code == exitcodes.CANCELLED and "cancelled (Ctrl-C)" in err and "Traceback" not in err
    started = [line for line in lines + out.splitlines() if line.startswith("up ")]
    assert len(started) == 2  # the other two stacks never started
    manifest = json.loads(next(bucket.rglob("manifest.json")).read_text())
    states = {name: entry.get("state") for name, entry in manifest["stacks"].items()}
    in_flight = {line[3:] for line in started}
    assert {states[n] for n in in_flight} == {"launching"}
    assert {states[n] for n in set(names) - in_flight} == {"pending"}
