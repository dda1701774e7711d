"""End-to-end fixtures: one real `python -m analysis demo --quick` run (the
driver behind `make demo`, real payload processes, a local results bucket,
collect, report) shared by the demo and browser tests of this session.

The run happens once per session even across xdist workers: the first worker
to take the lock runs it into the session's shared temp dir, the others read
what it left (--dist loadgroup alone does not keep these tests on one worker
with the pytest in .venv). Tests that change a demo directory work on a copy.
"""

from __future__ import annotations

import fcntl
import json
from dataclasses import asdict
from pathlib import Path

import pytest
from demo_helpers import DemoRun, run_demo


@pytest.fixture(scope="session")
def demo_first(tmp_path_factory, worker_id) -> DemoRun:
    """The quick demo run once, in a fresh directory (a fresh clone's view: no results/ or report/)."""
    base = tmp_path_factory.getbasetemp()
    shared = base if worker_id == "master" else base.parent
    root, record = shared / "e2e-demo", shared / "e2e-demo.json"
    with open(shared / "e2e-demo.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if record.exists():
            data = json.loads(record.read_text())
            run = DemoRun(**{**data, **{k: Path(data[k]) for k in ("root", "results", "report")}})
        else:
            root.mkdir()
            run = run_demo(root)
            record.write_text(json.dumps({k: str(v) if isinstance(v, Path) else v for k, v in asdict(run).items()}))
    assert run.returncode == 0, run.stdout[-4000:]
    return run
