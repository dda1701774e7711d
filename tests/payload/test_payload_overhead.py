"""benchmarks/payload_overhead.py runs and prints the ratio (at a quarter of its default training samples:
the output and the gross-regression bound are what is tested; the 2% target needs its default scale and --check)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "payload_overhead.py"


def test_overhead_script_prints_its_ratio():
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "--repeats", "2", "--samples", "4096"],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert re.search(r"repeat 1 plain\s+fit seconds \d+\.\d+", out.stdout)
    assert re.search(r"repeat 1 harness\s+fit seconds \d+\.\d+", out.stdout)
    match = re.search(
        r"overhead ratio \(harness/plain fit time\): (\d+\.\d+) \(([+-]\d+\.\d+)%\), target <= 1\.02", out.stdout
    )
    assert match, out.stdout[-2000:]
    ratio = float(match.group(1))
    assert re.search(r"median ratio \d+\.\d+", out.stdout)
    # the 2% target is checked with --check on a quiet machine; identical fits
    # vary by up to ~40% on shared CI CPUs (measured), so only a gross
    # regression (the harness taking several times as long) fails this test
    assert 0.33 < ratio < 3.0, ratio
