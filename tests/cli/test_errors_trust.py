"""Errors users can trust: every failure found by hand is a one-line message naming the bad value and
the fix, with a documented exit code (payload/exitcodes.py), and a typo is named as a typo before any
tool (the Pulumi CLI, a bucket) is looked for."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from analysis.cli import main
from analysis.options import NUMBER_BOUNDS
from infra.catalog import load_catalog
from payload import exitcodes
from payload.cli import main as payload_main
from payload.config import LOCAL_OFFERINGS, OFFERING_FORM
from payload.entrypoint import DEBUG_ENV

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def no_tools(monkeypatch, tmp_path):
    """No Pulumi CLI (nor any other tool) on PATH, no cloud settings, a scratch working directory."""
    for name in list(os.environ):
        if name.startswith(("AWS_", "GOOGLE_", "GPUBENCH_")):
            monkeypatch.delenv(name)
    (tmp_path / "bin").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(argv, capsys) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    assert "Traceback" not in err, err
    return code, out, err


def one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, err
    return lines[0]


# --- arguments are checked before any tool ---------------------------------------------------


@pytest.mark.parametrize("command", ["up", "destroy", "refresh", "teardown"])
def test_mistyped_stack_is_named_before_the_missing_pulumi_cli(command, no_tools, capsys):
    code, _, err = run([command, "aws-g4dn-1xx", "--yes"], capsys)
    line = one_error_line(err)
    assert code == exitcodes.USAGE
    assert "'aws-g4dn-1xx'" in line and "aws-g4dn-1x" in line.split("Did you mean:")[1]
    assert "Pulumi" not in err


def test_infra_entry_point_names_a_mistyped_stack_too(no_tools, capsys):
    from infra.cli import main as infra_main

    assert infra_main(["up", "aws-g4dn-1xx"]) == exitcodes.USAGE
    assert "Did you mean: aws-g4dn-1x" in capsys.readouterr().err


def test_a_glob_that_selects_many_stacks_is_refused_by_a_one_stack_command(no_tools, capsys):
    code, _, err = run(["up", "aws-g4dn-*", "--yes"], capsys)
    assert code == exitcodes.USAGE and "aws-g4dn-1x-spot" in one_error_line(err)


def test_a_known_stack_still_reaches_the_missing_cli(no_tools, capsys):
    code, _, err = run(["destroy", "aws-g4dn-1x", "--yes"], capsys)
    assert code == exitcodes.MISSING and "Pulumi CLI is not installed" in err


def test_teardown_expands_globs_before_the_missing_cli(no_tools, capsys):
    code, _, err = run(["teardown", "aws-g4dn-1x*", "--yes"], capsys)
    assert code == exitcodes.MISSING and "Pulumi CLI" in err  # the glob matched; then the tool was looked for


@pytest.mark.parametrize("results", [[], ["--results", "file:///nowhere"]])
def test_campaign_glob_matching_nothing_is_named_first(results, no_tools, capsys):
    code, _, err = run(["campaign", "up", "aws-zzz-*", *results], capsys)
    assert code == exitcodes.USAGE and "'aws-zzz-*' matches no stack" in one_error_line(err)


@pytest.mark.parametrize(
    "flag, value, close",
    [
        ("--gpu", "T44", "T4"),
        ("--gpu", "A100-40GB", "A100"),  # A100-80GB is a catalog GPU now
        ("--region", "us-eats-1", "us-east-1"),
        ("--provider", "awz", "aws"),
    ],
)
def test_offers_names_an_unknown_filter_value_and_the_closest(flag, value, close, no_tools, capsys):
    code, _, err = run(["offers", flag, value], capsys)
    line = one_error_line(err)
    assert code == exitcodes.USAGE
    assert f"{flag} {value!r}" in line and close in line.split("Did you mean:")[1]


def test_offers_accepts_a_provider_in_any_case(no_tools, capsys):
    code, out, _ = run(["offers", "--provider", "AWS", "--gpu", "t4:1", "--json"], capsys)
    assert code == exitcodes.OK and '"aws/' in out


# --- numbers: a sane maximum, a warning when large --------------------------------------------


@pytest.mark.parametrize("hours", ["1e308", "1e9"])
def test_cost_refuses_hours_above_ten_years(hours, no_tools, capsys):
    code, out, err = run(["cost", "aws-g4dn-1x", "--hours", hours], capsys)
    assert code == exitcodes.USAGE and "--hours" in one_error_line(err) and out == ""


def test_cost_warns_about_hours_above_a_year_and_prices_them(no_tools, capsys):
    hours = NUMBER_BOUNDS["hours"].warn_above * 2
    code, out, err = run(["cost", "aws-g4dn-1x", "--hours", str(hours)], capsys)
    assert code == exitcodes.OK and "warning: --hours" in err and "cost:" in out


# --- data, pipes, Ctrl-C and bugs --------------------------------------------------------------


def test_report_over_a_garbage_table_is_data_refused(no_tools, capsys):
    (no_tools / "g").mkdir()
    (no_tools / "g" / "results.parquet").write_bytes(b"garbage\n")
    code, _, err = run(["report", "--table", "g"], capsys)
    line = one_error_line(err)
    assert code == exitcodes.INVALID and "results.parquet" in line and "gpubench collect" in line


def test_an_unexpected_error_is_one_line_naming_its_type(no_tools, capsys, monkeypatch):
    import analysis.commands.stacks as stacks_command

    def broken(args):
        raise RuntimeError("boom")

    monkeypatch.setattr(stacks_command, "run", broken)
    code, _, err = run(["stacks", "--list"], capsys)
    assert code == exitcodes.FAILED
    assert "unexpected RuntimeError" in one_error_line(err) and DEBUG_ENV in err

    monkeypatch.setenv(DEBUG_ENV, "1")  # asked for: the traceback too
    assert main(["stacks", "--list"]) == exitcodes.FAILED
    assert "Traceback" in capsys.readouterr().err


def _subprocess_env() -> dict:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def test_infra_preview_piped_to_head_ends_quietly(tmp_path):
    shell = f"'{sys.executable}' -m infra preview aws-g4dn-1x 2>stderr.txt | head -n 0; echo ${{PIPESTATUS[0]}} >rc.txt"
    subprocess.run(["bash", "-c", shell], cwd=tmp_path, env=_subprocess_env(), timeout=180, check=True)
    assert (tmp_path / "stderr.txt").read_text() == ""
    assert int((tmp_path / "rc.txt").read_text()) == exitcodes.OK


def test_ctrl_c_is_a_short_message_and_130_within_a_second(tmp_path):
    script = textwrap.dedent(
        """
        import sys, time
        import analysis.commands.stacks as command
        from analysis.cli import main
        def slow(args):
            print("ready", flush=True)
            time.sleep(60)
        command.run = slow
        sys.exit(main(["stacks", "--list"]))
        """
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        env=_subprocess_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout.readline().strip() == "ready"
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=10)
    assert time.monotonic() - sent < 1.0
    assert proc.returncode == exitcodes.CANCELLED and "cancelled" in err and "Traceback" not in err


# --- payload offering ids ----------------------------------------------------------------------


def test_payload_knows_exactly_the_catalogs_local_offerings():
    catalog = load_catalog()
    assert sorted(LOCAL_OFFERINGS) == sorted(o.id for o in catalog.offerings() if o.provider == "local")
    assert [o.id for o in catalog.offerings() if not OFFERING_FORM.match(o.id)] == []


@pytest.mark.parametrize(
    "offering, says",
    [("local/this-machin", "local/this-machine"), ("aws p3", "PROVIDER/NAME"), ("/x", "PROVIDER/NAME")],
)
def test_payload_run_refuses_an_offering_it_can_tell_is_wrong_and_records_nothing(offering, says, tmp_path, capsys):
    results = tmp_path / "results"
    argv = ["run", "--offering", offering, "--stack", "s", "--benchmark", "mnist-mlp", "--results", str(results)]
    assert payload_main(argv) == exitcodes.USAGE
    assert says in capsys.readouterr().err
    assert not results.exists()


def test_gpubench_payload_run_checks_the_offering_against_the_catalog(no_tools, capsys):
    argv = ["payload", "run", "--offering=aws/p3.8xlarg", "--stack", "s", "--benchmark", "mnist-mlp"]
    code, _, err = run([*argv, "--results", str(no_tools / "results")], capsys)
    assert code == exitcodes.USAGE and "aws/p3.8xlarge" in one_error_line(err)
    assert not (no_tools / "results").exists()


def test_debug_flag_shows_the_traceback_of_a_bug(no_tools, capsys, monkeypatch):
    import analysis.commands.stacks as stacks_command

    monkeypatch.setattr(stacks_command, "run", lambda args: 1 / 0)
    assert main(["--debug", "stacks", "--list"]) == exitcodes.FAILED
    err = capsys.readouterr().err
    assert "Traceback" in err and "unexpected ZeroDivisionError" in err


def test_debug_is_read_from_the_parsed_arguments(no_tools, capsys, monkeypatch):
    """argparse accepts `--deb` for `--debug`: the flag is read from what argparse parsed, not from the raw words."""
    import analysis.commands.stacks as stacks_command

    monkeypatch.setattr(stacks_command, "run", lambda args: 1 / 0)
    assert main(["--deb", "stacks", "--list"]) == exitcodes.FAILED
    assert "Traceback" in capsys.readouterr().err
    monkeypatch.setattr(stacks_command, "run", lambda args: 1 / 0)
    assert main(["stacks", "--list"]) == exitcodes.FAILED
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.parametrize("entry", ["infra", "payload"])
def test_other_entry_points_turn_a_bug_into_one_line(entry, monkeypatch, capsys):
    import infra.cli
    import payload.cli

    def broken(args):
        raise RuntimeError("boom")

    if entry == "infra":
        monkeypatch.setattr(infra.cli, "cmd_stacks", broken)  # looked up when the parser is built
        code = infra.cli.main(["stacks", "--check"])
    else:
        monkeypatch.setitem(payload.cli.COMMANDS, "list", broken)
        code = payload.cli.main(["list"])
    err = capsys.readouterr().err
    assert code == exitcodes.FAILED and "unexpected RuntimeError" in err and "Traceback" not in err


# --- one error path: an error carries its exit code, one handler shows it ---------------------


def test_an_error_carries_its_exit_code_and_is_shown_whole_and_safe(capsys):
    """Outside any safe_terminal too: what a bucket or a job wrote into a message cannot drive the terminal."""
    from payload.entrypoint import guarded

    def fail():
        raise exitcodes.GpubenchError("object \x1b]52;c;aGk=\x07 unreadable\n  fix: read it again", exit_code=4)

    assert guarded(fail, prog="t") == exitcodes.REMOTE
    assert capsys.readouterr().err == "error: object \\x1b]52;c;aGk=\\x07 unreadable\n  fix: read it again\n"


@pytest.mark.parametrize(
    "error, code",
    [
        ("payload.storage:StorageError", exitcodes.REMOTE),
        ("infra.workspace:PulumiMissing", exitcodes.MISSING),
        ("payload.exitcodes:Declined", exitcodes.DECLINED),
        ("analysis.campaign.manifest:ManifestInvalid", exitcodes.INVALID),
    ],
)
def test_every_entry_point_gives_an_error_the_same_code_and_message(error, code, monkeypatch, capsys):
    import importlib

    import analysis.commands.stacks as stacks_command
    import infra.cli
    import payload.cli

    module, name = error.split(":")
    cls = getattr(importlib.import_module(module), name)
    exc = cls() if name == "PulumiMissing" else cls("the bucket said no")

    def broken(args):
        raise exc

    monkeypatch.setattr(stacks_command, "run", broken)
    monkeypatch.setattr(infra.cli, "cmd_stacks", broken)
    monkeypatch.setitem(payload.cli.COMMANDS, "list", broken)
    seen = []
    for entry in (
        lambda: main(["stacks", "--list"]),
        lambda: infra.cli.main(["stacks"]),
        lambda: payload_main(["list"]),
    ):
        seen.append((entry(), capsys.readouterr().err))
    assert seen == [(code, f"error: {exc}\n")] * 3


def test_no_command_prints_its_own_error_and_returns_a_code():
    """A command fails by raising; printing `error:` and returning a code is the boundary's job alone."""
    files = [*sorted((ROOT / "analysis" / "commands").glob("*.py")), ROOT / "infra" / "cli.py"]
    files.append(ROOT / "analysis" / "campaign" / "cli.py")
    found = []
    for path in files:
        lines = path.read_text().splitlines()
        for i, line in enumerate(lines):
            if "error: " in line and any(s.strip().startswith("return exitcodes.") for s in lines[i : i + 6]):
                found.append(f"{path.relative_to(ROOT)}:{i + 1}")
    assert found == []
