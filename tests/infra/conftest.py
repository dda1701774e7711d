"""Shared fixtures for the infra tests: the catalog and every stack in stacks/ rendered once under mocks.

Rendering the whole matrix takes a few seconds, so it happens once per xdist worker
(session scope) with a fixed `now`, making deadlines and inputs reproducible.
"""

from __future__ import annotations

import pytest
from infra_matrix import NOW, STACK_NAMES

from infra import stacks as stackfiles


@pytest.fixture(scope="session")
def catalog():
    from infra.catalog import load_catalog

    return load_catalog()


@pytest.fixture(scope="session")
def rendered(catalog):
    """stack name -> Rendered, for every stack file."""
    from infra.render import render

    return {name: render(name, stackfiles.load_config(name), catalog, now=NOW) for name in STACK_NAMES}


def pytest_configure(config):
    # The provider SDKs warn about their own deprecated resources when their modules load.
    for module in ("pulumi_aws", "pulumi_gcp"):
        config.addinivalue_line("filterwarnings", f"ignore::DeprecationWarning:{module}.*")
