"""The `gpubench` console script: every command reachable, shared conventions, the base install."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GPUBENCH = Path(sys.executable).with_name("gpubench")
COMMANDS = (
    "offers",
    "cost",
    "plan",
    "check",
    "stacks",
    "preview",
    "up",
    "destroy",
    "refresh",
    "campaign",
    "collect",
    "report",
    "teardown",
    "sweep",
    "prices",
    "ssh",
    "demo",
    "completion",
    "payload",
)


def gpubench(*args: str, env: dict | None = None, stdin=subprocess.DEVNULL) -> subprocess.CompletedProcess:
    if not GPUBENCH.exists():
        pytest.fail(f"{GPUBENCH} missing: `pip install -e .` installs the gpubench console script")
    return subprocess.run(
        [str(GPUBENCH), *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        env={**os.environ, **(env or {})},
        stdin=stdin,
    )


def test_top_level_help_lists_every_command_and_the_exit_codes():
    out = gpubench("--help")
    assert out.returncode == 0
    for command in COMMANDS:
        assert command in out.stdout, command
    assert "exit codes:" in out.stdout and "10" in out.stdout


def test_top_level_help_comes_from_the_summary_table_alone():
    """`gpubench --help` and a word that is no command import no command module, and say what the
    commands' own parsers say (the summaries of analysis.commands.COMMANDS)."""
    from analysis.cli import build_parser

    assert build_parser("gpubench", "").format_help() == build_parser("gpubench").format_help()
    script = (
        "import sys; from analysis.cli import main\n"
        "for argv in (['--help'], ['repor'], []):\n"
        "    try: main(argv)\n"
        "    except SystemExit: pass\n"
        "print(sorted(m for m in sys.modules if m.startswith('analysis.commands.')))"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert out.stdout.splitlines()[-1] == "[]", out.stdout
    assert "invalid choice: 'repor'" in out.stderr and "required: COMMAND" in out.stderr


def test_every_command_module_has_a_row_in_the_table():
    """A module in analysis/commands/ without a row in COMMANDS would never be loaded."""
    import pkgutil

    from analysis import commands

    modules = {f"analysis.commands.{m.name}" for m in pkgutil.iter_modules(commands.__path__)}
    assert {commands.module_of(name) for name in commands.COMMANDS} == modules | set(commands.MODULES.values())


@pytest.mark.parametrize("command", [c for c in COMMANDS if c != "payload"])
def test_each_command_has_help(command):
    from analysis.cli import build_parser

    parser = build_parser("gpubench")
    sub = next(a for a in parser._subparsers._group_actions)  # noqa: SLF001
    text = sub.choices[command].format_help()
    assert text.startswith("usage: gpubench " + command), text[:80]


def test_offers_filters_like_show_gpus():
    out = gpubench("offers", "--gpu", "T4:1", "--sort", "price", "--json")
    rows = json.loads(out.stdout)
    assert out.returncode == 0 and rows
    assert all(r["gpu"] == "T4" and r["gpu_count"] == 1 for r in rows)
    prices = [r["hourly_usd"] for r in rows if r["hourly_usd"] is not None]
    assert prices == sorted(prices)
    spot = json.loads(gpubench("offers", "--gpu", "V100", "--spot", "--max-price", "3", "--json").stdout)
    assert spot and all("spot" in r["markets"] and r["spot_hourly_usd"] <= 3 for r in spot)
    bad = gpubench("offers", "--gpu", "T4:x")
    assert bad.returncode == 2 and "MODEL:COUNT" in bad.stderr and "Traceback" not in bad.stderr


def test_offers_unit_filters():
    from analysis.offerings import order, select

    rows = [
        {
            "id": "a",
            "gpu": "T4",
            "gpu_count": 1,
            "markets": ["on-demand"],
            "hourly_usd": 0.5,
            "spot_hourly_usd": None,
            "regions": ["us-east-1"],
            "zones": [],
            "provider": "aws",
            "gpu_memory_gb": 16,
        },
        {
            "id": "b",
            "gpu": "T4",
            "gpu_count": 4,
            "markets": ["on-demand", "spot"],
            "hourly_usd": 3.9,
            "spot_hourly_usd": 1.2,
            "regions": [],
            "zones": ["us-central1-a"],
            "provider": "gcp",
            "gpu_memory_gb": 16,
        },
        {
            "id": "c",
            "gpu": "V100",
            "gpu_count": 1,
            "markets": ["on-demand"],
            "hourly_usd": None,
            "spot_hourly_usd": None,
            "regions": ["us-east-1"],
            "zones": [],
            "provider": "aws",
            "gpu_memory_gb": 16,
        },
    ]
    assert [r["id"] for r in select(rows, "t4", False, None, None, None)] == ["a", "b"]
    assert [r["id"] for r in select(rows, "T4:4", True, 1.5, "us-central1", None)] == ["b"]
    assert [r["id"] for r in select(rows, None, False, 1.0, None, None)] == ["a"]  # unpriced never passes a price cap
    assert [r["id"] for r in order(rows, "price", False)] == ["a", "b", "c"]  # unpriced last
    assert [r["id"] for r in order(rows, "gpus", False)][0] == "b"


def test_cost_takes_a_stack_name_wherever_an_offering_id_goes():
    by_stack = json.loads(gpubench("cost", "aws-g4dn-1x-spot", "--hours", "2", "--json").stdout)
    by_id = json.loads(gpubench("cost", "aws/g4dn.xlarge", "--market", "spot", "--hours", "2", "--json").stdout)
    assert by_stack == by_id and by_stack["market"] == "spot"
    missing = gpubench("cost", "aws-nope-9x", "--hours", "1")
    assert missing.returncode == 2 and "not a stack" in missing.stderr and "unknown offering" in missing.stderr


def test_plan_one_line_per_stack_and_a_total_bound():
    out = gpubench("plan", "aws-g4dn-1x", "-s", "gcp-t4-1x", "--json")
    doc = json.loads(out.stdout)
    assert [s["stack"] for s in doc["stacks"]] == ["aws-g4dn-1x", "gcp-t4-1x"]
    assert "user_data" not in doc["stacks"][0]
    # the bound is the price for the whole deadline (both bill per second): hand-computed from the catalog rows
    for s in doc["stacks"]:
        assert s["bound_usd"] == pytest.approx(s["hourly_usd"] * s["max_hours"], rel=1e-9)
    assert doc["total"]["bound_usd"] == pytest.approx(sum(s["bound_usd"] for s in doc["stacks"]), abs=1e-6)
    text = gpubench("plan", "aws-g4dn-1x").stdout
    assert "total: at most $" in text and "#cloud-config" not in text
    assert "#cloud-config" in gpubench("plan", "aws-g4dn-1x", "-v").stdout


def test_check_reports_without_touching_anything(tmp_path):
    out = gpubench("check", "--json", "--results", tmp_path.as_uri(), env={"PATH": "/usr/bin:/bin"})
    checks = {c["check"]: c for c in json.loads(out.stdout)}
    assert checks["pulumi CLI"]["ok"] is False and "get.pulumi.com" in checks["pulumi CLI"]["detail"]
    assert checks["extra [analysis]"]["ok"] is True
    assert checks[f"bucket {tmp_path.as_uri()}"]["ok"] is True
    assert out.returncode == 3  # something is missing (the CLI), and it says how to add it


# --- confirmation --------------------------------------------------------------------------


class Answer(io.StringIO):
    def isatty(self):
        return True


def test_confirm_declined_accepted_and_yes():
    from analysis.output import confirm
    from payload.exitcodes import Declined

    err = io.StringIO()
    with pytest.raises(Declined):
        confirm(["launch x"], "Launch?", yes=False, stdin=Answer("n\n"), out=err)
    assert "launch x" in err.getvalue() and "[y/N]" in err.getvalue()
    confirm(["launch x"], "Launch?", yes=False, stdin=Answer("y\n"), out=io.StringIO())
    confirm(["launch x"], "Launch?", yes=True, stdin=io.StringIO(""), out=io.StringIO())  # never reads
    with pytest.raises(Declined, match="--yes"):
        confirm(["launch x"], "Launch?", yes=False, stdin=io.StringIO("y\n"), out=io.StringIO())  # no terminal


@pytest.fixture
def fake_pulumi(tmp_path):
    """A `pulumi` on PATH that records its argv: the launch path without a cloud."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "pulumi.log"
    exe = bin_dir / "pulumi"
    exe.write_text(f'#!/bin/sh\necho "$@" >> {log}\n')
    exe.chmod(0o755)
    return {"PATH": f"{bin_dir}:{os.environ['PATH']}"}, log


def test_up_shows_the_plan_and_asks_before_launching(fake_pulumi):
    env, log = fake_pulumi
    declined = gpubench("up", "aws-g4dn-1x", env=env)
    assert declined.returncode == 10 and "costs at most $" in declined.stderr and "--yes" in declined.stderr
    assert not log.exists()  # nothing launched
    accepted = gpubench("up", "-s", "aws-g4dn-1x", "--yes", env=env)
    assert accepted.returncode == 0, accepted.stderr
    assert log.read_text().split() == ["up", "--stack", "aws-g4dn-1x", "--yes"]


def test_up_answered_at_a_terminal(fake_pulumi):
    import pty

    env, log = fake_pulumi
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [str(GPUBENCH), "destroy", "aws-g4dn-1x"],
        stdin=follower,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        env={**os.environ, **env},
    )
    os.write(leader, b"y\n")
    _, err = proc.communicate(timeout=60)
    os.close(leader)
    os.close(follower)
    assert proc.returncode == 0, err
    assert log.read_text().split() == ["destroy", "--stack", "aws-g4dn-1x", "--yes"]


def test_up_without_the_pulumi_cli_says_how_to_install_before_asking():
    out = gpubench("up", "aws-g4dn-1x", env={"PATH": "/usr/bin:/bin"})
    assert out.returncode == 3 and "get.pulumi.com" in out.stderr and "Launch" not in out.stderr


def test_sweep_and_teardown_ask_first_and_take_yes():
    from analysis.cli import build_parser

    parser = build_parser("gpubench")
    assert parser.parse_args(["sweep", "--provider", "aws", "--yes"]).yes
    assert parser.parse_args(["teardown", "--expired", "-y"]).yes


# --- the base install ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def base_venv(tmp_path_factory):
    """A real venv with only the base dependencies (PyYAML, pydantic, argcomplete) beside this checkout."""
    import annotated_types
    import argcomplete
    import pydantic
    import pydantic_core
    import typing_extensions
    import typing_inspection
    import yaml

    root = tmp_path_factory.mktemp("base")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root / "venv")], check=True)
    site = root / "site"
    site.mkdir()
    for package in (yaml, pydantic, pydantic_core, annotated_types, typing_inspection, argcomplete):
        (site / package.__name__).symlink_to(Path(package.__file__).parent)
    (site / "typing_extensions.py").symlink_to(typing_extensions.__file__)
    python = root / "venv" / "bin" / "python"
    env = {"PYTHONPATH": f"{ROOT}{os.pathsep}{site}", "PATH": "/usr/bin:/bin", "HOME": str(root)}
    return python, env


def test_base_install_prices_and_plans(base_venv):
    python, env = base_venv
    probe = subprocess.run([str(python), "-c", "import pandas"], capture_output=True, text=True, env=env)
    assert probe.returncode != 0, "the base venv must not see the extras"
    for argv in (["offers", "--gpu", "T4:1"], ["cost", "aws-g4dn-1x", "--hours", "6"], ["plan", "aws-g4dn-1x"]):
        out = subprocess.run([str(python), "-m", "analysis", *argv], capture_output=True, text=True, env=env, cwd=ROOT)
        assert out.returncode == 0, (argv, out.stderr)


@pytest.mark.parametrize(("argv", "extra"), [(["preview", "aws-g4dn-1x"], "infra"), (["report"], "analysis")])
def test_missing_extra_names_the_extra(base_venv, argv, extra):
    python, env = base_venv
    out = subprocess.run([str(python), "-m", "analysis", *argv], capture_output=True, text=True, env=env, cwd=ROOT)
    assert out.returncode == 3, out.stderr
    assert f"pip install 'gpubench[{extra}]'" in out.stderr and "Traceback" not in out.stderr


def test_base_install_completes_every_command(base_venv, tmp_path):
    """The shell's completion registers every command module, those of the extras too."""
    python, env = base_venv
    for line, expected in (
        ("gpubench rep", "report"),
        ("gpubench report --ta", "--table"),
        ("gpubench prev", "preview"),
    ):
        target = tmp_path / "completions.txt"
        complete = {"_ARGCOMPLETE": "1", "_ARGCOMPLETE_STDOUT_FILENAME": str(target), "COMP_LINE": line}
        done = subprocess.run(
            [str(python), "-m", "analysis"],
            capture_output=True,
            text=True,
            env={**env, **complete, "COMP_POINT": str(len(line))},
            cwd=ROOT,
        )
        assert done.returncode == 0, done.stderr
        assert [w.strip() for w in target.read_text().split("\013")] == [expected], line
