"""analysis.tags must read exactly what the Pulumi program writes (infra/launch.py, infra/*.py outputs)."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from analysis import tags

WHEN = datetime(2024, 5, 1, 12, 0, 7, tzinfo=timezone.utc)


@pytest.mark.parametrize("text", ["2024-05-01T12:00:07Z", "2024-05-01T12:00:07+00:00", "2024-05-01T14:00:07+02:00",
                                  "20240501t120007z", "20240501T120007Z", "2024-05-01T12:00:07"])
def test_parse_deadline_forms(text):
    assert tags.parse_deadline(text) == WHEN


@pytest.mark.parametrize("text", ["", "soon", "2024-13-01T00:00:00Z", "2024-05-01T25:00:00Z"])
def test_bad_deadline_names_the_value_and_the_forms(text):
    with pytest.raises(tags.BadDeadline, match="2024-05-01T12:00:00Z"):
        tags.parse_deadline(text)


def test_round_trips():
    assert tags.parse_deadline(tags.aws_tag_deadline(WHEN)) == WHEN
    assert tags.parse_deadline(tags.gcp_label_deadline(WHEN)) == WHEN


def test_matches_the_pulumi_program():
    launch = pytest.importorskip("infra.launch", reason="infra/launch.py not present")
    assert tuple(launch.TAG_KEYS) == tags.TAG_KEYS
    aws = launch.aws_tags({k: "v" for k in launch.TAG_KEYS})
    assert tags.AWS_EXPIRES_TAG in aws and tags.AWS_STACK_TAG in aws
    gcp = launch.gcp_labels({k: "v" for k in launch.TAG_KEYS})
    assert tags.GCP_EXPIRES_LABEL in gcp and tags.GCP_STACK_LABEL in gcp
    rfc3339 = "2024-05-01T12:00:07Z"
    assert tags.parse_deadline(launch.gcp_deadline_label(rfc3339)) == WHEN
    assert launch.gcp_deadline_label(rfc3339) == tags.gcp_label_deadline(WHEN)
    assert launch.gcp_label_value(tags.gcp_label_deadline(WHEN)) == tags.gcp_label_deadline(WHEN)


def test_outputs_match_the_pulumi_program():
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "infra"
    for name in ("aws.py", "gcp.py"):
        path = root / name
        if not path.exists():
            pytest.skip(f"infra/{name} not present")
        text = path.read_text()
        assert f'"{tags.DEADLINE_OUTPUTS[0]}":' in text and f'"{tags.RESULTS_URL_OUTPUT}":' in text, name


def test_deadline_schedule_prefix_matches_the_pulumi_program():
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "infra" / "aws.py"
    if not path.exists():
        pytest.skip("infra/aws.py not present")
    assert f'"{tags.DEADLINE_SCHEDULE_PREFIX.rstrip("-")}",' in path.read_text()
