"""The suite keeps gpubench's per-user files out of the home directory of whoever runs it."""

from __future__ import annotations

from pathlib import Path

from analysis.collect.orchestrate import manifest_home
from analysis.dataset import resolve
from infra.ssh.connection import project_known_hosts
from payload.spool import default_spool_dir


def test_every_per_user_place_is_in_the_tests_own_folder(own_user_state):
    places = {
        "bucket table's manifest": manifest_home(resolve("s3://some-bucket/results-table")),
        "known_hosts": project_known_hosts(),
        "spool": default_spool_dir(),
    }
    for what, path in places.items():
        assert path.is_relative_to(own_user_state), f"{what} at {path}"
        assert not path.is_relative_to(Path.home()), f"{what} at {path}"
