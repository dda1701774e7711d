"""The suite keeps gpubench's per-user files out of the home directory of whoever runs it."""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis.collect.orchestrate import manifest_home
from analysis.dataset import resolve
from infra.ssh.connection import project_known_hosts
from payload.spool import default_spool_dir
from payload.workloads.jobvenv import envs_root


def test_every_per_user_place_is_in_the_tests_own_folder(own_user_state):
    places = {
        "bucket table's manifest": manifest_home(resolve("s3://some-bucket/results-table")),
        "known_hosts": project_known_hosts(),
        "spool": default_spool_dir(),
        "workloads' environments": envs_root(),
    }
    for what, path in places.items():
        assert path.is_relative_to(own_user_state), f"{what} at {path}"
        assert not path.is_relative_to(Path.home()), f"{what} at {path}"


@pytest.fixture(scope="module")
def known_hosts_of_a_module_fixture():
    """A module-scoped fixture is set up before any test's own folder exists."""
    return project_known_hosts()


def test_module_fixtures_keep_out_of_the_home_directory_too(known_hosts_of_a_module_fixture):
    assert not known_hosts_of_a_module_fixture.is_relative_to(Path.home())
