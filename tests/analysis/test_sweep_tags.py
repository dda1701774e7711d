"""The tag contract: one definition per cloud (infra/<cloud>/__init__.py), read by the sweeper and teardown."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

from infra import clouds, tags

WHEN = datetime(2024, 5, 1, 12, 0, 7, tzinfo=timezone.utc)


@pytest.mark.parametrize(
    "text",
    [
        "2024-05-01T12:00:07Z",
        "2024-05-01T12:00:07+00:00",
        "2024-05-01T14:00:07+02:00",
        "20240501t120007z",
        "20240501T120007Z",
        "2024-05-01T12:00:07",
    ],
)
def test_parse_deadline_forms(text):
    assert tags.parse_deadline(text) == WHEN


@pytest.mark.parametrize("text", ["", "soon", "2024-13-01T00:00:00Z", "2024-05-01T25:00:00Z"])
def test_bad_deadline_names_the_value_and_the_forms(text):
    with pytest.raises(tags.BadDeadline, match="2024-05-01T12:00:00Z"):
        tags.parse_deadline(text)


@pytest.mark.parametrize("name", clouds.NAMES)
def test_each_cloud_writes_a_deadline_the_sweeper_reads(name):
    cloud = clouds.get(name)
    written = cloud.deadline_tag("2024-05-01T12:00:07Z")  # what the component stores from time:Offset
    assert tags.parse_deadline(written) == WHEN
    assert cloud.is_launcher_deadline(written)
    assert not cloud.is_launcher_deadline("2024-05-01")


@pytest.mark.parametrize("name", clouds.NAMES)
def test_each_cloud_tags_every_key(name):
    cloud = clouds.get(name)
    written = cloud.tags({k: "v" for k in tags.TAG_KEYS})
    assert cloud.STACK_TAG in written and cloud.EXPIRES_TAG in written
    assert len(written) == len(tags.TAG_KEYS)


def test_gcp_label_values_survive_their_own_encoding():
    gcp = clouds.get("gcp")
    label = gcp.deadline_tag("2024-05-01T12:00:07Z")
    assert gcp.label_value(label) == label
    assert gcp.label_value("gcp/n1-standard-8+1xV100") == "gcp_n1-standard-8_1xv100"


@pytest.mark.parametrize("name", clouds.NAMES)
def test_outputs_match_the_pulumi_program(name):
    text = (Path(__file__).resolve().parents[2] / "infra" / name / "component.py").read_text()
    assert f'"{tags.DEADLINE_OUTPUTS[0]}":' in text and f'"{tags.RESULTS_URL_OUTPUT}":' in text


def test_deadline_schedule_prefix_matches_the_pulumi_program():
    from infra.aws import DEADLINE_SCHEDULE_PREFIX

    text = (Path(__file__).resolve().parents[2] / "infra" / "aws" / "component.py").read_text()
    assert f'"{DEADLINE_SCHEDULE_PREFIX.rstrip("-")}",' in text
