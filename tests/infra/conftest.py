"""Shared fixtures for the infra tests: the catalog and every stack in stacks/ rendered once under mocks.

Rendering the whole matrix costs about 12 s of CPU, so it happens once per test session with a
fixed `now` (deadlines and inputs reproducible): the first xdist worker that needs it renders and
pickles it beside the workers' temp dirs, the others load that copy (tests/shared_once.py).
"""

from __future__ import annotations

import pytest
from infra_matrix import NOW, STACK_NAMES
from shared_once import once_per_session

from infra import stacks as stackfiles


@pytest.fixture(scope="session")
def catalog():
    from infra.catalog import load_catalog

    return load_catalog()


@pytest.fixture(scope="session")
def rendered(catalog, tmp_path_factory):
    """stack name -> Rendered, for every stack file (rendered once for all the session's workers)."""
    from infra.render import render

    def render_all() -> dict:
        return {name: render(name, stackfiles.load_config(name), catalog, now=NOW) for name in STACK_NAMES}

    return once_per_session(tmp_path_factory, "rendered-stacks", render_all)


def pytest_configure(config):
    # The provider SDKs warn about their own deprecated resources when their modules load.
    for module in ("pulumi_aws", "pulumi_gcp"):
        config.addinivalue_line("filterwarnings", f"ignore::DeprecationWarning:{module}.*")
