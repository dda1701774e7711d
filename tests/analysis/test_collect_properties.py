"""Property-based: whatever a bucket holds, a collect finishes, every result is either a row of the
table or set aside with a reason, and the table stays whole, through the real Delta Lake writer.

The documents are real results with fields replaced by extreme or wrong-typed numbers, odd text or
nothing at all; the keys are generated stack and run names (any character a file name may hold).
Few examples, so the suite stays fast: each one is a collect into a new table, and a second one."""

from __future__ import annotations

import copy
import json
import math
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from synthetic_results import make_result, result_key

from analysis.collect import collect
from analysis.collect.validation import parse
from analysis.dataset import open_dataset
from analysis.dataset.location import resolve
from analysis.dataset.stackwise import commit
from analysis.dataset.store import delta_table

GOOD = make_result("aws/p3.2xlarge", "resnet50", repeat=0, hourly_usd=3.06, train_seconds=600)
DELETE = object()  # a mutation that removes the field

integers = st.integers(min_value=-(2**70), max_value=2**70) | st.sampled_from(
    [2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 2**64, 10**300, 10**400, 0, -1]
)
numbers = st.one_of(
    integers,
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([1e300, -0.0, 5e-324, 1.7976931348623157e308, math.nan, math.inf, 2.0**63, 1e18]),
)
odd_text = st.text(max_size=12) | st.sampled_from(["\ud800", "\x1b[2J\x1b]52;c;aGk=\x07", "", "1e400", "‮gpu", "a\x00b"])
values = numbers | odd_text | st.booleans() | st.none() | st.lists(numbers, max_size=2) | st.just(DELETE)


def _paths(doc, prefix=()):
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield (*prefix, k)
            yield from _paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield (*prefix, i)
            yield from _paths(v, (*prefix, i))


def _at(doc, path):
    for part in path:
        doc = doc[part]
    return doc


def _like(value):
    """Values of the same kind as `value`, at their extremes: what passes the schema and may still not fit."""
    if isinstance(value, bool):
        return st.booleans()
    if isinstance(value, int):
        return integers
    if isinstance(value, float):
        return numbers
    if isinstance(value, str):
        return odd_text
    if value is None:
        return numbers | odd_text
    return values


PATHS = list(_paths(GOOD))
# mostly a value of the field's own kind (the schema may pass it), else anything at all
mutation = st.sampled_from(PATHS).flatmap(
    lambda p: st.tuples(st.just(p), st.one_of(_like(_at(GOOD, p)), _like(_at(GOOD, p)), values))
)
mutations = st.lists(mutation, max_size=3)
# any character a file name on this system can hold, slugs, and the names the payload writes
name = st.one_of(
    st.text(st.characters(exclude_categories=("Cs",), exclude_characters="/\x00"), min_size=1, max_size=16),
    st.from_regex(r"\A[A-Za-z0-9][A-Za-z0-9._-]{0,15}\Z"),
    st.sampled_from(["aws-p3-2x", "local", "r1", "20180208T090000Z-i-1-resnet50"]),
).filter(lambda s: s not in (".", "..") and ".." not in s)


def _mutated(changes, stack: str, run_id: str, matches: bool) -> dict:
    doc = copy.deepcopy(GOOD)
    if matches:  # where it claims to be: judged on its values, not set aside as misplaced
        doc["stack"], doc["run_id"] = stack, run_id
    for path, value in changes:
        target = doc
        try:
            for part in path[:-1]:
                target = target[part]
            if value is DELETE:
                del target[path[-1]]
            else:
                target[path[-1]] = value
        except (KeyError, IndexError, TypeError):  # an earlier change removed or replaced its parent
            continue
    return doc


documents = st.lists(st.tuples(mutations, name, name, st.booleans()), min_size=1, max_size=4)
strays = st.lists(st.tuples(name, name, name), max_size=2)  # files that are not results, anywhere
SETTINGS = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
COLLECTS = settings(SETTINGS, max_examples=8)  # two collects each: about a second a few examples


@COLLECTS
@given(docs=documents, stray=strays)
def test_whatever_a_bucket_holds_every_result_is_a_row_or_set_aside_and_the_table_stays_whole(docs, stray):
    with tempfile.TemporaryDirectory() as tmp:
        root, table = Path(tmp) / "results", Path(tmp) / "table"
        written = {_write(root, result_key(GOOD), json.dumps(GOOD))}
        for changes, stack, run_id, matches in docs:
            key = f"runs/{stack}/{run_id}/result.json"
            written.add(_write(root, key, json.dumps(_mutated(changes, stack, run_id, matches), allow_nan=True)))
        for stack, run_id, file in stray:
            _write(root, f"runs/{stack}/{run_id}/{file}", "x")
        for _ in range(2):  # the collect after it reads the manifest, the settled stacks, the table
            summary, rows = collect([str(root)], table)
            stored = {r["key"] for r in rows}
            set_aside = {s["key"] for s in summary.skipped}
            assert result_key(GOOD) in stored
            assert written <= stored | set_aside, written - stored - set_aside
            assert all(s["reason"] for s in summary.skipped)
            assert open_dataset(str(table)).count_rows() == summary.valid == len(rows)


def _write(root: Path, key: str, text: str) -> str:
    path = root / key
    if path.is_dir():  # a generated run id that is also another run's file name: skip it
        return result_key(GOOD)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, errors="surrogatepass")
    return key


@SETTINGS
@given(docs=st.lists(st.tuples(mutations, st.booleans()), min_size=1, max_size=8))
def test_every_row_a_result_makes_is_stored_exactly_or_set_aside_by_the_delta_writer(docs):
    """Rows straight into the real Delta writer: each one stored with the values it had, or refused with why."""
    rows = []
    for i, (changes, matches) in enumerate(docs):
        doc = _mutated(changes, GOOD["stack"], f"r{i}", matches)
        try:
            data = json.dumps(doc, allow_nan=True).encode()
            row, _ = parse(data, source="s", key=f"runs/{doc.get('stack')}/r{i}/result.json", etag=str(i))
        except (ValueError, TypeError):  # set aside before any row is made
            continue
        rows.append(row)
    with tempfile.TemporaryDirectory() as tmp:
        loc = resolve(tmp)
        written, refused = commit(loc, rows, [], False, "identity")
        assert written == bool(len(rows) - len(refused))
        assert all(why.startswith("unstorable: ") for _, why in refused)
        got = {}
        if delta_table(loc) is not None:
            got = {r["key"]: r for r in open_dataset(tmp).to_table().to_pylist()}
        kept = [r for r in rows if all(r is not bad for bad, _ in refused)]
        assert set(got) == {r["key"] for r in kept}
        for r in kept:
            for column in ("samples_trained", "epochs_completed", "gpus_used", "replicas", "error", "run_id"):
                assert got[r["key"]][column] == r[column], column
