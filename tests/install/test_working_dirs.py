"""The working-directory rule: what gpubench writes for you goes under one per-user state directory
($GPUBENCH_HOME, else ~/.gpubench), from a checkout and a packaged install alike; `--project-dir DIR`
keeps the layout under DIR; benches an older version kept in the checkout are still found in place.
Also: the project's Pulumi program, the code bundle's sources, and `check`'s list of extras."""

from __future__ import annotations

import json
import os
import sys
import tomllib
from pathlib import Path

import pytest

import infra.projectfiles as projectfiles
import infra.stacks  # noqa: F401 - STACKS_DIR is set at import: before a test fakes the checkout
from analysis.bench.record import BENCH_ROOT, BenchRecord, bench_dirs, bench_root, legacy_bench_root
from analysis.campaign.commands import campaign_report_dir
from analysis.cli import main
from payload import exitcodes
from payload.storage import open_store
from payload.timestamps import iso
from payload.userdirs import HOME_ENV, user_dir

ROOT = Path(__file__).resolve().parents[2]
STACK = "local-b00aa"


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    """A state home of the test's own, and a checkout with no old benches (nothing of the real one is read)."""
    checkout = tmp_path / "checkout"
    (checkout / "stacks").mkdir(parents=True)
    (checkout / "Pulumi.yaml").write_text("name: gpubench\n")
    monkeypatch.setattr(projectfiles, "CHECKOUT", checkout)
    monkeypatch.setenv(HOME_ENV, str(tmp_path / "home"))
    return tmp_path / "home"


def write_bench(root: Path, bench_id: str, results: Path, log: str | None = None) -> BenchRecord:
    """A bench record with one live probe of this machine, and (with `log`) that probe's log tail."""
    record = BenchRecord.create(root / bench_id, bench_id, "task.yaml", str(results))
    record.update(STACK, kind="local", offering="local/this-machine", market="on-demand", state="launched")
    record.update(STACK, up_started_at=iso(), suite=["workload-job"], results=str(results))
    if log is not None:
        open_store(str(results)).put_bytes(f"runs/{STACK}/20261125T100000Z-local-1/log-tail.txt", log.encode())
    return record


def test_the_state_home_is_gpubench_home_else_dot_gpubench_in_the_users_home(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    monkeypatch.delenv(HOME_ENV, raising=False)
    assert user_dir("state") == tmp_path / "user" / ".gpubench"
    monkeypatch.setenv(HOME_ENV, "")
    assert user_dir("state") == tmp_path / "user" / ".gpubench"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(HOME_ENV, "state")
    assert user_dir("state") == tmp_path / "state"  # relative: to the current directory, recorded absolute


def test_bench_workspaces_go_to_the_state_home_unless_a_project_dir_is_given(home, tmp_path):
    assert bench_root() == home / "bench"
    assert bench_root(tmp_path / "project") == tmp_path / "project" / ".gpubench" / "bench"
    assert campaign_report_dir("c1") == home / "report" / "campaigns" / "c1"
    assert campaign_report_dir("c1", tmp_path / "project") == tmp_path / "project" / "report" / "campaigns" / "c1"


def test_status_and_logs_read_the_state_home_and_the_checkouts_old_benches(home, tmp_path, capsys):
    results = tmp_path / "results"
    old = write_bench(projectfiles.CHECKOUT / BENCH_ROOT, "20261101T000000Z-0001", results)
    new = write_bench(home / "bench", "20261125T000000Z-0002", results, log="step 1\n")
    assert legacy_bench_root() == projectfiles.CHECKOUT / BENCH_ROOT
    assert bench_dirs() == [old.path.parent, new.path.parent]  # oldest first, across both
    assert main(["status", "--json"]) == exitcodes.OK
    assert sorted(r["bench_id"] for r in json.loads(capsys.readouterr().out)) == [old.bench_id, new.bench_id]
    assert main(["logs", STACK]) == exitcodes.OK  # the bucket from the newest bench that recorded the stack
    assert capsys.readouterr().out == "step 1\n"
    assert (projectfiles.CHECKOUT / BENCH_ROOT / old.bench_id / "bench.json").is_file()  # read in place, not moved


def test_a_project_dir_limits_status_to_its_own_benches(home, tmp_path, capsys):
    write_bench(home / "bench", "20261125T000000Z-0002", tmp_path / "results")
    project = tmp_path / "project"
    assert main(["status", "--json", "--project-dir", str(project)]) == exitcodes.OK
    assert json.loads(capsys.readouterr().out) == []
    assert bench_dirs(project) == []


def test_the_old_checkout_folder_is_not_read_from_a_packaged_install(home, tmp_path, monkeypatch):
    write_bench(projectfiles.CHECKOUT / BENCH_ROOT, "20261101T000000Z-0001", tmp_path / "results")
    (projectfiles.CHECKOUT / "Pulumi.yaml").unlink()  # not a checkout: site-packages has no Pulumi.yaml
    assert legacy_bench_root() is None and bench_dirs() == []


def test_with_nothing_recorded_status_is_empty_and_logs_names_the_fix(home, monkeypatch, capsys):
    monkeypatch.delenv("GPUBENCH_RESULTS", raising=False)
    assert main(["status", "--json"]) == exitcodes.OK
    assert json.loads(capsys.readouterr().out) == []
    assert main(["logs", STACK]) == exitcodes.USAGE
    err = capsys.readouterr().err
    assert STACK in err and "--results" in err and "Traceback" not in err


def test_the_project_dir_is_the_project_files_pulumi_yaml(tmp_path):
    from infra.workspace import ProjectNotFound, project_dir

    assert project_dir() == projectfiles.project_root() and (project_dir() / "Pulumi.yaml").is_file()
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "Pulumi.yaml").write_text("name: x\n")
    assert project_dir(tmp_path / "a" / "b") == tmp_path  # an explicit start: the nearest above it
    with pytest.raises(ProjectNotFound, match="--project-dir"):
        project_dir(Path("/"))


def test_a_project_without_a_virtualenv_runs_its_program_with_this_interpreter(tmp_path, monkeypatch):
    import pulumi.automation as auto

    import infra.workspace as pulumi_ws

    packaged = "name: gpubench\nruntime:\n  name: python\n  options:\n    toolchain: pip\nmain: ../\n"
    (tmp_path / "Pulumi.yaml").write_text(packaged)
    env = pulumi_ws.program_env(tmp_path)
    assert env["PATH"].split(":")[0] == str(Path(sys.executable).parent)
    assert pulumi_ws.program_env(ROOT) == {}  # the checkout's Pulumi.yaml names its .venv
    seen = {}
    monkeypatch.setattr(pulumi_ws.shutil, "which", lambda name: "/usr/bin/pulumi")
    monkeypatch.setattr(auto, "create_or_select_stack", lambda **kw: seen.update(kw))
    pulumi_ws.PulumiWorkspace(tmp_path).select_stack("aws-g4dn-1x")
    assert seen["work_dir"] == str(tmp_path) and seen["opts"].env_vars == env


def test_the_code_bundle_reads_code_beside_the_packages_and_packaging_from_the_project_files(tmp_path):
    import shutil

    from infra.bundle import INCLUDE, PACKAGING, build_bundle, bundle_sources

    sources = bundle_sources()
    assert {sources[n].parent for n in PACKAGING} == {projectfiles.project_root()}
    assert sources["payload"] == ROOT / "payload"
    copy = tmp_path / "copy"
    for name in INCLUDE:
        source = ROOT / name
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, copy / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(source, copy / name)
    assert build_bundle(copy).data == build_bundle().data  # the same sources, the same bytes
    (copy / "pyproject.toml").unlink()
    with pytest.raises(FileNotFoundError, match="pyproject.toml"):
        build_bundle(copy)  # a host could not pip-install it


def test_check_knows_every_extra_in_pyproject(monkeypatch, capsys):
    import payload.extras
    from analysis.readiness import EXTRAS, NOT_CHECKED

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert set(EXTRAS) | set(NOT_CHECKED) == set(declared) and not set(EXTRAS) & set(NOT_CHECKED)
    installed = payload.extras.installed
    monkeypatch.setattr(payload.extras, "installed", lambda m: m != "deltalake" and installed(m))
    assert main(["check", "demo", "--json"]) == exitcodes.MISSING
    checks = {c["check"]: c for c in json.loads(capsys.readouterr().out)}
    assert "deltalake" in checks["extra [demo]"]["detail"] and "gpubench[demo]" in checks["extra [demo]"]["detail"]
    monkeypatch.setattr(payload.extras, "installed", lambda m: True)
    assert main(["check", "demo"]) == exitcodes.OK
    assert "gpubench demo" in capsys.readouterr().out  # what the extra is for


def test_up_runs_the_pulumi_cli_in_the_project_from_any_directory(tmp_path, monkeypatch):
    import infra.cli

    calls = []
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(infra.cli.shutil, "which", lambda name: "/opt/pulumi")
    monkeypatch.setattr(infra.cli.os, "execve", lambda exe, argv, env: calls.append((exe, argv, env, Path.cwd())))
    assert infra.cli.main(["up", "aws-g4dn-1x", "--yes"]) == exitcodes.OK
    ((exe, argv, env, cwd),) = calls
    assert argv == [exe, "up", "--stack", "aws-g4dn-1x", "--yes"] and cwd == projectfiles.project_root()
    assert env["PATH"] == os.environ["PATH"]  # the checkout's Pulumi.yaml names its .venv
