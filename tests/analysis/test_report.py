"""The report: every chart drawn, the HTML self-contained, empty tables
handled, and seed 000's cost column reproduced from its measured times."""

from __future__ import annotations

import base64
import io
import json
import re
import shutil
from pathlib import Path

import pytest
from synthetic_results import make_result, result_bytes, result_key

from analysis.cli import main
from payload.storage import open_store

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _collect(tmp_path, results) -> str:
    src, out = tmp_path / "results", tmp_path / "report"
    store = open_store(str(src))
    for r in results:
        store.put_bytes(result_key(r), result_bytes(r))
    assert main(["collect", "--results", str(src), "--table", str(out), "--json"]) == 0
    return str(out)


def _lab_results() -> list[dict]:
    specs = [
        ("aws/p2.xlarge", 1, 100.0, 0.9, "on-demand"),
        ("aws/p2.xlarge", 1, 100.0, None, "spot"),
        ("aws/p3.2xlarge", 1, 400.0, 3.06, "on-demand"),
        ("aws/p3.8xlarge", 4, 1200.0, 12.24, "on-demand"),
        ("aws/p3.8xlarge", 1, 400.0, 12.24, "on-demand"),
        ("onprem/parkopedia-4x1080ti", 4, 1000.0, None, "on-demand"),
    ]
    out = []
    for bench in ("resnet50", "vgg16"):
        for i, (o, g, sps, h, market) in enumerate(specs):
            for rep in range(2):
                out.append(
                    make_result(
                        o,
                        bench,
                        gpus_used=g,
                        samples_per_second=sps * (1 + rep / 20),
                        train_seconds=360000 / sps,
                        hourly_usd=h,
                        market=market,
                        spot_hourly_usd=0.28 if market == "spot" else None,
                        repeat=rep * 10 + i,
                    )
                )
    out.append(make_result("aws/p3.2xlarge", "resnet50", status="failed", hourly_usd=3.06, repeat=77))
    return out


@pytest.fixture(scope="module")
def lab_table(tmp_path_factory) -> Path:
    """The lab results collected once; each test reports from its own copy (the report writes beside the table)."""
    return Path(_collect(tmp_path_factory.mktemp("lab"), _lab_results()))


def _copy_of(table: Path, tmp_path) -> str:
    return str(shutil.copytree(table, tmp_path / "report"))


def test_report_draws_every_chart_and_is_self_contained(lab_table, tmp_path, capsys):
    out = _copy_of(lab_table, tmp_path)
    capsys.readouterr()
    assert main(["report", "--table", out, "--out", out, "--deadline-hours", "0.5", "--budget-usd", "1"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("resnet50 (1,000 steps, batch 64, fp32): cheapest onprem/parkopedia-4x1080ti (4 GPUs)")
    assert "finishes within 30.0 min" in printed and "nan" not in printed.lower()
    page = (tmp_path / "report" / "index.html").read_text()
    # one multi-GPU offering only (p3.8xlarge): its speed-up is a table, not a chart, and the
    # chart left out is not listed either
    assert "Not drawn" not in page and 'alt="Multi-GPU speed-up' not in page
    assert '<section id="scaling"><h2>Multi-GPU scaling</h2>' in page
    images = re.findall(r'<img [^>]*src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)
    # five seed charts, the ImageNet extrapolation and the reference chart (this report beside the studies)
    assert len(images) == 7
    import matplotlib.image

    for data in images:
        raw = base64.b64decode(data, validate=True)
        assert raw.startswith(PNG_MAGIC)
        h, w = matplotlib.image.imread(io.BytesIO(raw), format="png").shape[:2]
        assert h > 100 and w > 100
    # nothing fetched from anywhere: no external src/href, no stylesheet or script links
    for attr in re.findall(r'(?:src|href)\s*=\s*["\']([^"\']*)', page, flags=re.I):
        assert attr.startswith("data:"), attr
    assert not re.search(r"<(link|script|iframe)\b", page, flags=re.I)
    assert not re.search(r"url\(\s*['\"]?https?:", page, flags=re.I)
    # prices carry their source and date; both cost figures are named
    assert "synthetic (as of 2018-02-08)" in page and "cost to train (USD)" in page and "billed (USD)" in page
    assert "Runs that did not complete" in page


@pytest.mark.usefixtures("charts_described")  # about the text: the charts are described, not drawn
def test_report_json_and_unknown_base(lab_table, tmp_path, capsys):
    out = _copy_of(lab_table, tmp_path)
    capsys.readouterr()
    assert main(["report", "--table", out, "--out", out, "--json", "--base", "aws/p3.2xlarge"]) == 0
    got = json.loads(capsys.readouterr().out)
    v100 = next(r for r in got["summary"] if r["offering_id"] == "aws/p3.2xlarge" and r["benchmark"] == "vgg16")
    assert v100["rel_time"] == pytest.approx(1.0)
    assert {s["gpus"] for s in got["scaling"]} == {4}
    assert main(["report", "--table", out, "--out", out, "--base", "aws/p3.2xlarg"]) == 2
    assert "aws/p3.2xlarge" in capsys.readouterr().err  # names the closest id


def test_report_without_a_table_says_to_collect_first(tmp_path, capsys):
    assert main(["report", "--table", str(tmp_path / "nothing"), "--out", str(tmp_path / "nothing")]) == 2
    assert f"gpubench collect --table {tmp_path / 'nothing'}" in capsys.readouterr().err


@pytest.mark.usefixtures("charts_described")  # about the text: the charts are described, not drawn
def test_report_of_only_failed_runs_says_so(tmp_path, capsys):
    out = _collect(tmp_path, [make_result("aws/p2.xlarge", status="failed", hourly_usd=0.9)])
    capsys.readouterr()
    assert main(["report", "--table", out, "--out", out]) == 0
    assert "no completed runs" in capsys.readouterr().out
    page = (tmp_path / "report" / "index.html").read_text()
    assert "No completed runs to report" in page and "Runs that did not complete" in page


# Seed 000 (rare-technologies.com, 2018-02-08), Table 1: measured train hours
# (printed to 0.01 h) and cost (printed to 0.1 USD). The last five are priced
# from prices derived from the same table (their billing rules applied).
SEED_000 = [
    ("aws/p2.xlarge", 3.62, 3.3),
    ("aws/p3.2xlarge", 1.06, 3.3),
    ("gcp/n1-standard-4+1xk80", 3.72, 2.4),
    ("gcp/n1-standard-4+1xp100", 2.07, 3.4),
    ("paperspace/v100", 1.09, 2.5),
    ("softlayer/bm-2xm60", 3.16, 11.2),
    ("softlayer/bm-4xk80", 4.1, 20.1),
    ("leadergpu/2xgtx1080", 2.12, 3.13),
    ("leadergpu/2xp100", 2.42, 14.26),
    ("hetzner/ex51-ssd-gpu", 2.27, 0.5),
    ("paperspace/p6000", 1.82, 1.6),
]


@pytest.mark.usefixtures("charts_described")  # about the text: the charts are described, not drawn
def test_report_reproduces_seed_000_cost_column(tmp_path, capsys):
    # each row three times: the printed time and both ends of its rounding
    # interval, as three "benchmarks", so one report prices all of them
    results = []
    for i, (offering, hours, _) in enumerate(SEED_000):
        for tag, h in (("lo", hours - 0.005), ("mid", hours), ("hi", hours + 0.005)):
            results.append(
                make_result(
                    offering,
                    f"seed000-{tag}",
                    train_seconds=h * 3600,
                    samples_per_second=None,
                    hourly_usd=99.0,
                    repeat=i,
                )
            )  # a wrong recorded price: --as-of must win
    out = _collect(tmp_path, results)
    capsys.readouterr()
    assert main(["report", "--table", out, "--out", out, "--as-of", "2018-02-08", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    cost = {(r["benchmark"], r["offering_id"]): r for r in got["summary"]}
    for offering, _hours, published in SEED_000:
        lo, mid, hi = (cost[(f"seed000-{t}", offering)]["train_cost_usd"] for t in ("lo", "mid", "hi"))
        # the true time lies in [lo, hi]; its cost must round to the printed figure somewhere in there
        assert lo <= published + 0.05 and hi >= published - 0.05, (offering, lo, hi, published)
        assert abs(mid - published) <= 0.05 + (hi - lo) / 2, (offering, mid, published)
        row = cost[("seed000-mid", offering)]
        assert row["price_as_of"] == "2018-02-08" and "seed 000" in row["price_source"]
    # Softlayer bills started hours: 3.16 h is billed as 4 h
    assert cost[("seed000-mid", "softlayer/bm-2xm60")]["train_cost_usd"] == pytest.approx(4 * 2.8)
    page = (tmp_path / "report" / "index.html").read_text()
    assert "2018-02-08" in page and "seed 000" in page


@pytest.mark.usefixtures("charts_described")  # about the text: the charts are described, not drawn
def test_chart_captions_cite_the_numbered_price_sources_instead_of_repeating_them(tmp_path, capsys):
    import html as html_lib

    results = _lab_results()
    for i, r in enumerate(results):  # long, distinct sources: the text each caption used to repeat
        r["price"]["source"] = f"a long price page for offering {r['offering']['id']} number {i % 3} " + "x" * 80
    out = _collect(tmp_path, results)
    assert main(["report", "--table", out, "--out", out]) == 0
    page = (tmp_path / "report" / "index.html").read_text()
    captions = [html_lib.unescape(c) for c in re.findall(r"<figcaption>(.*?)</figcaption>", page, flags=re.S)]
    priced = [c for c in captions if "Prices:" in c]
    assert len(priced) >= 4
    listed = dict(re.findall(r'<li value="(\d+)">(.*?)</li>', page, flags=re.S))
    for caption in priced:
        assert "a long price page" not in caption
        cited = re.findall(r"\[(\d+)\]", caption.split("Prices:", 1)[1])
        assert cited and all(n in listed for n in cited), caption
    notes = page[page.index('<ol class="sources">') :]
    notes = notes[: notes.index("</ol>")]
    assert page.count("x" * 80) == notes.count("x" * 80) > 0  # the long sources are written in the notes alone


@pytest.mark.usefixtures("charts_described")  # about the text: the charts are described, not drawn
def test_terminal_table_gives_the_time_column_one_unit(tmp_path, capsys):
    results = _lab_results()  # times from 5 minutes to an hour
    results.append(make_result("aws/p3.2xlarge", "mnist-mlp", train_seconds=30, repeat=99))
    out = _collect(tmp_path, results)
    capsys.readouterr()
    assert main(["report", "--table", out, "--out", out]) == 0
    lines = capsys.readouterr().out.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("benchmark "))
    table = lines[head + 2 : lines.index("", head)]
    assert "time (h)" in lines[head] and not any(" min " in line for line in table)
    start = lines[head].index("time (h)")
    cells = [c for c in (line[start:].split()[0] for line in table) if c != "-"]
    assert "1.00" in cells and "0.0083" in cells  # an hour and 30 seconds, both in hours


def _commands(parser) -> set[str]:
    import argparse

    (sub,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return set(sub.choices)


def test_gpubench_report_registers_only_its_own_command():
    """Running `gpubench report` parses with the report command alone (the other commands'
    modules cost a third of a second to import); a word that is no command gets them all."""
    from analysis.cli import build_parser

    every = _commands(build_parser("gpubench"))
    assert _commands(build_parser("gpubench", "report")) == {"report"}
    assert _commands(build_parser("gpubench", "repor")) == every and "report" in every and len(every) > 10
