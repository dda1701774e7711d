"""Probe runs (the table's `probe` column: short runs of a job) stay apart
from full runs: the report over a table with probe rows is the report over
the same table without them, plus one line that counts them."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest
from queried import query_of
from synthetic_results import demo_like_results, result_bytes, result_key

from analysis.cli import main
from analysis.collect import read_table
from analysis.report.page import probe_line
from payload.storage import open_store

# the charts are described, not drawn: these tests are about the page's tables and text (tests/chart_content.py)
pytestmark = pytest.mark.usefixtures("charts_described")

PROBED = "aws/p3.2xlarge"  # the fastest offering of the demo-like data: a probe of it would change the answer


@pytest.fixture(scope="module")
def collected(tmp_path_factory):
    """The demo-like results collected once: (out dir, its runs table)."""
    tmp = tmp_path_factory.mktemp("probes")
    src, out = tmp / "results", tmp / "collected"
    store = open_store(str(src))
    for r in demo_like_results():
        store.put_bytes(result_key(r), result_bytes(r))
    assert main(["collect", "--results", str(src), "--table", str(out), "--json"]) == 0
    return read_table(out)


def _report(tmp_path, name: str, runs: pd.DataFrame, capsys) -> tuple[str, dict]:
    """Write `runs` as a collected table, report it; (page without its timestamp, --json answer)."""
    out = tmp_path / name
    out.mkdir()
    runs.to_parquet(out / "results.parquet")
    capsys.readouterr()
    assert main(["report", "--table", str(out), "--out", str(out), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    page = (out / "index.html").read_text(encoding="utf-8")
    return re.sub(r"Generated .*? from \S+", "Generated", page), got


def _answer(page: str) -> str:
    start = page.index('<section id="answer">')
    return page[start : page.index("</section>", start)]


def _probe_note(page: str) -> list[str]:
    return re.findall(r'<p class="note">([^<]*probe run[^<]*<code>gpubench bench</code>[^<]*)</p>', page)


def test_probe_rows_are_left_out_and_counted_in_one_line(collected, tmp_path, capsys):
    probed = collected["offering_id"] == PROBED
    assert probed.sum() >= 2 and (collected.loc[probed, "status"] == "completed").any()
    with_probes, got = _report(tmp_path, "probes", collected.assign(probe=probed), capsys)
    without, expected = _report(tmp_path, "dropped", collected[~probed], capsys)
    (note,) = _probe_note(with_probes)
    assert note.startswith(f"{int(probed.sum())} probe runs left out of this report")
    # everything else is the report of the full runs alone: tables, answer, charts, counts
    assert with_probes.replace(f'<p class="note">{note}</p>\n', "") == without
    full, _ = _report(tmp_path, "full", collected, capsys)
    assert PROBED in _answer(full) and f"{PROBED.replace('/', '/<wbr>')}</td>" in full  # were it a full run...
    assert PROBED not in _answer(with_probes) and f"{PROBED.replace('/', '/<wbr>')}</td>" not in with_probes
    assert got["summary"] == expected["summary"] and got["recommendations"] == expected["recommendations"]
    assert PROBED not in {r["offering_id"] for r in got["summary"]}
    assert got["runs"] == expected["runs"] == int((~probed).sum())
    assert got["probe_runs_left_out"] == int(probed.sum()) and expected["probe_runs_left_out"] == 0


def test_the_terminal_summary_counts_the_probe_runs_left_out(collected, tmp_path, capsys):
    probed = collected["offering_id"] == PROBED
    out = tmp_path / "terminal"
    out.mkdir()
    collected.assign(probe=probed).to_parquet(out / "results.parquet")
    capsys.readouterr()
    assert main(["report", "--table", str(out), "--out", str(out)]) == 0
    assert probe_line(int(probed.sum())) in capsys.readouterr().out


def test_a_table_without_probes_has_no_probe_line(collected, tmp_path, capsys):
    full, _ = _report(tmp_path, "full", collected.assign(probe=False), capsys)
    none_set, _ = _report(
        tmp_path, "none", collected.assign(probe=pd.array([None] * len(collected), "boolean")), capsys
    )
    assert _probe_note(full) == [] and "probe" not in full
    assert none_set == full  # a missing flag is a full run


def test_the_query_treats_a_missing_value_as_a_full_run():
    runs = pd.DataFrame({"run_id": ["a", "b", "c", "d"], "status": "failed", "probe": [True, False, None, True]})
    with query_of(runs) as q:
        assert q.probes() == 2 and q.facts().total == 2
        assert list(q.rows("SELECT run_id FROM full_runs ORDER BY _idx")) == [("b",), ("c",)]
    assert probe_line(0) == "" and probe_line(1).startswith("1 probe run left out")
    assert "`gpubench bench` shows them" in probe_line(2)
