"""infra.ssh.session called as a library (what a launcher or a host probe calls), with typed
arguments: the stack settings, extra payload run options and the run against a loopback sshd."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from infra.catalog import load_catalog
from infra.ssh.config import parse_ssh_config
from infra.ssh.session import EXIT_CODES, load_stack, run_named_stack, run_ssh_stack, with_extra_options

# A stand-in for `python` on the host: answers the version probe, then prints its arguments
# like the payload's first line and exits with `code`.
FAKE_PYTHON = """#!/bin/sh
if [ "$1" = "-c" ]; then echo 3.11.0; exit 0; fi
echo "fake payload started: $*"
exit {code}
"""


def fake_python(tmp_path: Path, code: int = 0) -> str:
    path = tmp_path / f"fakepy-{code}"
    path.write_text(FAKE_PYTHON.format(code=code))
    path.chmod(0o755)
    return str(path)


def box(**keys):
    raw = {
        "gpubench:offering": "softlayer/bm-4xk80",
        "gpubench:host": "h",
        "gpubench:results": "gs://b",
        "gpubench:benchmark": ["resnet50"],
        **{f"gpubench:{k}": v for k, v in keys.items()},
    }
    return parse_ssh_config(raw, "ssh-box", load_catalog())


def test_extra_options_join_the_offering_options():
    cfg = box()
    merged = with_extra_options(cfg, {"seed": "7", "hourly_usd": "1.5"})
    assert merged.offering_options == {**cfg.offering_options, "seed": "7", "hourly_usd": "1.5"}
    assert with_extra_options(cfg, None) is cfg and with_extra_options(cfg, {}) is cfg


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("sede", ["'sede' is not a payload run option", "seed"]),
        ("epochs", ["'epochs' is set by the stack", "override the stack's 'epochs'"]),
        ("param", ["override the stack's 'params'"]),
        ("spool", ["the SSH runner sets it for every run"]),
    ],
)
def test_extra_options_that_cannot_apply_are_refused_by_name(name, words):
    with pytest.raises(ValueError) as err:
        with_extra_options(box(), {name: "1"})
    assert all(w in str(err.value) for w in words), str(err.value)


def test_a_refused_extra_option_is_a_config_status_before_any_connection():
    status, report = run_ssh_stack(box(), extra_options={"bogus": "1"}, progress=io.StringIO())
    assert status == "config" and EXIT_CODES[status] == 2
    assert report["stack"] == "ssh-box" and "'bogus' is not a payload run option" in report["message"]


def test_a_missing_stack_file_is_a_config_status(tmp_path):
    status, report = run_named_stack("ssh-nowhere", stacks_dir=tmp_path, progress=io.StringIO())
    assert status == "config" and report["stack"] == "ssh-nowhere" and "ssh-nowhere" in report["message"]


def test_check_only_reports_the_host_checks(ssh_stack, tmp_path):
    stack, stacks_dir = ssh_stack(remotePython=fake_python(tmp_path))
    progress = io.StringIO()
    status, report = run_ssh_stack(load_stack(stack, stacks_dir), check=True, progress=progress)
    assert status == "checked", report.get("message")
    assert {c["name"]: c["ok"] for c in report["checks"]}["python"] is True
    assert f"[ssh {stack}] host checks on" in progress.getvalue()
    assert report["run_id"] is None and not (tmp_path / "remote" / "runs" / stack).exists()


def test_a_run_with_extra_options_passes_them_to_the_payload_and_uploads(ssh_stack, tmp_path):
    stack, stacks_dir = ssh_stack(remotePython=fake_python(tmp_path))
    progress = io.StringIO()
    status, report = run_named_stack(
        stack, stacks_dir=stacks_dir, poll=0.2, extra_options={"seed": "7"}, progress=progress
    )
    assert status == "completed", report.get("message")
    assert report["exit_code"] == 0 and report["run_id"] and not report["attached"]
    assert report["results"] == f"file://{tmp_path / 'bucket'}/runs/{stack}/"
    assert f"run {report['run_id']}: completed; uploaded" in progress.getvalue()
    log = (tmp_path / "bucket" / "ssh" / stack / report["run_id"] / "log").read_text()  # the run's output
    started = next(line for line in log.splitlines() if "fake payload started:" in line)
    assert "--seed 7" in started and f"--stack {stack}" in started


def test_a_failing_payload_is_the_failed_status(ssh_stack, tmp_path):
    stack, stacks_dir = ssh_stack(remotePython=fake_python(tmp_path, code=2))
    status, report = run_named_stack(stack, stacks_dir=stacks_dir, poll=0.2, progress=io.StringIO())
    assert status == "failed" and report["exit_code"] == 2 and EXIT_CODES[status] == 1
