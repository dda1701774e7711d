"""The report opens with the answer: one sentence per configuration checked
against hand-computed fixtures, the one time-unit rule, compact tables with
price footnotes, charts only where they compare offerings, and a terminal
summary without "nan"."""

from __future__ import annotations

import html
import io
import re
from contextlib import redirect_stdout

import pandas as pd
import pytest
from chart_content import charts_described
from synthetic_results import demo_like_results, make_result, result_bytes, result_key

from analysis.cli import main
from analysis.metrics import Options, recommend
from analysis.report.answer import duration, sentence, time_unit
from payload.storage import open_store

HINT = "infra/catalog/data/prices/"


def _row(offering, hours, hourly, market="on-demand", gpus=1, label="2 ep x 1,000 samples, batch 32, fp32"):
    cost = None if hourly is None else hours * hourly
    return {
        "benchmark": "bilstm-sentiment",
        "workload": "w1",
        "workload_label": label,
        "sample_unit": "tweet",
        "offering_id": offering,
        "market": market,
        "gpus_used": gpus,
        "train_hours": hours,
        "train_cost_usd": cost,
        "billed_cost_usd": cost,
        "prices_paid": None if hourly is None else f"USD {hourly:g}/h",
        "price_source": None if hourly is None else "test price",
        "price_as_of": None if hourly is None else "2018-02-08",
        "price_note": "no price in any snapshot" if hourly is None else None,
    }


def test_answer_sentence_against_hand_computed_fixture():
    # A: 3 h at USD 0.50/h = USD 1.50; B: 0.5 h at USD 4/h = USD 2.00; C: 2 h at USD 0.9/h = USD 1.80;
    # D (no price): 0.25 h = 15 min, the fastest of all.
    summary = pd.DataFrame(
        [
            _row("aws/a", 3.0, 0.5),
            _row("aws/b", 0.5, 4.0, gpus=4),
            _row("gcp/c", 2.0, 0.9, market="spot"),
            _row("hetzner/d", 0.25, None),
        ]
    )
    (rec,) = recommend(summary, Options(deadline_hours=2.5, budget_usd=1.9, cost_basis="train"))
    text = sentence(rec)
    first, unpriced = text.split(" Not ranked by cost, no price: ")
    # cheapest: A (1.50); fastest: D needs no price (15 min, no price);
    # within 2.5 h: C (1.80) is cheaper than B (2.00); for at most USD 1.90: C (2 h) is faster than A (3 h)
    assert first == (
        "bilstm-sentiment (2 ep x 1,000 samples, batch 32, fp32): cheapest aws/a, 3.00 h for USD 1.50; "
        "fastest hetzner/d, 15.0 min for no price; within 2.50 h the cheapest is gcp/c (spot), 2.00 h for USD 1.80; "
        "for at most USD 1.90 the fastest is gcp/c (spot), 2.00 h for USD 1.80."
    )
    assert unpriced.startswith("hetzner/d (15.0 min). To add a price: add a dated on-demand price")
    assert "for hetzner/d to " + HINT in unpriced


def test_answer_says_when_nothing_meets_the_limits_and_when_one_offering_is_every_answer():
    summary = pd.DataFrame([_row("aws/a", 3.0, 0.5)])
    (rec,) = recommend(summary, Options(deadline_hours=1.0, budget_usd=1.0, cost_basis="train"))
    assert sentence(rec) == (
        "bilstm-sentiment (2 ep x 1,000 samples, batch 32, fp32): cheapest aws/a, 3.00 h for USD 1.50; "
        "it is also the fastest; no priced offering finishes within 1.00 h; "
        "no priced offering trains it for at most USD 1.00."
    )
    (rec,) = recommend(summary, Options(deadline_hours=24, budget_usd=100, cost_basis="train"))
    assert sentence(rec).endswith("the cheapest finishes within 24.0 h; the fastest costs at most USD 100.00.")
    (rec,) = recommend(pd.DataFrame([_row("hetzner/d", 0.25, None)]), Options())
    assert sentence(rec).startswith(
        "bilstm-sentiment (2 ep x 1,000 samples, batch 32, fp32): cheapest: no offering has a price; "
        "fastest hetzner/d, 15.0 min for no price; no priced offering finishes within 24.0 h"
    )


@pytest.mark.parametrize(
    "hours, text",
    [
        (0.5, "30.0 min"),
        (59 / 60, "59.0 min"),
        (1.0, "1.00 h"),
        (3.62, "3.62 h"),
        (150.0, "150 h"),
        (0.0001, "0.36 s"),
        (0.052 / 60, "3.12 s"),
        (59 / 3600, "59.0 s"),
        (1 / 60, "1.00 min"),
        (None, "-"),
        (float("nan"), "-"),
    ],
)
def test_one_rule_for_times(hours, text):
    assert duration(hours) == text


def test_a_column_takes_the_unit_of_its_longest_time():
    assert time_unit([0.2, 0.9]) == "min"
    assert time_unit([0.2, 1.5]) == "h"
    assert time_unit([0.2, float("nan")]) == "min"


def _report(tmp_path, results, *args) -> tuple[str, str]:
    src, out = tmp_path / "results", tmp_path / "report"
    store = open_store(str(src))
    for r in results:
        store.put_bytes(result_key(r), result_bytes(r))
    assert main(["collect", "--results", str(src), "--table", str(out), "--json"]) == 0
    return str(out), (out / "index.html").as_posix()


@pytest.fixture(scope="module")
def demo_like_report(tmp_path_factory) -> tuple[str, str]:
    """`gpubench report` over the demo-like results, once for the tests that only read it: (what it
    printed, the page). About the text: the charts are described, not drawn (tests/chart_content.py)."""
    out, index = _report(tmp_path_factory.mktemp("demo-like"), demo_like_results())
    printed = io.StringIO()
    with charts_described(), redirect_stdout(printed):
        assert main(["report", "--table", out, "--out", out]) == 0
    return printed.getvalue(), open(index, encoding="utf-8").read()


def test_terminal_summary_opens_with_the_answer_and_prints_no_nan(demo_like_report):
    printed, _ = demo_like_report
    lines = printed.splitlines()
    # one sentence per configuration, in configuration order, then the basis line
    assert lines[0].startswith("bilstm-sentiment (1,000 steps, batch 64, fp32): cheapest local/this-machine")
    # a configuration run on one offering says what it did, not that it is the cheapest and the fastest
    assert lines[1].startswith("mnist-cnn (1 ep x 1,024 samples, batch 64, fp32): local/this-machine, ")
    assert lines[1].endswith("(the one offering measured).") and "cheapest" not in lines[1]
    assert lines[3].startswith("resnet50 (1,000 steps, batch 64, fp32): cheapest onprem/parkopedia-4x1080ti")
    # no deadline or budget was given: none is stated
    assert lines[4] == "Costs are billed cost (launch to termination)."
    assert "within" not in printed and "at most" not in printed
    # unpriced offerings are named with how to price them
    assert "Not ranked by cost, no price: gcp/n1-highcpu-16 (26.7 min)" in lines[0] and HINT in lines[0]
    # the data has missing accuracy, GPU utilisation, prices and relative figures: none prints as nan
    assert not re.search(r"\bnan\b", printed, flags=re.I), printed
    assert "[1] synthetic (as of 2018-02-08)" in printed


def test_html_opens_with_the_answer_and_keeps_tables_compact(demo_like_report):
    _, page = demo_like_report
    body = page[page.index("<body>") :]
    assert re.search(r"</header>\s*<section id=\"answer\"><h2>The answer</h2>", body)
    assert body.index('<section id="answer">') < body.index("<table")
    sections = re.findall(r'<section id="([^"]+)"', body)
    assert sections[0] == "answer" and "results" in sections
    # seed 000's accuracy and GPU utilisation columns, throughput in the benchmark's unit
    assert (
        "<th>accuracy (synthetic data)</th>" in page
        and "<th>GPU util. (mean %)</th>" in page
        and "<th>tweets/s</th>" in page
    )
    # no identical rows, no long string repeated in a cell: the price source is a footnote
    for table in re.findall(r"<table.*?</table>", page, flags=re.S):
        rows = re.findall(r"<tr[^>]*>(.*?)</tr>", table, flags=re.S)
        assert len(rows) == len(set(rows)), table[:300]
        for cell in re.findall(r"<td[^>]*>(.*?)</td>", table, flags=re.S):
            assert len(re.sub(r"<[^>]+>", "", cell)) <= 120, cell
    long_source = "seed 004 (Parkopedia) section 2.2: box of 4 x GTX 1080 Ti"
    notes = page[page.index("<h3>Price sources</h3>") :]
    assert long_source in notes.split("</ol>")[0]
    # one unit per column: the resnet50 table has an 8.9 h local run, so hours; bilstm's longest is 27 min
    res = page[page.index("<h3>resnet50 (1,000 steps") :]
    assert "<th>time (h)</th>" in res.split("</table>")[0]
    bil = page[page.index("<h3>bilstm-sentiment (1,000 steps") :]
    assert "<th>time (min)</th>" in bil.split("</table>")[0]
    # the ImageNet extrapolation is drawn for resnet50 and labelled as one, with its assumptions
    assert 'alt="ImageNet-scale training, extrapolated' in page
    assert "Extrapolation, not a measurement" in page and "153,600,000 images" in page
    assert re.search(r"\bnan\b", re.sub(r"<img [^>]*>", "", page), flags=re.I) is None


@pytest.mark.usefixtures("charts_described")  # about the text: the charts are described, not drawn
def test_no_chart_compares_one_offering_with_itself(tmp_path, capsys):
    results = [make_result("local/this-machine", "resnet50", hourly_usd=0.1, repeat=r, gpus_used=0) for r in range(2)]
    out, index = _report(tmp_path, results)
    assert main(["report", "--table", out, "--out", out]) == 0
    page = open(index, encoding="utf-8").read()
    alts = [html.unescape(a) for a in re.findall(r'<img alt="([^"]+)"', page)]
    # the answer's chart (this machine beside the studies) and the reference chart; no seed chart,
    # and none listed as left out
    assert alts == [
        "Each study's full training: this machine beside the studies' GPUs",
        "This report's runs beside the studies' published throughput",
    ], alts
    assert "Not drawn" not in page and "nothing to compare" not in page
