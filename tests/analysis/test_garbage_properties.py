"""Property-based: generated garbage fed to every parser of untrusted input gets that parser's own error, nothing else.

Result files come from buckets others can write to, stack files from hands, tags from whatever else runs in the
account: each parser must answer with its documented error type (which the commands turn into a message and an
exit code), never a stray TypeError or OverflowError that would surface as a traceback or stop a sweep.
"""

from __future__ import annotations

import copy
import json
from datetime import datetime, timezone

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from synthetic_results import make_result

from analysis.collect.validation import parse
from infra import clouds, sweep, tags
from infra.config import ConfigError, parse_config
from payload.schema import ResultValidationError, validate_result

NOW = datetime(2024, 5, 1, 12, 0, tzinfo=timezone.utc)
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=20,
)
anything = json_values | st.binary(max_size=30) | st.floats() | st.tuples(st.integers())
deadline_like = st.one_of(
    st.text(max_size=40),
    st.from_regex(r"\A[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(Z|[+-][0-9]{2}:[0-9]{2})?\Z"),
    st.from_regex(r"\A[0-9]{8}[tT][0-9]{6}([._][0-9]+)?[zZ]\Z"),
    st.from_regex(r"\A[0-9]{1,6}-[0-9]{1,3}-[0-9]{1,3}T[0-9:.]{0,12}[+-][0-9]{2}:?[0-9]{2}\Z"),
)


@SETTINGS
@given(deadline_like)
def test_parse_deadline_returns_utc_or_raises_bad_deadline(text):
    try:
        value = tags.parse_deadline(text)
    except tags.BadDeadline as exc:
        assert "expected RFC 3339" in str(exc)
    else:
        assert value.tzinfo is not None and value.utcoffset().total_seconds() == 0


@SETTINGS
@given(name=st.sampled_from(clouds.NAMES), text=deadline_like | anything)
def test_is_launcher_deadline_is_a_plain_bool(name, text):
    cloud = clouds.get(name)
    ours = cloud.is_launcher_deadline(text)
    assert ours in (True, False)
    if ours:  # the launcher's shape: parses, or is refused as a deadline; never anything else
        try:
            tags.parse_deadline(text)
        except tags.BadDeadline:
            pass


PROJECT_KEY = "project-mark"  # any key: the owner says which one this deployment writes


@SETTINGS
@given(
    name=st.sampled_from(clouds.NAMES),
    labels=st.dictionaries(st.text(max_size=25), anything, max_size=5),
    expires=deadline_like | anything,
    stacked=st.booleans(),
    stack=st.sampled_from(["s", "aws-g4dn-1x", "gcp-t4-1x-spot", "recurring-aws-g4dn-1x", "prod-database-NOT-OURS"]),
    project=st.sampled_from([None, "gpubench", "someone-else"]),
)
def test_sweep_classify_always_gives_a_verdict(name, labels, expires, stacked, stack, project):
    cloud = clouds.get(name)
    labels = {**labels, cloud.EXPIRES_TAG: expires} | ({cloud.STACK_TAG: stack} if stacked else {})
    if project is not None:
        labels[PROJECT_KEY] = project
    owner = sweep.Owner(name, cloud.STACK_TAG, PROJECT_KEY, "gpubench")
    verdict, reason = sweep.classify(
        labels,
        NOW,
        owner=owner,
        expires_key=cloud.EXPIRES_TAG,
        is_launcher_deadline=cloud.is_launcher_deadline,
    )
    assert verdict in ("expired", "kept", "left-alone") and reason
    if verdict != "left-alone":  # ours: the launcher's deadline, a stack tag and this project's mark, all three
        assert cloud.is_launcher_deadline(labels[cloud.EXPIRES_TAG]) and labels.get(cloud.STACK_TAG)
        assert labels.get(PROJECT_KEY) == "gpubench" and sweep.ownership(labels, owner) is None


@SETTINGS
@given(st.binary(max_size=200))
def test_parse_result_on_random_bytes(data):
    with pytest.raises(ValueError):
        parse(data, source="file:///x", key="runs/s/r/result.json", etag=None)


GOOD = make_result("aws/p3.2xlarge", "resnet50", repeat=0, hourly_usd=3.06, train_seconds=600)


def _paths(doc, prefix=()):
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield (*prefix, k)
            yield from _paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield (*prefix, i)
            yield from _paths(v, (*prefix, i))


PATHS = list(_paths(GOOD))


def _with_field(path: tuple, value) -> dict:
    """A copy of GOOD with the field at `path` replaced by `value` (bytes as latin-1 text)."""
    doc = copy.deepcopy(GOOD)
    target = doc
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value.decode("latin-1") if isinstance(value, bytes) else value
    return doc


@SETTINGS
@given(path=st.sampled_from(PATHS), value=anything)
def test_parse_result_on_a_valid_result_with_one_field_replaced(path, value):
    """A real result with one field turned into garbage: a row or ValueError, never another exception."""
    doc = _with_field(path, value)
    try:
        data = json.dumps(doc, allow_nan=True).encode()
    except (TypeError, ValueError):
        return
    try:
        row, _ = parse(data, source="file:///x", key="runs/s/r/result.json", etag=None)
    except ValueError:
        return
    assert row["run_id"] == doc["run_id"]


@SETTINGS
@given(json_values)
def test_validate_result_raises_only_its_own_error(doc):
    with pytest.raises(ResultValidationError):
        validate_result(doc)


config_keys = st.sampled_from(
    [
        "gpubench:offering",
        "gpubench:market",
        "gpubench:maxHours",
        "gpubench:suite",
        "gpubench:epochs",
        "gpubench:steps",
        "gpubench:params",
        "gpubench:results",
        "gpubench:sshAllowFrom",
        "gpubench:image",
        "gpubench:stackType",
        "gpubench:gpus",
        "gpubench:rootGb",
        "aws:region",
        "gcp:zone",
        "gpubench:provider",
    ]
) | st.text(max_size=20)


@SETTINGS
@given(st.dictionaries(config_keys, anything, max_size=6) | anything)
def test_parse_config_raises_only_config_error(raw):
    try:
        parse_config(raw, "aws-p3-8x")
    except ConfigError as exc:
        assert str(exc)


@SETTINGS
@given(st.dictionaries(config_keys, anything, max_size=6))
def test_parse_config_with_an_offering_raises_only_config_error(raw):
    try:
        parse_config({"gpubench:offering": "aws/p3.8xlarge", **raw}, "aws-p3-8x")
    except ConfigError as exc:
        assert str(exc)


@SETTINGS
@given(path=st.sampled_from(PATHS), value=anything)
def test_the_quick_schema_check_takes_any_value_and_agrees_with_the_reasons(path, value):
    """collect trusts is_valid's yes and asks validate_result why for a no: neither raises anything
    else on garbage, and a yes has no reason against it but a non-finite number (the rows check those)."""
    from payload.schema import ResultValidationError, is_valid, non_finite, validate_result

    doc = _with_field(path, value)
    accepted = is_valid(doc)
    try:
        validate_result(doc)
        reasons = []
    except ResultValidationError as exc:
        reasons = exc.problems
    assert reasons == non_finite(doc) if accepted else reasons
