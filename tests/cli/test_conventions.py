"""The CLI conventions (docs/cli.md), table-driven across every subcommand, run from a directory outside
the checkout: `--results` is always the bucket, `--table` always the results table, globs wherever stacks
are listed, exit codes only from payload/exitcodes.py, `--help` on every subcommand, `--version`,
completion and the progress helper."""

from __future__ import annotations

import argparse
import fnmatch
import io
import json
import os
import re
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from importlib.metadata import version
from pathlib import Path

import pytest
from parser_walk import all_parsers, leaves, subcommands
from synthetic_results import make_result, result_bytes, result_key

from analysis.cli import build_parser, main
from infra.projectfiles import known_stacks
from payload import exitcodes

ROOT = Path(__file__).resolve().parents[2]


PARSER = build_parser("gpubench")
LEAVES = list(leaves(PARSER))
EVERY = [p for p, _ in all_parsers(PARSER) if p]
# The commands that write (collect, demo) or read (report, plan, preview) the results table.
TABLE_COMMANDS = {("collect",), ("report",), ("plan",), ("preview",), ("demo",)}


def _option(parser: argparse.ArgumentParser, flag: str) -> argparse.Action | None:
    return next((a for a in parser._actions if flag in a.option_strings), None)


def run_outside(workdir: Path, argv: list[str]) -> tuple[int, str, str]:
    """`gpubench argv` in-process with the current directory outside the checkout."""
    out, err = io.StringIO(), io.StringIO()
    cwd = os.getcwd()
    os.chdir(workdir)
    try:
        with redirect_stdout(out), redirect_stderr(err):
            try:
                code = main(argv)
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else exitcodes.USAGE
    finally:
        os.chdir(cwd)
    return code, out.getvalue(), err.getvalue()


def gpubench(workdir: Path, *argv: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """The real entry point in a subprocess, from `workdir`, importing this checkout."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("GPUBENCH_", "_ARGCOMPLETE", "COMP_"))}
    base.update({"PYTHONPATH": str(ROOT), **(env or {})})
    return subprocess.run(
        [sys.executable, "-c", "import sys; from analysis.cli import main; sys.exit(main(prog='gpubench'))", *argv],
        cwd=workdir,
        env={k: v for k, v in base.items() if v is not None},  # None: unset
        capture_output=True,
        text=True,
        timeout=180,
    )


@pytest.fixture
def outside(tmp_path, monkeypatch):
    """A working directory that is not the checkout, with no GPUBENCH_* settings."""
    for name in list(os.environ):
        if name.startswith("GPUBENCH_"):
            monkeypatch.delenv(name)
    work = tmp_path / "elsewhere"
    work.mkdir()
    assert ROOT not in work.parents
    return work


# --- --help, --version ----------------------------------------------------------------------------


@pytest.mark.parametrize("path", EVERY, ids=[" ".join(p) for p in EVERY])
def test_help_exits_0_on_every_subcommand(path, outside):
    code, out, err = run_outside(outside, [*path, "--help"])
    assert code == exitcodes.OK, err
    assert out.startswith("usage:"), out[:200]


def test_payload_help_exits_0_through_the_real_entry_point(outside):
    done = gpubench(outside, "payload", "--help")
    assert done.returncode == exitcodes.OK, done.stderr
    assert "run" in done.stdout and "list" in done.stdout


def test_version_comes_from_the_package_metadata(outside):
    done = gpubench(outside, "--version")
    assert done.returncode == exitcodes.OK, done.stderr
    assert done.stdout.strip() == f"gpubench {version('gpubench')}"


# --- one meaning per flag -------------------------------------------------------------------------


@pytest.mark.parametrize("path, parser", LEAVES, ids=[" ".join(p) for p, _ in LEAVES])
def test_results_is_always_the_bucket_and_table_always_the_table(path, parser):
    results, table = _option(parser, "--results"), _option(parser, "--table")
    if results is not None:
        assert "bucket" in (results.help or "").lower(), (path, results.help)
        assert not re.search(r"\btable\b", results.help or ""), (path, results.help)
    assert (table is not None) == (path in TABLE_COMMANDS), path
    if table is not None:
        assert "results table" in table.help and "GPUBENCH_TABLE" in table.help, (path, table.help)


@pytest.mark.parametrize("path, parser", LEAVES, ids=[" ".join(p) for p, _ in LEAVES])
def test_every_exit_code_a_help_names_is_in_the_table(path, parser):
    text = parser.format_help()
    lines = text[text.lower().index("exit code") :] if "exit code" in text.lower() else ""
    named = {int(n) for n in re.findall(r"(?<![\w.$/-])(\d{1,3})(?= [a-z(])", lines)}
    named |= {int(n) for n in re.findall(r"\bexits? (\d+)\b", text)}
    assert named <= set(exitcodes.TABLE), (path, sorted(named - set(exitcodes.TABLE)))


def test_collect_out_is_refused_naming_table(outside):
    code, _, err = run_outside(outside, ["collect", "--results", "results", "--out", "somewhere"])
    assert code == exitcodes.USAGE
    assert "--table somewhere" in err and not (outside / "somewhere").exists()


def test_plan_and_preview_refuse_results_as_the_table(outside):
    for argv in (["plan", "aws-g4dn-1x", "--results", "x"], ["preview", "aws-g4dn-1x", "--results", "x"]):
        code, _, err = run_outside(outside, argv)
        assert code == exitcodes.USAGE and "--results" in err, argv


def _collect_here(workdir: Path, env_table: str | None = None) -> None:
    """Collect a small synthetic bucket (runs of aws-g4dn-1x) with every location left to its default."""
    from payload.storage import open_store

    store = open_store(str(workdir / "results"))
    for i in range(3):
        r = make_result("aws/g4dn.xlarge", "resnet50", samples_per_second=100.0 + i, hourly_usd=0.526, repeat=i)
        store.put_bytes(result_key(r), result_bytes(r))
    code, _, err = run_outside(workdir, ["collect", "--spot-history", "off"])
    assert code == exitcodes.OK, err


def _measured(plan_doc: dict) -> list[str]:
    return [e["source"] for s in plan_doc["stacks"] for e in s["estimated_cost"]]


def test_table_defaults_to_the_current_directory_for_every_command(outside):
    _collect_here(outside)  # ./results -> ./table
    assert (outside / "table" / "results.parquet").is_file()
    code, out, err = run_outside(outside, ["plan", "aws-g4dn-1x", "--json"])
    assert code == exitcodes.OK, err
    plan_doc = json.loads(out)
    sources = _measured(plan_doc)
    assert sources and all("table" in s for s in sources), sources
    code, out, err = run_outside(outside, ["preview", "aws-g4dn-1x", "--json"])
    assert code == exitcodes.OK, err
    plan_costs = {e["benchmark"]: e for e in plan_doc["stacks"][0]["estimated_cost"]}
    preview_costs = {e["benchmark"]: e for e in json.loads(out)["estimated_cost"]}
    assert preview_costs["resnet50"]["source"].startswith("measured") and preview_costs["resnet50"]["runs"] == 3
    for name, estimate in preview_costs.items():  # plan and preview read the same table, and agree
        assert (estimate["source"], estimate["usd"]) == (plan_costs[name]["source"], plan_costs[name]["usd"]), name
    code, out, err = run_outside(outside, ["report"])  # ./table -> ./report/index.html
    assert code == exitcodes.OK, err
    assert (outside / "report" / "index.html").is_file()
    assert not (outside / "report" / "results.parquet").exists()  # the table stays in ./table


def test_gpubench_table_names_the_table_for_readers(outside, monkeypatch, tmp_path):
    _collect_here(outside)
    other = tmp_path / "other-dir"
    other.mkdir()
    monkeypatch.setenv("GPUBENCH_TABLE", str(outside / "table"))
    code, out, err = run_outside(other, ["plan", "aws-g4dn-1x", "--json"])
    assert code == exitcodes.OK, err
    assert any(str(outside / "table") in s for s in _measured(json.loads(out)))
    code, out, err = run_outside(other, ["plan", "aws-g4dn-1x", "--table", str(other), "--json"])
    assert code == exitcodes.OK and not any(str(outside) in s for s in _measured(json.loads(out)))


# --- globs ------------------------------------------------------------------------------------------


GLOBS = [("plan", "aws-g4dn-*"), ("plan", "gcp-t4-?x")]


@pytest.mark.parametrize("command, pattern", GLOBS)
def test_plan_expands_globs_over_the_shipped_stacks(command, pattern, outside):
    code, out, err = run_outside(outside, [command, pattern, "--json"])
    assert code == exitcodes.OK, err
    expected = sorted(fnmatch.filter(known_stacks(), pattern))
    assert expected and sorted(s["stack"] for s in json.loads(out)["stacks"]) == expected


def test_preview_expands_globs_like_plan(outside):
    pattern = "aws-g4dn-1x*"
    code, out, err = run_outside(outside, ["preview", pattern, "--json"])
    assert code == exitcodes.OK, err
    assert sorted(d["stack"] for d in json.loads(out)) == sorted(fnmatch.filter(known_stacks(), pattern))


# A glob that matches nothing is a usage error naming it, for every command that takes stacks.
NO_MATCH = [
    ["plan", "aws-zzz-*"],
    ["preview", "aws-zzz-*"],
    ["up", "aws-zzz-*", "--yes"],
    ["destroy", "aws-zzz-*", "--yes"],
    ["teardown", "aws-zzz-*", "--yes"],
    ["campaign", "up", "aws-zzz-*", "--results", "r"],
]


@pytest.mark.parametrize("argv", NO_MATCH, ids=lambda a: " ".join(a))
def test_a_glob_matching_nothing_is_named(argv, outside):
    code, _, err = run_outside(outside, argv)
    assert code == exitcodes.USAGE, err
    assert "aws-zzz-*" in err


# --- exit codes -----------------------------------------------------------------------------------


def test_campaign_wait_time_out_is_interrupted():
    from analysis.campaign.cli import _wait_result
    from analysis.campaign.commands import WaitOutcome

    class Manifest:
        campaign_id = "c1"
        data = {"results": "s3://bucket/x"}

    args = argparse.Namespace(json=False, results=None, project_dir=None)
    with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()) as err:
        code = _wait_result(Manifest(), WaitOutcome(False, [], []), args)
    assert code == exitcodes.INTERRUPTED and "wait c1 --results s3://bucket/x" in err.getvalue()


@pytest.fixture
def no_clouds(tmp_path):
    """PATH without the Pulumi CLI and no credentials of either cloud."""
    home = tmp_path / "home"
    home.mkdir()
    return {
        "PATH": "/usr/bin:/bin",
        "HOME": str(home),
        "AWS_CONFIG_FILE": os.devnull,
        "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
        "AWS_ACCESS_KEY_ID": None,
        "AWS_SECRET_ACCESS_KEY": None,
        "AWS_SESSION_TOKEN": None,
        "AWS_PROFILE": None,
        "GOOGLE_APPLICATION_CREDENTIALS": str(home / "none.json"),
        "CLOUDSDK_CONFIG": str(home / "gcloud"),
    }


def _with_aws(env: dict, tmp_path: Path) -> dict:
    """A `pulumi` on PATH and AWS keys in the environment: AWS is ready, GCP is not."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "pulumi").write_text("#!/bin/sh\necho v3.0.0\n")
    (bin_dir / "pulumi").chmod(0o755)
    return {**env, "PATH": f"{bin_dir}:/usr/bin:/bin", "AWS_ACCESS_KEY_ID": "AKIA0", "AWS_SECRET_ACCESS_KEY": "x"}


def test_check_exits_by_what_was_asked(outside, no_clouds, tmp_path):
    aws_ready = _with_aws(no_clouds, tmp_path)
    cases = [  # (env, argv, exit code)
        (no_clouds, ["check"], exitcodes.MISSING),  # no cloud at all is ready
        (no_clouds, ["check", "analysis"], exitcodes.OK),  # the extra asked for is installed
        (no_clouds, ["check", "awz"], exitcodes.USAGE),
        (aws_ready, ["check"], exitcodes.OK),  # one cloud ready is enough when none is named
        (aws_ready, ["check", "aws", "--offline"], exitcodes.OK),  # named without --offline: API calls
        (aws_ready, ["check", "aws", "gcp", "--offline"], exitcodes.MISSING),
    ]
    for env, argv, code in cases:
        done = gpubench(outside, *argv, env=env)
        assert done.returncode == code, (argv, done.stdout, done.stderr)
        assert "Traceback" not in done.stderr
    assert "not ready for gcp" in done.stderr


# --- offers ---------------------------------------------------------------------------------------


def test_offers_says_how_many_retired_offerings_it_hid(outside):
    code, out, err = run_outside(outside, ["offers", "--gpu", "V100", "--json"])
    shown = {r["id"] for r in json.loads(out)}
    code_all, out_all, _ = run_outside(outside, ["offers", "--gpu", "V100", "--retired", "--json"])
    every = {r["id"] for r in json.loads(out_all)}
    hidden = every - shown
    assert code == code_all == exitcodes.OK and hidden  # the P3s
    assert f"{len(hidden)} retired offering(s) hidden" in err and "--retired" in err


def test_offerings_is_an_alias_of_offers_with_a_notice(outside):
    code, out, err = run_outside(outside, ["offerings", "--gpu", "T4:1", "--json"])
    assert code == exitcodes.OK, err
    assert "`gpubench offerings` is now `gpubench offers --retired`" in err
    _, offers_out, offers_err = run_outside(outside, ["offers", "--gpu", "T4:1", "--retired", "--json"])
    assert json.loads(out) == json.loads(offers_out)
    stale = [line for line in offers_err.splitlines() if line.startswith("warning: the newest catalog price")]
    assert stale == [line for line in err.splitlines() if line.startswith("warning: the newest catalog price")]


def test_offerings_is_not_listed_in_the_help():
    (sub,) = subcommands(PARSER)
    listed = {a.dest for a in sub._choices_actions}
    assert "offers" in listed and "offerings" not in listed


# --- completion -----------------------------------------------------------------------------------


def _complete(workdir: Path, line: str, tmp_path: Path) -> list[str]:
    target = tmp_path / f"completions-{abs(hash(line))}.txt"
    env = {
        "_ARGCOMPLETE": "1",
        "_ARGCOMPLETE_STDOUT_FILENAME": str(target),
        "COMP_LINE": line,
        "COMP_POINT": str(len(line)),
    }
    done = gpubench(workdir, env=env)
    assert done.returncode == 0, done.stderr
    return target.read_text().split("\013")


def test_completion_of_subcommands_and_stack_names(outside, tmp_path):
    subcommands = _complete(outside, "gpubench pr", tmp_path)
    assert {s.strip() for s in subcommands} == {"predict", "preview", "prices"}
    stacks = {s.strip() for s in _complete(outside, "gpubench plan aws-g4dn-1", tmp_path)}
    assert stacks == {n for n in known_stacks() if n.startswith("aws-g4dn-1")}


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_script_for_each_shell(shell, outside):
    code, out, err = run_outside(outside, ["completion", shell])
    assert code == exitcodes.OK, err
    assert "gpubench" in out and "_ARGCOMPLETE" in out


# --- progress -------------------------------------------------------------------------------------


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_shows_the_time_left_on_a_terminal_only(monkeypatch):
    from analysis.progress import OFF_ENV, Progress

    monkeypatch.delenv(OFF_ENV, raising=False)
    screen = Terminal()
    with Progress(4, "probes", unit="probe", stream=screen) as bar:
        for _ in range(4):
            bar.advance()
        bar.note("last")  # redraws at once (tqdm otherwise redraws at most every 0.1 s)
    assert "4/4" in screen.getvalue() and "<" in screen.getvalue()  # tqdm's elapsed<left
    piped = io.StringIO()
    with Progress(4, "probes", stream=piped) as bar:
        bar.advance(4)
        bar.write("a line")
    assert piped.getvalue() == "a line\n"  # no bar when not a terminal; lines still print
    monkeypatch.setenv(OFF_ENV, "1")
    quiet = Terminal()
    with Progress(4, "probes", stream=quiet) as bar:
        bar.advance(4)
    assert quiet.getvalue() == ""


def test_demo_progress_follows_its_numbered_steps(monkeypatch, tmp_path):
    import analysis.demo as demo
    from analysis.progress import OFF_ENV

    monkeypatch.delenv(OFF_ENV, raising=False)
    out, screen = io.StringIO(), Terminal()
    monkeypatch.setattr(sys, "stderr", screen)  # the bar's terminal
    bars = []  # the terminal as each benchmark starts, and as the collect does: tqdm's line is last
    monkeypatch.setattr(demo, "study_jobs", lambda: ())
    monkeypatch.setattr(demo, "run_step", lambda argv, log, echo: bars.append(screen.getvalue()) or 0)
    monkeypatch.setattr(demo, "collect_step", lambda results, table, echo: bars.append(screen.getvalue()) or 0)
    monkeypatch.setattr(demo, "write_report", lambda out_dir, table, echo: 0)
    assert demo.run_demo(str(tmp_path / "results"), str(tmp_path / "report"), quick=True, stream=out) == 0
    steps = [line for line in out.getvalue().splitlines() if line.startswith("[")]
    assert steps[:2] == [f"[{i}/2] {step.benchmark}: {step.why}" for i, step in enumerate(demo.QUICK, 1)]
    assert steps[2].startswith("[collect] ") and steps[3].startswith("[report] ")
    done = [re.findall(r"(\S+)/2 \[", bar)[-1] for bar in bars]
    assert [float(d) for d in done] == [0, 1, 2] and "mnist-mlp" in bars[0] and "benchmark" in bars[0]
