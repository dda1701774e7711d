"""`gpubench collect --results VALUE`: an empty, blank or unknown location is
a usage error naming the value and the fix, before anything is listed or
written (not a bucket that "cannot be listed")."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from analysis.cli import main
from payload import exitcodes

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def nothing_listed(monkeypatch):
    """Fails the test if collect gets as far as opening or listing a location."""
    from analysis.collect import run as collecting

    def refuse(*args, **kw):
        raise AssertionError("collect listed a location it should have refused")

    monkeypatch.setattr(collecting, "collect_results", refuse)


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("", ["--results '' is empty", "s3://bucket[/prefix]"]),
        ("   ", ["--results '   ' is empty", "gs://bucket[/prefix]"]),
        ("\t", ["--results '\\t' is empty", "file:///dir"]),
        ("ftp://host/results", ["'ftp://host/results' is neither a bucket URL", "use e.g. s3://"]),
        ("s3://", ["'s3://' names no bucket", "use e.g. s3://"]),
        (" ./results", ["starts or ends with whitespace", "write './results'"]),
    ],
    ids=["empty", "blank", "tab", "unknown-scheme", "no-bucket", "padded"],
)
def test_a_bad_results_location_is_a_usage_error_before_anything_is_listed(
    value, said, tmp_path, capsys, nothing_listed
):
    table = tmp_path / "table"
    code = main(["collect", "--results", value, "--table", str(table), "--json"])
    err = capsys.readouterr().err
    assert code == exitcodes.USAGE, err
    assert all(s in err for s in said), err
    assert "--results" in err and "cannot list" not in err and "Traceback" not in err
    assert not table.exists()  # nothing written either


def test_a_bad_location_among_good_ones_stops_the_collect(tmp_path, capsys, nothing_listed):
    good = tmp_path / "results"
    good.mkdir()
    code = main(["collect", "--results", str(good), "--results", "", "--table", str(tmp_path / "t")])
    assert code == exitcodes.USAGE and "--results '' is empty" in capsys.readouterr().err


def test_a_bad_location_from_the_environment_names_the_variable(tmp_path, capsys, monkeypatch, nothing_listed):
    monkeypatch.setenv("GPUBENCH_RESULTS", "gopher://results")
    code = main(["collect", "--table", str(tmp_path / "t")])
    err = capsys.readouterr().err
    assert code == exitcodes.USAGE and "$GPUBENCH_RESULTS: 'gopher://results'" in err, err


def test_the_command_exits_with_the_usage_code_and_no_traceback(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-m", "analysis", "collect", "--results", "", "--table", str(tmp_path / "t")],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    assert out.returncode == exitcodes.USAGE, out.stderr
    assert "--results '' is empty" in out.stderr and "Traceback" not in out.stderr
    assert not (tmp_path / "t").exists() and not (tmp_path / "results").exists()
