"""The emulator helpers themselves: CI=true turns a missing tool into a failure."""

from __future__ import annotations

import pytest
from servers import MetadataServer, find_tool, http_get


def test_missing_tool_fails_under_ci(monkeypatch):
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true"):
        find_tool("gpubench-no-such-tool")


def test_missing_tool_skips_locally(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception):
        find_tool("gpubench-no-such-tool")


def test_emulator_tools_are_found():
    assert find_tool("moto_server") and find_tool("gcp-storage-emulator")


def test_metadata_server_speaks_both_protocols():
    with MetadataServer() as md:
        assert http_get(md.endpoint + "/computeMetadata/v1/instance/id", {"Metadata-Flavor": "Google"}) == (
            200,
            md.gce_id,
        )
        assert http_get(md.endpoint + "/latest/meta-data/instance-id")[0] == 401
