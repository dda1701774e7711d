"""The ready-made scheduled teardown jobs in schedules/: they parse, run the two commands, and
the sweeper's IAM policy grants exactly what the sweeper calls."""

from __future__ import annotations

import configparser
import json
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from servers import find_tool

from analysis.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
SCHEDULES = ROOT / "schedules"
EVERY_30_MIN = "*/30 * * * *"
SWEEP = "python -m analysis sweep --yes --provider aws"
TEARDOWN = "python -m analysis teardown --yes --expired"


def require_tool(name: str) -> str:
    """Path of a system tool (servers.find_tool: skip when missing, FAIL under CI=true)."""
    return find_tool(name, f"apt-get install {name}; .ci/run installs it")


def commands_in(text: str) -> list[list[str]]:
    """Every `python -m analysis ...` invocation in a text, as argv after `-m analysis`."""
    found = []
    for m in re.finditer(r"python -m analysis ([a-z]+[^;&|\n\"']*)", text):
        found.append(shlex.split(m.group(1)))
    return found


def assert_commands_parse(argvs: list[list[str]]) -> None:
    """The flags in the job files exist in the real CLI (catches typos)."""
    parser = build_parser()
    for argv in argvs:
        args = parser.parse_args(argv)
        assert callable(args.func), argv


# --- systemd


def unit(path: Path) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str  # keys are case-sensitive
    parser.read(path)
    return parser


def test_systemd_units_structure():
    service = unit(SCHEDULES / "systemd" / "gpubench-teardown.service")
    timer = unit(SCHEDULES / "systemd" / "gpubench-teardown.timer")
    assert service["Service"]["Type"] == "oneshot"
    assert service["Service"]["ExecStart"].endswith("/gpubench/schedules/run.sh")
    assert service["Unit"]["After"] == "network-online.target"
    assert timer["Timer"]["Unit"] == "gpubench-teardown.service"
    assert timer["Timer"]["OnCalendar"] == "*:0/30" and timer["Timer"]["Persistent"] == "true"
    assert timer["Install"]["WantedBy"] == "timers.target"


def test_systemd_units_verify(tmp_path):
    tool = require_tool("systemd-analyze")  # test_systemd_units_structure covers the structure without it
    for path in (SCHEDULES / "systemd").iterdir():
        shutil.copy(path, tmp_path / path.name)
    names = [str(tmp_path / n) for n in ("gpubench-teardown.service", "gpubench-teardown.timer")]
    proc = subprocess.run(
        [tool, "verify", *names],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "SYSTEMD_LOG_LEVEL": "warning"},
    )
    ours = [line for line in (proc.stdout + proc.stderr).splitlines() if "gpubench-teardown" in line]
    assert proc.returncode == 0 and not ours, proc.stdout + proc.stderr


# --- run.sh (what cron and systemd call)


@pytest.fixture
def fake_python(tmp_path):
    """A `python` that logs its argv and fails for the providers/commands listed in $FAIL_ON."""
    log = tmp_path / "calls.log"
    exe = tmp_path / "python"
    exe.write_text(
        '#!/bin/sh\necho "$*" >> "$CALLS"\nfor f in $FAIL_ON; do case "$*" in *"$f"*) exit 1;; esac; done\nexit 0\n'
    )
    exe.chmod(0o755)
    return exe, log


def run_job(fake_python, **env):
    exe, log = fake_python
    proc = subprocess.run(
        ["/bin/sh", str(SCHEDULES / "run.sh")],
        capture_output=True,
        text=True,
        timeout=30,
        env={"PATH": os.environ["PATH"], "PYTHON": str(exe), "CALLS": str(log), **env},
    )
    return proc.returncode, log.read_text().splitlines() if log.exists() else []


def test_run_sh_runs_sweep_then_teardown(fake_python):
    code, calls = run_job(fake_python)
    assert code == 0
    assert calls == ["-m analysis sweep --yes --provider aws", "-m analysis teardown --yes --expired"]


def test_run_sh_keeps_going_and_fails_when_one_step_fails(fake_python):
    code, calls = run_job(
        fake_python, FAIL_ON="sweep", GPUBENCH_SWEEP_PROVIDERS="aws gcp", GPUBENCH_TEARDOWN_ARGS="--completed --json"
    )
    assert code == 1
    assert calls == [
        "-m analysis sweep --yes --provider aws",
        "-m analysis sweep --yes --provider gcp",
        "-m analysis teardown --yes --expired --completed --json",
    ]
    code, _ = run_job(fake_python, FAIL_ON="teardown")
    assert code == 1


def test_run_sh_passes_shellcheck():
    tool = require_tool("shellcheck")
    proc = subprocess.run([tool, str(SCHEDULES / "run.sh")], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout


# --- cron


def test_cron_line():
    lines = [
        ln
        for ln in (SCHEDULES / "cron" / "gpubench.crontab").read_text().splitlines()
        if ln.strip() and not ln.startswith("#")
    ]
    assert len(lines) == 1
    fields = lines[0].split(None, 5)
    assert " ".join(fields[:5]) == EVERY_30_MIN
    assert fields[5].startswith("$HOME/gpubench/schedules/run.sh")


# --- GitHub Actions


def test_github_workflow_runs_both_commands():
    path = SCHEDULES / "github" / "teardown.yml"
    doc = yaml.safe_load(path.read_text())
    triggers = doc.get("on", doc.get(True))  # YAML 1.1 reads a bare `on` as true
    assert triggers["schedule"] == [{"cron": EVERY_30_MIN}] and "workflow_dispatch" in triggers
    steps = doc["jobs"]["teardown"]["steps"]
    runs = [s.get("run", "") for s in steps]
    sweep = next(i for i, r in enumerate(runs) if SWEEP in r)
    teardown = next(i for i, r in enumerate(runs) if TEARDOWN in r)
    assert sweep < teardown and "always()" in steps[teardown]["if"]
    assert doc["permissions"] == {"contents": "read", "id-token": "write"}
    assert_commands_parse(commands_in("\n".join(runs)))
    # a ready-made file to copy, not an active workflow of this repository
    assert not (ROOT / ".github" / "workflows" / "teardown.yml").exists()
    assert ".github/workflows" in path.read_text().splitlines()[1]


# --- Kubernetes


def test_cronjob_manifest():
    docs = list(yaml.safe_load_all((SCHEDULES / "kubernetes" / "cronjob.yaml").read_text()))
    assert [d["kind"] for d in docs] == ["Namespace", "ServiceAccount", "CronJob"]
    doc = docs[-1]
    assert (doc["apiVersion"], doc["kind"]) == ("batch/v1", "CronJob")
    spec = doc["spec"]
    assert spec["schedule"] == EVERY_30_MIN and spec["concurrencyPolicy"] == "Forbid"
    pod = spec["jobTemplate"]["spec"]["template"]["spec"]
    assert pod["restartPolicy"] == "Never"
    (container,) = pod["containers"]
    script = " ".join(container["command"] + container["args"])
    assert SWEEP in script and TEARDOWN in script
    assert script.index(SWEEP) < script.index(TEARDOWN)
    # the Secret reaches the job as read-only files, never as environment variables
    assert "envFrom" not in container
    (secret,) = [v for v in pod["volumes"] if "secret" in v]
    assert secret["secret"]["secretName"] == "gpubench-teardown"
    assert {"name": secret["name"], "mountPath": "/var/run/secrets/gpubench", "readOnly": True} in container[
        "volumeMounts"
    ]
    assert_commands_parse(commands_in(script))


def test_cron_and_systemd_commands_parse():
    text = (SCHEDULES / "run.sh").read_text().replace('"$PYTHON"', "python").replace('"$provider"', "aws")
    argvs = [[a for a in argv if not a.startswith("${")] for argv in commands_in(text)]
    assert [a[:1] for a in argvs] == [["sweep"], ["teardown"]]
    assert_commands_parse(argvs)


# --- IAM policy


SWEEPER_SOURCE = ROOT / "infra" / "aws" / "sweep.py"
EXPECTED_ACTIONS = {
    "ec2:DescribeInstances",
    "ec2:DescribeSecurityGroups",
    "ec2:TerminateInstances",
    "ec2:DeleteSecurityGroup",
    "scheduler:ListSchedules",
    "scheduler:GetSchedule",
    "scheduler:DeleteSchedule",
}


def _actions(statement) -> set[str]:
    action = statement["Action"]
    return {action} if isinstance(action, str) else set(action)


def test_aws_sweeper_policy_is_least_privilege():
    policy = json.loads((SCHEDULES / "aws-sweeper-policy.json").read_text())
    assert policy["Version"] == "2012-10-17"
    statements = policy["Statement"]
    assert all(s["Effect"] == "Allow" for s in statements)
    granted = set().union(*(_actions(s) for s in statements))
    assert granted == EXPECTED_ACTIONS
    assert not any("*" in a for a in granted)
    for s in statements:
        if _actions(s) & {"ec2:TerminateInstances", "ec2:DeleteSecurityGroup"}:
            # only this project's resources (gpubench:project = the default project id, a stack named
            # aws-* or recurring-aws-*), plus expires-at or, for recurring launches, max-hours: never a foreign instance
            ours = {
                "StringEquals": {"aws:ResourceTag/gpubench:project": "gpubench"},
                "StringLike": {"aws:ResourceTag/gpubench:stack": ["aws-*", "recurring-aws-*"]},
            }
            assert s["Condition"] in (
                {**ours, "Null": {"aws:ResourceTag/gpubench:expires-at": "false"}},
                {**ours, "Null": {"aws:ResourceTag/gpubench:max-hours": "false"}},
            ), s["Sid"]
            assert "max-hours" not in json.dumps(s) or _actions(s) == {"ec2:TerminateInstances"}
            assert s["Resource"] != "*"
        if _actions(s) & {"scheduler:DeleteSchedule"}:
            assert s["Resource"].endswith(":schedule/default/deadline-schedule-*")


def test_policy_covers_exactly_the_calls_the_sweeper_makes():
    """Map the boto3 calls in infra/aws/sweep.py to IAM actions and compare."""
    source = SWEEPER_SOURCE.read_text()
    calls = set(re.findall(r"\b(?:ec2|scheduler)\.([a-z_]+)\(", source))
    calls |= set(re.findall(r'_pages\((?:ec2|scheduler), "([a-z_]+)"', source))
    calls -= {"get_paginator", "get_waiter"}
    service = {
        "describe_instances": "ec2",
        "describe_security_groups": "ec2",
        "terminate_instances": "ec2",
        "delete_security_group": "ec2",
        "list_schedules": "scheduler",
        "get_schedule": "scheduler",
        "delete_schedule": "scheduler",
    }
    used = {f"{service[c]}:{''.join(p.title() for p in c.split('_'))}" for c in calls}
    # the instance_terminated waiter polls DescribeInstances
    assert "instance_terminated" in source and "ec2:DescribeInstances" in used
    assert used == EXPECTED_ACTIONS
