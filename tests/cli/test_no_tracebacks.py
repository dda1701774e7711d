"""No tracebacks: bad numbers, bad dates, `--out` at a file and a closed pipe each
end in a message and a documented exit code (payload/exitcodes.py), through the
real entry points in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from synthetic_results import make_result, result_bytes, result_key

from payload import exitcodes
from payload.storage import open_store

ROOT = Path(__file__).resolve().parents[2]
GPUBENCH = Path(sys.executable).with_name("gpubench")


def _env(tmp_path: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "GOOGLE_", "GPUBENCH_"))}
    # no cloud credentials: a command that got past its argument checks would say "missing", not "usage"
    return {**env, "PYTHONPATH": str(ROOT), "AWS_CONFIG_FILE": os.devnull, "AWS_SHARED_CREDENTIALS_FILE": os.devnull}


def _run(argv: list[str], tmp_path: Path, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(
        argv,
        cwd=tmp_path,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
        **kw,
    )


# (argv after the program, expected exit code, a word the message must contain)
CASES = [
    (["offers", "--max-price", "nan"], exitcodes.USAGE, "--max-price"),
    (["offers", "--max-price", "-1"], exitcodes.USAGE, "--max-price"),
    (["cost", "aws/p3.8xlarge", "--hours", "-1"], exitcodes.USAGE, "--hours"),
    (["cost", "aws/p3.8xlarge", "--hours", "inf"], exitcodes.USAGE, "--hours"),
    (["cost", "aws/p3.8xlarge", "--hours", "1", "--as-of", "2020-13-01"], exitcodes.USAGE, "2020-13-01"),
    (["offerings", "--as-of", "2020-13-01"], exitcodes.USAGE, "2020-13-01"),
    (["report", "--as-of", "2020-13-01"], exitcodes.USAGE, "2020-13-01"),
    (["collect", "--workers", "0"], exitcodes.USAGE, "--workers"),
    (["collect", "--results", "results", "--table", "a-file"], exitcodes.USAGE, "a-file"),
    (["report", "--out", "a-file"], exitcodes.USAGE, "a-file"),
    (["report", "--table", "a-file"], exitcodes.USAGE, "a-file"),
    (["collect", "--out", "somewhere"], exitcodes.USAGE, "--table somewhere"),
    (["prices", "refresh", "--out", "a-file"], exitcodes.USAGE, "a-file"),
    (["demo", "--out", "a-file", "--quick"], exitcodes.USAGE, "a-file"),
    (["demo", "--results", "a-file", "--quick"], exitcodes.USAGE, "a-file"),
    (["demo", "--hourly-usd", "nan", "--quick"], exitcodes.USAGE, "nan"),
    (["sweep", "--provider", "aws", "--now", "2020-13-01T00:00:00Z"], exitcodes.USAGE, "2020-13-01"),
    (["teardown", "--expired", "--now", "yesterday"], exitcodes.USAGE, "yesterday"),
    (["report", "--deadline-hours", "-1"], exitcodes.USAGE, "--deadline-hours"),
    (["report", "--budget-usd", "nan"], exitcodes.USAGE, "--budget-usd"),
]


@pytest.fixture
def workdir(tmp_path):
    (tmp_path / "a-file").write_text("not a directory\n")
    (tmp_path / "results").mkdir()
    return tmp_path


@pytest.mark.parametrize("argv, code, word", CASES, ids=[" ".join(c[0]) for c in CASES])
def test_bad_input_is_a_message_and_an_exit_code(argv, code, word, workdir):
    out = _run([sys.executable, "-m", "analysis", *argv], workdir)
    assert "Traceback" not in out.stderr, out.stderr[-3000:]
    assert out.returncode == code, (out.returncode, out.stderr[-2000:])
    assert word in out.stderr, out.stderr[-2000:]


def _report_dir(tmp_path: Path) -> Path:
    """A collected table to report (collected in this process: the report is the command under test)."""
    from analysis.cli import main

    src, out = tmp_path / "results", tmp_path / "report"
    store = open_store(str(src))
    for i in range(12):
        r = make_result("aws/p3.2xlarge", "resnet50", samples_per_second=100.0 + i, hourly_usd=3.06, repeat=i)
        store.put_bytes(result_key(r), result_bytes(r))
    assert main(["collect", "--results", str(src), "--table", str(out)]) == 0
    return out


@pytest.mark.parametrize(
    "argv",
    [
        ["-m", "analysis", "offers"],
        ["-m", "analysis", "offerings"],
        ["-m", "analysis", "report", "--table", "report", "--out", "report"],
        ["-m", "payload", "list"],
        ["gpubench", "offerings"],
    ],
    ids=lambda a: " ".join(a),
)
def test_output_piped_to_head_ends_quietly(argv, workdir):
    if argv[1:3] == ["analysis", "report"]:
        _report_dir(workdir)
    cmd = [str(GPUBENCH), *argv[1:]] if argv[0] == "gpubench" else [sys.executable, *argv]
    # `cmd | head -n 0`: the reader is gone before the command writes its first line,
    # so every write meets a closed pipe (`head -n 1` would race the pipe buffer)
    shell = " ".join(f"'{c}'" for c in cmd) + " 2>stderr.txt | head -n 0; echo ${PIPESTATUS[0]} > rc.txt"
    subprocess.run(["bash", "-c", shell], cwd=workdir, env=_env(workdir), timeout=180, capture_output=True)
    err = (workdir / "stderr.txt").read_text()
    assert "Traceback" not in err and "BrokenPipeError" not in err, err[-3000:]
    assert int((workdir / "rc.txt").read_text()) == exitcodes.OK
