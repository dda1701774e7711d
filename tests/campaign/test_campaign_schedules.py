"""Recurring campaigns: the schedule file format and the ready-made runners in schedules/campaign/
agree on the cron time and run `python -m analysis campaign run --schedule FILE`."""

from __future__ import annotations

import configparser
import re
import shlex
import subprocess
from pathlib import Path

import pytest
import yaml
from servers import find_tool

ROOT = Path(__file__).resolve().parents[2]
DIR = ROOT / "schedules" / "campaign"
EXAMPLE = DIR / "weekly-spot.yaml"
EXAMPLE_REL = "schedules/campaign/weekly-spot.yaml"


def require_tool(name: str) -> str:
    """Path of a system tool (servers.find_tool: skip when missing, FAIL under CI=true)."""
    return find_tool(name, f"apt-get install {name}; .ci/run installs it")


def campaign_commands(text: str) -> list[list[str]]:
    """Every `-m analysis campaign ...` invocation, shell variables resolved the way the runners set them."""
    found = []
    for m in re.finditer(r"-m analysis (campaign [^;&|\n]*)", text):
        argv = [a for a in shlex.split(m.group(1)) if not a.startswith("${")]  # optional extra args
        found.append([EXAMPLE_REL if "$" in a else a for a in argv])
    return found


def test_example_schedule_loads():
    from analysis.campaign.schedule import load

    sch = load(EXAMPLE)
    assert sch.cron == "0 6 * * 1" and sch.stacks and sch.results.startswith("s3://")
    assert sch.poll == 300 and sch.timeout == 8 * 3600


@pytest.mark.parametrize(
    "doc,match",
    [
        ({"cron": "0 6 * *", "stacks": ["a"], "results": "s3://b"}, "5 fields"),
        ({"cron": "0 25 * * 1", "stacks": ["a"], "results": "s3://b"}, "outside 0..23"),
        ({"cron": "0 6 * * 1", "results": "s3://b"}, "stacks is required"),
        ({"cron": "0 6 * * 1", "stacks": ["a"], "results": "s3://b", "concurrncy": 2}, "unknown key"),
        ({"cron": "0 6 * * 1", "stacks": ["a"], "results": "s3://b", "timeout": "soon"}, "not a duration"),
    ],
)
def test_bad_schedule_files_name_the_problem(tmp_path, doc, match):
    from analysis.campaign.schedule import ScheduleError, load

    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(ScheduleError, match=match):
        load(path)


@pytest.mark.parametrize(
    "cron,calendar",
    [
        ("0 6 * * 1", "Mon *-*-* 06:00:00 UTC"),
        ("30 2 1 * *", "*-*-01 02:30:00 UTC"),
        ("0 */6 * * *", "*-*-* 00/6:00:00 UTC"),
        ("15 9 * * mon-fri", "Mon..Fri *-*-* 09:15:00 UTC"),
        ("0 6 * * */2", "Sun,Tue,Thu,Sat *-*-* 06:00:00 UTC"),
        ("0 6 * * 1-5/2", "Mon,Wed,Fri *-*-* 06:00:00 UTC"),
    ],
)
def test_cron_to_systemd_oncalendar(cron, calendar):
    from analysis.campaign.schedule import to_oncalendar

    assert to_oncalendar(cron) == calendar


def test_runners_share_the_schedule_and_call_campaign_run():
    from analysis.campaign.schedule import load, to_oncalendar
    from analysis.cli import build_parser as parser

    cron = load(EXAMPLE).cron
    timer = configparser.ConfigParser(strict=False, interpolation=None)
    timer.optionxform = str
    timer.read(DIR / "gpubench-campaign.timer")
    assert timer["Timer"]["OnCalendar"] == to_oncalendar(cron)
    assert timer["Timer"]["Unit"] == "gpubench-campaign.service"
    workflow = yaml.safe_load((DIR / "campaign.yml").read_text())
    assert workflow[True]["schedule"] == [{"cron": cron}]  # YAML 1.1 reads `on:` as True
    cronjob = [d for d in yaml.safe_load_all((DIR / "cronjob.yaml").read_text()) if d["kind"] == "CronJob"][0]
    assert cronjob["spec"]["schedule"] == cron and cronjob["spec"]["concurrencyPolicy"] == "Forbid"
    for name in ("run.sh", "campaign.yml", "cronjob.yaml"):
        argvs = campaign_commands((DIR / name).read_text())
        assert argvs, f"{name} does not call python -m analysis campaign"
        for argv in argvs:
            args = parser().parse_args(argv)
            assert args.campaign_command == "run" and callable(args.func)
    service = (DIR / "gpubench-campaign.service").read_text()
    assert "schedules/campaign/run.sh" in service and "weekly-spot.yaml" in service


def test_schedule_command_prints_the_oncalendar(capsys):
    from analysis.cli import main

    assert main(["campaign", "schedule", str(EXAMPLE), "--json"]) == 0
    assert '"systemd_oncalendar": "Mon *-*-* 06:00:00 UTC"' in capsys.readouterr().out


def test_systemd_units_verify(tmp_path):
    tool = require_tool("systemd-analyze")
    for name in ("gpubench-campaign.service", "gpubench-campaign.timer"):
        text = (DIR / name).read_text().replace("%h/gpubench", str(ROOT)).replace("%h", str(tmp_path))
        (tmp_path / name).write_text(text)
    proc = subprocess.run(
        [tool, "verify", str(tmp_path / "gpubench-campaign.timer"), str(tmp_path / "gpubench-campaign.service")],
        capture_output=True,
        text=True,
    )
    problems = [ln for ln in proc.stderr.splitlines() if "gpubench-campaign" in ln and "Documentation" not in ln]
    assert not problems, proc.stderr


def test_run_sh_passes_shellcheck():
    tool = require_tool("shellcheck")
    proc = subprocess.run([tool, str(DIR / "run.sh")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout
