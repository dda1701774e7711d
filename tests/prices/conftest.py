"""Fixtures for the live-price tests: a throw-away copy of the catalog data
(so no test touches the shipped snapshots) and scrubbed cloud credentials."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import infra.catalog  # noqa: E402


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    """A copy of infra/catalog/data that load_catalog() (and so `cost`,
    `offerings` and `prices`) uses for the test."""
    copy = tmp_path / "data"
    shutil.copytree(infra.catalog.DATA_DIR, copy)
    monkeypatch.setattr(infra.catalog, "DATA_DIR", copy)
    monkeypatch.delenv("GPUBENCH_PRICES_DIR", raising=False)
    infra.catalog.load_catalog.cache_clear()
    yield copy
    infra.catalog.load_catalog.cache_clear()


@pytest.fixture
def no_credentials(tmp_path, monkeypatch):
    """No AWS or Google credentials anywhere, and no metadata server lookups."""
    for var in (
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "GOOGLE_API_KEY",
        "AWS_ENDPOINT_URL",
    ):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path / "no-gcloud"))
    from google.auth.compute_engine import _metadata

    monkeypatch.setattr(_metadata, "_NO_GCE_CHECK", True)  # off GCE: do not probe 169.254.169.254
