"""A number over its bound is named by the option the user typed: bench's --deadline and --budget
share their bounds with report's --deadline-hours and --budget-usd, but the error says --deadline."""

from __future__ import annotations

import pytest

from analysis.cli import main
from payload import exitcodes


@pytest.mark.parametrize("typed, value", [("--deadline", "1e300"), ("--budget", "1e300"), ("--hourly-usd", "1e300")])
def test_a_bound_names_the_option_as_typed(typed, value, tmp_path, capsys):
    code = main(["bench", str(tmp_path / "task.yaml"), "--local", typed, value])
    err = capsys.readouterr().err
    assert code == exitcodes.USAGE
    assert f"error: {typed} 1e+300 is more than the most it can sensibly be" in err


def test_report_still_names_its_own_option(tmp_path, capsys):
    assert main(["report", "--table", str(tmp_path), "--deadline-hours", "1e300"]) == exitcodes.USAGE
    assert "--deadline-hours 1e+300 is more than" in capsys.readouterr().err
