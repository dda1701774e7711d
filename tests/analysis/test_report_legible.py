"""The report reads as answers, not as tables of defaults: this machine beside
the studies first when it is the only offering, a ranking when several ran,
no column or chart without information, short headings with the parameters a
click away, limits only when given, units a person reads, synthetic accuracy
labelled, the price used with its source, and numbered chart labels that never
overlap with many offerings."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pandas as pd
import pytest
from chart_content import charts_described
from synthetic_results import (
    LOCAL_HOURLY_USD,
    LOCAL_RATES,
    LOCAL_SECONDS,
    local_only_results,
    many_offerings_results,
    result_bytes,
    result_key,
)

from analysis.metrics import Options, recommend
from analysis.reference.studies import reference_figures
from analysis.report.answer import (
    basis_line,
    configuration,
    configuration_details,
    per_samples_scale,
    ranking,
    sentence,
    short_label,
)
from analysis.report.page import INFORMATIVE, informative
from payload.storage import open_store


def _report(tmp: Path, results: list[dict], **limits):
    """Collect `results` from a local bucket and write the report (library calls, no CLI); the charts
    are described, not drawn (tests/chart_content.py): these tests read the page's text and tags."""
    from analysis.collect.run import collect_results
    from analysis.report.build import write_report

    store = open_store(str(tmp / "results"))
    for r in results:
        store.put_bytes(result_key(r), result_bytes(r))
    collect_results([str(tmp / "results")], tmp / "report", spot_history="off")
    with charts_described():
        outcome = write_report(tmp / "report", **limits)
    return outcome, (tmp / "report" / "index.html").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def local(tmp_path_factory):
    return _report(tmp_path_factory.mktemp("local"), local_only_results())


@pytest.fixture(scope="module")
def many(tmp_path_factory):
    return _report(tmp_path_factory.mktemp("many"), many_offerings_results())


def _text(page: str) -> str:
    """What a person reads: tags, styles and embedded images stripped, entities decoded."""
    body = page[max(page.find("<body>"), 0) :]
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", body)))


def _section(page: str, sid: str) -> str:
    start = page.index(f'<section id="{sid}">')
    return page[start : page.index("</section>", start)]


def _headers(page: str) -> list[list[str]]:
    return [re.findall(r"<th>(.*?)</th>", t) for t in re.findall(r"<thead>(.*?)</thead>", page, flags=re.S)]


# --- the answer when only this machine ran ---


def test_first_the_machine_beside_the_studies_with_one_chart(local):
    _, page = local
    answer = _section(page, "answer")
    text = _text(answer)
    # this machine's rate beside the range the studies published for the same benchmark
    seed000 = [f for f in reference_figures() if f.benchmark == "bilstm-sentiment"]
    lo, hi = min(f.value for f in seed000), max(f.value for f in seed000)
    # a synthetic run is other work than the study's (40-token tweets, the study's batch unprinted): the sentence
    # says so and draws no ratio
    assert f"bilstm-sentiment: this machine (CPU) {LOCAL_RATES['bilstm-sentiment']:.0f} tweets/s on other work" in text
    assert "the study does not print its batch size; synthetic 40-token tweets here, real tweets padded" in text
    assert f"so not set against their {lo:,.0f}–{hi:,.0f} tweets/s" in text and "times as fast" not in text
    # seed 000's full training here (tweets / measured rate, at the price given) and there (as published)
    tweets = seed000[0].workload_samples
    hours = tweets / LOCAL_RATES["bilstm-sentiment"] / 3600
    assert (
        f"Seed 000's full training ({tweets:,} tweets): here about {hours:.1f} h at that rate, on that other work "
        f"for USD {hours * LOCAL_HOURLY_USD:.2f}" in text
    )
    took = f"{min(f.train_hours for f in seed000):.2f}–{max(f.train_hours for f in seed000):.2f} h"
    assert f"the studies' GPUs took {took}" in text
    # the comparison comes before the per-configuration sentences, with exactly one chart
    assert answer.index('class="versus"') < answer.index('<ul class="answer">')
    assert len(re.findall(r"<img ", answer)) == 1
    assert 'alt="Each study&#39;s full training: this machine beside the studies&#39; GPUs"' in answer


def test_one_offering_is_not_called_cheapest_and_fastest(local):
    _, page = local
    items = re.findall(r"<li>(.*?)</li>", _section(page, "answer"), flags=re.S)
    assert len(items) == len(LOCAL_RATES)
    for item in items:
        assert "cheapest" not in item and "fastest" not in item and "(the one offering measured)" in item


def test_no_limit_is_stated_unless_given(local, tmp_path):
    outcome, page = local
    text = _text(page)
    assert outcome.options.deadline_hours is None and outcome.options.budget_usd is None
    for words in ("within", "at most", "Deadline", "budget"):
        assert words not in text and words not in outcome.text()
    summary = pd.DataFrame([_row("aws/a", 3.0, 0.5), _row("aws/b", 0.5, 4.0)])
    (rec,) = recommend(summary, Options(deadline_hours=None, budget_usd=None, cost_basis="train"))
    assert "within" not in sentence(rec, 2) and "at most" not in sentence(rec, 2)
    assert basis_line(Options(deadline_hours=None, budget_usd=None)) == "Costs are billed cost (launch to termination)."
    given = basis_line(Options(deadline_hours=0.5, budget_usd=None))
    assert given.endswith("Limits as given: deadline 30.0 min.")
    (rec,) = recommend(summary, Options(deadline_hours=1.0, budget_usd=None, cost_basis="train"))
    assert "within 1.00 h the cheapest is aws/b" in sentence(rec, 2) and "at most" not in sentence(rec, 2)


# --- tables and charts without information ---


def test_columns_without_information_are_left_out(local):
    _, page = local
    for head in _headers(_section(page, "results")):
        for gone in ("GPUs", "spread", "time vs base", "cost vs base", "frontier"):
            assert gone not in head, head
    assert "Relative columns divide by" not in page and "base offering" not in page


def test_each_column_rule_against_small_tables():
    one = pd.DataFrame(
        {
            "offering_id": ["a"],
            "gpus_used": [0],
            "repeats": [1],
            "train_hours_spread": [0.0],
            "rel_time": [1.0],
            "on_frontier": [True],
        }
    )
    assert not any(informative(one, col) for col in INFORMATIVE)
    two = pd.DataFrame(
        {
            "offering_id": ["a", "b"],
            "gpus_used": [0, 1],
            "repeats": [1, 2],
            "train_hours_spread": [0.0, 0.1],
            "rel_time": [1.0, 0.5],
            "on_frontier": [True, False],
        }
    )
    assert all(informative(two, col) for col in INFORMATIVE)


def test_no_chart_is_listed_as_not_drawn_and_no_none_is_shown(local):
    _, page = local
    text = _text(page)
    assert "Not drawn" not in page and "not drawn" not in text
    assert '<section id="charts">' not in page  # no seed chart compares one offering with itself
    assert not re.search(r"\bNone\b", text), re.search(r".{60}\bNone\b.{60}", text)
    assert not re.search(r"\bnan\b", text, flags=re.I)


# --- units, synthetic accuracy, the price used ---


def test_times_in_seconds_and_costs_per_thousand_or_million_samples(local):
    _, page = local
    table = _section(page, "results")
    mlp = table[table.index("<h3>mnist-mlp") :].split("</table>")[0]
    assert "<th>time (s)</th>" in mlp and f'<td class="num">{LOCAL_SECONDS["mnist-mlp"]:.2f}</td>' in mlp
    # USD per million images: hourly / 3600 / images/s x 1,000,000, read as dollars and cents
    per_million = LOCAL_HOURLY_USD / 3600 / LOCAL_RATES["mnist-mlp"] * 1e6
    assert "<th>USD per million images</th>" in mlp and f'<td class="num">{per_million:.3f}</td>' in mlp
    assert "per USD" not in table
    assert per_samples_scale([2e-5]) == (1_000, "1,000")  # USD 0.02 per 1,000
    assert per_samples_scale([2e-6, 5e-5]) == (1_000_000, "million")  # the cheapest reads as USD 2.00
    assert per_samples_scale([]) == (1_000, "1,000")


def test_accuracy_on_synthetic_data_says_so(local):
    _, page = local
    table = _section(page, "results")
    cnn = table[table.index("<h3>mnist-cnn") :].split("</table>")[0]
    assert "<th>accuracy (synthetic data)</th>" in cnn and "<th>accuracy</th>" not in table
    assert "says nothing about the model" in table


def test_the_price_shown_is_the_price_used_with_its_source(local):
    _, page = local
    banner = re.search(r'<p class="assumption">(.*?)</p>', page, flags=re.S).group(1)
    assert f"USD {LOCAL_HOURLY_USD:g}/h" in banner and "0.10" not in banner and "0.1/h" not in banner
    assert "given at launch" in banner and "None" not in banner
    notes = re.findall(r'<li value="\d+">(.*?)</li>', page)
    assert notes and all(n.startswith("given at launch") for n in notes), notes


# --- headings ---

HEX = "fc2f2ed1e736" + "0" * 52


def test_configuration_headings_are_short_and_the_details_a_click_away():
    rec = {
        "benchmark": "workload:pytorch-resnet@fc2f2ed1e736",
        "workload": "ab12cd34ef56",
        "workload_label": f"batch 32, fp32, code_sha256 {HEX}, metrics ['json', 'mllog'], workload_spec_hash {HEX}",
    }
    assert configuration(rec) == "pytorch-resnet @fc2f2ed1 (batch 32, fp32)"
    details = configuration_details(rec)
    assert HEX in details and "['json', 'mllog']" in details and "ab12cd34ef56" in details
    long = ", ".join(f"param{i} {i * 1000}" for i in range(20))
    assert len(short_label(long)) <= 65 and short_label(long).endswith("...")
    assert configuration({"benchmark": "resnet50", "workload_label": "1,000 steps, batch 64, fp32"}) == (
        "resnet50 (1,000 steps, batch 64, fp32)"
    )


def test_the_page_puts_full_parameters_in_details(local):
    _, page = local
    heads = re.findall(
        r"<h3>([^<]*)</h3><details class=\"params\"><summary>parameters</summary>([^<]*)</details>", page
    )
    assert len(heads) == len(LOCAL_RATES)
    for title, details in heads:
        assert "workload key" in details and title.split(" (")[0] in details


# --- several offerings ---


def _row(offering, hours, hourly, market="on-demand", gpus=1):
    cost = hours * hourly
    return {
        "benchmark": "bilstm-sentiment",
        "workload": "w1",
        "workload_label": "1 ep",
        "offering_id": offering,
        "market": market,
        "gpus_used": gpus,
        "train_hours": hours,
        "train_cost_usd": cost,
        "billed_cost_usd": cost,
        "prices_paid": f"USD {hourly:g}/h",
        "price_source": "test",
        "price_as_of": "2018-02-08",
        "price_note": None,
    }


def test_ranking_orders_by_cost_and_names_the_rest():
    rows = pd.DataFrame([_row(f"aws/o{i}", 1.0 + i, 10.0 - i) for i in range(7)])
    text = ranking(rows, "train_cost_usd")
    costs = sorted((1.0 + i) * (10.0 - i) for i in range(7))
    order = [m.group(1) for m in re.finditer(r"\d\. (aws/o\d)", text)]
    by_cost = rows.assign(c=rows["train_hours"] * (10.0 - rows.index)).sort_values("c")["offering_id"]
    assert order == list(by_cost)[:5]
    assert f"USD {costs[0]:.2f}" in text and text.endswith("and 2 more in the table below.")
    assert ranking(rows.iloc[:1], "train_cost_usd") == ""


def test_several_offerings_are_ranked_on_the_first_screen(many):
    outcome, page = many
    answer = _section(page, "answer")
    ranked = re.search(r'<span class="ranking">(.*?)</span>', answer).group(1)
    summary = outcome.tables["summary"].sort_values(["billed_cost_usd", "train_hours", "offering_id"])
    first = summary.iloc[0]
    assert ranked.startswith(f"Ranked by cost: 1. {first['offering_id']}")
    assert f"and {len(summary) - 5} more" in ranked
    assert 'class="versus"' not in answer  # this machine did not run here


def test_fourteen_offerings_chart_numbers_never_overlap(many):
    from analysis.report.plots import hourly_vs_time_figure

    outcome, page = many
    summary = outcome.tables["summary"]
    assert len(summary) == 14
    fig = hourly_vs_time_figure(summary)
    ax = fig.axes[0]
    # the values span decades on both axes: both are logarithmic
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    inside = ax.get_window_extent(renderer)
    labels = [t for t in ax.texts if t.get_text().isdigit()]
    assert sorted(int(t.get_text()) for t in labels) == list(range(1, 15))
    boxes = [t.get_window_extent(renderer) for t in labels]
    for i, a in enumerate(boxes):
        assert inside.x0 <= a.x0 and a.x1 <= inside.x1 and inside.y0 <= a.y0 and a.y1 <= inside.y1
        for b in boxes[i + 1 :]:
            assert not a.overlaps(b), (a, b)
    # the legend names every number once
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert [x.split("  ")[0] for x in legend[1:]] == [str(i) for i in range(1, 15)]
    assert '<img alt="Cost per hour vs time to train (seed 003)"' in page


def test_reference_section_shows_no_none_for_what_a_run_did_not_record():
    from queried import section

    runs = pd.DataFrame(
        [
            {
                "run_id": "r1",
                "status": "completed",
                "benchmark": "bilstm-sentiment",
                "offering_id": "local/this-machine",
                "market": "on-demand",
                "gpus_used": 0,
                "per_gpu_batch_size": None,
                "precision": None,
                "data": None,
                "samples_per_second": 100.0,
                "hourly_usd": 0.1,
                "price_source": None,
                "device": "CPU",
            }
        ]
    )
    text = _text(section(runs))
    assert "local/this-machine (CPU; precision not recorded)" in text
    assert not re.search(r"\bNone\b", text), re.search(r".{60}\bNone\b.{60}", text)
