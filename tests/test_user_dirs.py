"""One rule for every per-user folder: gpubench's own variable, else the XDG base directory, else ~."""

from __future__ import annotations

from analysis.collect.orchestrate import manifest_home
from analysis.dataset import resolve
from infra.ssh.connection import project_known_hosts
from payload.spool import default_spool_dir
from payload.workloads.jobvenv import envs_root


def test_without_gpubench_variables_every_folder_follows_xdg(tmp_path, monkeypatch):
    for name in ("GPUBENCH_CACHE", "GPUBENCH_SPOOL", "GPUBENCH_KNOWN_HOSTS", "GPUBENCH_JOB_ENVS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    cache = tmp_path / "cache" / "gpubench"
    assert manifest_home(resolve("s3://bucket/table")).parent == cache / "tables"
    assert envs_root() == cache / "envs"
    assert default_spool_dir() == cache / "spool"
    assert project_known_hosts() == tmp_path / "config" / "gpubench" / "known_hosts"
