"""One object can only set itself aside: a result whose value the table cannot hold, or a run
directory named outside the slugs, never stops a collect or blocks the ones after it."""

from __future__ import annotations

import json

import pytest
from synthetic_results import make_result, result_key

from analysis.collect import collect
from payload.schema import ResultValidationError, validate_result

INT64_MAX = 2**63 - 1


def _result(repeat: int) -> dict:
    return make_result("aws/p3.2xlarge", "resnet50", repeat=repeat, hourly_usd=3.06, train_seconds=600)


def _write(root, result: dict) -> str:
    key = result_key(result)
    path = root / key
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result))
    return key


def _reasons(summary) -> dict[str, str]:
    return {s["key"]: s["reason"] for s in summary.skipped}


@pytest.mark.parametrize(
    ("block", "field", "value"),
    [
        ("metrics", "samples_trained", 10**300),  # what GPUBENCH_METRICS {"samples": 1e300} became
        ("metrics", "epochs_completed", 2**63),
        ("hardware", "gpu_count", 2**64),
        ("metrics", "samples_trained", 1e300),  # a float the schema's "integer" accepts (its fraction is 0)
        ("price", "hourly_usd", 10**400),  # a number no float holds
    ],
    ids=["1e300-digits", "2**63", "2**64", "float-1e300", "1e400-digits"],
)
def test_a_number_the_table_cannot_hold_sets_only_its_result_aside(tmp_path, block, field, value):
    root, table = tmp_path / "results", tmp_path / "table"
    good, bad = _result(0), _result(1)
    bad[block][field] = value
    _write(root, good)
    bad_key = _write(root, bad)
    for full in (False, False, True):  # and every collect after it
        summary, rows = collect([str(root)], table, full=full)
        assert [r["run_id"] for r in rows] == [good["run_id"]]
        assert _reasons(summary)[bad_key].startswith("invalid: " + f"{block}/{field}")


def test_the_schema_bounds_every_number_to_what_the_table_stores():
    """The payload validates with the same schema before it writes: nothing it writes is one collect refuses."""
    doc = _result(0)
    doc["metrics"]["samples_trained"] = INT64_MAX
    validate_result(doc)
    doc["metrics"]["samples_trained"] = INT64_MAX + 1
    with pytest.raises(ResultValidationError, match="samples_trained"):
        validate_result(doc)
    doc = _result(0)
    doc["timeline"].append({"time": doc["finished_at"], "event": "spot_price", "hourly_usd": 10**400})
    with pytest.raises(ResultValidationError, match="timeline/.*greater than the maximum"):
        validate_result(doc)


def test_a_value_the_schema_passes_but_the_table_cannot_store_is_set_aside_alone(tmp_path):
    """The table's own conversion is the last gate: a row that fails it is set aside with why, the rest commit."""
    root, table = tmp_path / "results", tmp_path / "table"
    good, odd = _result(0), _result(1)
    odd["error"] = "x\ud800y"  # valid JSON (an escaped lone surrogate), not Unicode text
    _write(root, good)
    odd_key = _write(root, odd)
    for full in (False, False, True):
        summary, rows = collect([str(root)], table, full=full)
        assert [r["run_id"] for r in rows] == [good["run_id"]]
        assert _reasons(summary)[odd_key].startswith("unstorable: UnicodeEncodeError")


def test_rows_that_convert_apart_but_not_together_are_all_stored_exactly(tmp_path):
    """An integer near 2**63 beside a row without one: stored exactly, not rounded through a float column."""
    root, table = tmp_path / "results", tmp_path / "table"
    big, none = _result(0), _result(1)
    big["metrics"]["samples_trained"] = INT64_MAX
    _write(root, big)
    _write(root, none)
    summary, rows = collect([str(root)], table)
    assert not summary.skipped
    assert {r["run_id"]: r["samples_trained"] for r in rows} == {big["run_id"]: INT64_MAX, none["run_id"]: None}


@pytest.mark.parametrize(
    "odd", ["runs/local/bad<x/events.jsonl", "runs/bad<s/r1/log-tail.txt", "runs/b\x1b[2Jd/r/x.txt"]
)
def test_a_run_directory_named_outside_the_slugs_is_set_aside_as_listed(tmp_path, odd):
    root, table = tmp_path / "results", tmp_path / "table"
    good = _result(0)
    _write(root, good)
    path = root / odd
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("x")
    for _ in range(2):
        summary, rows = collect([str(root)], table)
        assert [r["run_id"] for r in rows] == [good["run_id"]]
        assert any(k.startswith(odd.rsplit("/", 1)[0]) for k in _reasons(summary)), summary.skipped


def test_names_that_are_not_text_are_set_aside_every_time_not_listed(tmp_path):
    """A local results directory may hold names that are not UTF-8: no key, manifest entry or cell can hold them."""
    import os

    root, table = tmp_path / "results", tmp_path / "table"
    good = _result(0)
    key = _write(root, good)
    run_dir = os.fsencode(root / key).rsplit(b"/", 1)[0]
    for odd in (os.fsencode(root) + b"/runs/s\xff/r/result.json", run_dir + b"/notes\xfe.txt"):
        os.makedirs(os.path.dirname(odd), exist_ok=True)
        with open(odd, "wb") as f:
            f.write(json.dumps(good).encode())
    for full in (False, False, True):
        summary, rows = collect([str(root)], table, full=full)
        assert [r["run_id"] for r in rows] == [good["run_id"]]
        odd_keys = sorted(k for k, why in _reasons(summary).items() if why.startswith("unreadable name: not UTF-8"))
        assert odd_keys == [key.rsplit("/", 1)[0] + "/notes\\xfe.txt", "runs/s\\xff"]


def test_a_value_a_row_cannot_be_made_from_sets_only_its_result_aside(monkeypatch, tmp_path):
    """Whatever making a row raises is that result's reason, kept by the manifest (not read again and again)."""
    from analysis.collect import validation

    root, table = tmp_path / "results", tmp_path / "table"
    good, odd = _result(0), _result(1)
    _write(root, good)
    odd_key = _write(root, odd)
    make = validation.result_to_row

    def fussy(result, **kw):
        if result["run_id"] == odd["run_id"]:
            raise OverflowError("date value out of range")
        return make(result, **kw)

    monkeypatch.setattr(validation, "result_to_row", fussy)
    summary, rows = collect([str(root)], table)
    assert [r["run_id"] for r in rows] == [good["run_id"]]
    assert _reasons(summary)[odd_key] == "invalid: OverflowError: date value out of range"
    summary, _ = collect([str(root)], table)
    assert summary.new == 0 and _reasons(summary)[odd_key].startswith("invalid: OverflowError")


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"[" * 100_000 + b"]" * 100_000, "corrupt: nested too deeply"),
        (b'{"a":' * 5000 + b"1" + b"}" * 5000, "corrupt: nested too deeply"),
        (b'{"run_id": "r", "stack": "s", "benchmark": "b", "batch_size": 1e400}', "unknown schema: cannot migrate"),
    ],
    ids=["arrays", "objects", "v0-infinite-batch"],
)
def test_a_document_no_parser_or_migration_can_read_is_set_aside_and_not_read_again(tmp_path, data, reason):
    root, table = tmp_path / "results", tmp_path / "table"
    good = _result(0)
    _write(root, good)
    odd_key = "runs/aws-p3-2x/odd/result.json"
    (root / odd_key).parent.mkdir(parents=True)
    (root / odd_key).write_bytes(data)
    summary, rows = collect([str(root)], table)
    assert [r["run_id"] for r in rows] == [good["run_id"]]
    assert _reasons(summary)[odd_key].startswith(reason)
    summary, _ = collect([str(root)], table)
    assert summary.new == 0 and _reasons(summary)[odd_key].startswith(reason)  # kept by the manifest


def test_a_bucket_stack_named_outside_the_slugs_is_set_aside_every_time(s3_bucket, tmp_path):
    """On a bucket a stack is stamped by its journal: a stack no writer can name has none, and is no error."""
    from payload.storage import open_store

    url = f"s3://{s3_bucket}/gpubench"
    store = open_store(url)
    good = _result(0)
    store.put_bytes(result_key(good), json.dumps(good).encode())
    store.put_bytes("runs/bad<s/r1/log-tail.txt", b"x")
    for _ in range(2):  # the second collect checks the settled stacks by their journal
        summary, rows = collect([url], tmp_path / "table")
        assert [r["run_id"] for r in rows] == [good["run_id"]]
        assert _reasons(summary)["runs/bad<s/r1/"].startswith("partial run: no result.json")


def _typed_nodes(node, path="#"):
    """(path, schema node) of every node of the result schema that types a value."""
    if isinstance(node, dict):
        if "type" in node:
            yield path, node
        for k, v in node.items():
            yield from _typed_nodes(v, f"{path}/{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _typed_nodes(v, f"{path}/{i}")


def test_every_number_the_schema_types_is_bounded_by_what_the_table_stores():
    """One definition of the bounds, the table's own types': a field added without them fails here."""
    import numpy as np

    from payload.schema import load_schema

    schema = load_schema()
    bounds = schema["$defs"]
    assert (bounds["int64"]["minimum"], bounds["int64"]["maximum"]) == (
        int(np.iinfo(np.int64).min),
        int(np.iinfo(np.int64).max),
    )
    assert (bounds["float64"]["minimum"], bounds["float64"]["maximum"]) == (
        float(np.finfo(np.float64).min),
        float(np.finfo(np.float64).max),
    )
    unbounded = []
    for path, node in _typed_nodes(schema):
        types = node["type"] if isinstance(node["type"], list) else [node["type"]]
        wanted = "#/$defs/int64" if "integer" in types else "#/$defs/float64" if "number" in types else None
        if wanted is not None and node.get("$ref") != wanted:
            unbounded.append(path)
    assert not unbounded, f"numbers without the table's bounds ($ref #/$defs/int64 or float64): {unbounded}"
