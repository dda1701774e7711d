"""benchmarks/payload_overhead.py runs and prints the ratio (at a quarter of its default training samples:
the output and the gross-regression bound are what is tested; the 2% target needs its default scale and --check).

Its `main` runs in this process, as the payload's in-process tests do: a worker that has already loaded
TensorFlow does not pay its ~4 CPU-s import again in a child."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "payload_overhead.py"
# what the script sets for itself (off-cloud, quiet TensorFlow, a private spool): restored after the test
SCRIPT_ENVIRONMENT = ("AWS_EC2_METADATA_DISABLED", "GCE_METADATA_HOST", "GPUBENCH_SPOOL", "TF_CPP_MIN_LOG_LEVEL")


def _script():
    spec = importlib.util.spec_from_file_location("payload_overhead", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_overhead_script_prints_its_ratio(monkeypatch, capsys):
    for name in SCRIPT_ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)
    import keras  # heavy: TensorFlow; the script loads it anyway

    strategies = []  # of every fit, plain and harness: the same work on both sides
    fit = keras.Model.fit

    def recording_fit(model, *args, **kwargs):
        strategies.append(type(model.distribute_strategy).__name__)
        return fit(model, *args, **kwargs)

    monkeypatch.setattr(keras.Model, "fit", recording_fit)
    rc = _script().main(["--repeats", "2", "--samples", "4096"])
    out = capsys.readouterr()
    # 1 warm-up + 2 plain + 2 harness fits, all under the strategy the harness builds its model in
    assert len(strategies) == 5 and len(set(strategies)) == 1, strategies
    assert rc == 0, out.err[-3000:]
    assert re.search(r"repeat 1 plain\s+fit seconds \d+\.\d+", out.out)
    assert re.search(r"repeat 1 harness\s+fit seconds \d+\.\d+", out.out)
    match = re.search(
        r"overhead ratio \(harness/plain fit time\): (\d+\.\d+) \(([+-]\d+\.\d+)%\), target <= 1\.02", out.out
    )
    assert match, out.out[-2000:]
    ratio = float(match.group(1))
    assert re.search(r"median ratio \d+\.\d+", out.out)
    # a timing, not a verdict: on shared CPUs identical fits differ by several times under load, so
    # the 2% target is checked by the script's --check on a quiet machine (benchmarks/README.md)
    assert ratio > 0, ratio
