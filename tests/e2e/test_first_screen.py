"""The demo report's first screen on a common laptop (1366x768, headless
chromium): without scrolling, a reader sees the answer sentence that puts this
machine beside the studies' GPUs, the study's full training here and there, and
one chart, whole. Checked on the real quick demo and on a synthetic demo run
on a machine with a GPU, both studies probed."""

from __future__ import annotations

import re

import pytest
from chromium_cdp import Browser, find_chromium
from synthetic_results import (
    LOCAL_HOURLY_USD,
    LOCAL_RATES,
    local_only_results,
    many_offerings_results,
    result_bytes,
    result_key,
)

from payload.storage import open_store

WIDTH, HEIGHT = 1366, 768

FIRST_SCREEN_JS = """
(() => {
  const answer = document.querySelector('#answer');
  const box = el => { const r = el.getBoundingClientRect(); return {top: r.top, bottom: r.bottom, height: r.height}; };
  return {
    scrollY: window.scrollY, height: window.innerHeight, width: window.innerWidth,
    versus: answer ? Array.from(answer.querySelectorAll('p.versus')).map(p => ({text: p.textContent, ...box(p)})) : [],
    rankings: answer ? Array.from(answer.querySelectorAll('.ranking')).map(p => ({text: p.textContent, ...box(p)})) : [],
    images: Array.from(document.images).map(i => ({alt: i.alt, inAnswer: !!answer && answer.contains(i),
                                                   complete: i.complete, ...box(i)})),
  };
})()
"""

# this machine beside the studies: a probe of the study's own configuration (the demo), else its runs' rate,
# as a ratio when it did the study's work, else the differences named
SENTENCE = re.compile(
    r"probe of seed \d+'s own configuration \(.+\) ran at [\d,.]+ \w+/s on this machine \((CPU|\d+ GPUs?)\)"
    r"|this machine \((CPU|\d+ GPUs?)\) [\d,.]+ \w+/s"
    r"(; the studies' GPUs| on other work than the studies' \(.+\), so not set against their) [\d,.]+–[\d,.]+ \w+/s"
)
FULL = re.compile(r"full training \([\d,]+ \w+\): here about [\d,.]+ \S+")


def first_screen(index) -> dict:
    with Browser(find_chromium(), width=WIDTH, height=HEIGHT) as browser:
        page, seen = browser.load(index.resolve().as_uri())
        try:
            shown = page.evaluate(FIRST_SCREEN_JS)
            browser.screenshot(page, index.parent / "screenshot-first-screen.png")
        finally:
            page.close()
    assert seen["problems"]["exceptions"] == [] and seen["problems"]["failed_requests"] == []
    return shown


def assert_answers_on_first_screen(shown: dict) -> None:
    assert shown["scrollY"] == 0 and shown["height"] == HEIGHT and shown["width"] == WIDTH
    visible = [p for p in shown["versus"] if p["bottom"] <= HEIGHT]
    assert any(SENTENCE.search(p["text"]) and FULL.search(p["text"]) for p in visible), shown["versus"]
    on_screen = [i for i in shown["images"] if i["top"] >= 0 and i["bottom"] <= HEIGHT and i["height"] > 100]
    assert len(on_screen) == 1, shown["images"]
    (chart,) = on_screen
    assert chart["inAnswer"] and chart["complete"] and chart["alt"].startswith("Each study's full training")


def test_the_demo_report_answers_on_its_first_screen(demo_first):
    shown = first_screen(demo_first.report / "index.html")
    assert_answers_on_first_screen(shown)
    # the demo's comparison is its probe of the study's own job, the work that still differs in that sentence
    texts = " ".join(p["text"] for p in shown["versus"] if p["bottom"] <= HEIGHT)
    assert "probe of seed 000's own configuration" in texts and "on work that still differs" in texts


def _reported(tmp, results, study_probes=()):
    """`results` collected from a local bucket and reported (library calls, no TensorFlow run), with the
    demo's record of its study probes beside the table when given."""
    from analysis.collect.run import collect_results
    from analysis.demo import write_study_probes
    from analysis.report.build import write_report

    store = open_store(str(tmp / "results"))
    for r in results:
        store.put_bytes(result_key(r), result_bytes(r))
    collect_results([str(tmp / "results")], tmp / "report", spot_history="off")
    if study_probes:
        write_study_probes(tmp / "report", list(study_probes))
    write_report(tmp / "report")
    return tmp / "report" / "index.html"


# The steady rate a faked probe of each study's configuration measured (a GPU machine's, for resnet50 in fp16).
PROBED_RATES = {"bilstm-sentiment": LOCAL_RATES["bilstm-sentiment"], "resnet50": 250.0}


def probed_studies(tmp, gpus: int) -> list[dict]:
    """The demo's study probes on a machine with `gpus` GPUs, the probe faked (a steady rate, its interval
    and warm-up as the payload records them) and extrapolated by bench's code as the demo does."""
    from analysis import demo
    from analysis.bench.candidates import local_candidate
    from analysis.bench.probes import ProbeReport
    from analysis.reference.studies import study_jobs

    def fake(job, price, probes_dir, logs, limit, stream):
        rate = PROBED_RATES[job.benchmark]
        steady = {"samples_per_second": rate, "low": rate * 0.98, "high": rate * 1.02, "rel_halfwidth": 0.02}
        steady.update(warmup_seconds=5.0, windows=8, steady=True, warmup_samples=rate * 2)
        result = {"status": "completed", "probe": {"steady": steady, "overhead_seconds": 25.0}}
        cand = local_candidate(price.hourly_usd, "first-screen")
        return ProbeReport(cand, cand.name, "measured", None, result, finish_seconds=1.0), 80.0

    price = demo.resolve_price(LOCAL_HOURLY_USD)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(demo, "_local_probe", fake)
        return [
            demo.probe_study(j, gpus=gpus, price=price, probes_dir=tmp, logs=tmp, limit=60, stream=None)
            for j in study_jobs()
        ]


@pytest.fixture(scope="module")
def synthetic_demo(tmp_path_factory):
    """The demo on a machine with a GPU: its short runs, and both studies probed in their own configuration."""
    tmp = tmp_path_factory.mktemp("first-screen")
    runs = [r for r in local_only_results() if r["benchmark"]["name"] != "resnet50"]  # the demo's short runs
    return _reported(tmp, runs, probed_studies(tmp, gpus=1))


def test_a_demo_with_both_studies_probed_answers_on_its_first_screen(synthetic_demo):
    shown = first_screen(synthetic_demo)
    assert_answers_on_first_screen(shown)
    # both studies are on the first screen: seed 000's tweets and seed 004's ImageNet images
    texts = " ".join(p["text"] for p in shown["versus"] if p["bottom"] <= HEIGHT)
    assert "probe of seed 000's own configuration" in texts and "probe of seed 004's own configuration" in texts
    assert "Seed 000's full training" in texts and "Seed 004's ImageNet training of resnet50" in texts


def test_fourteen_offerings_are_ranked_on_the_first_screen(tmp_path):
    shown = first_screen(_reported(tmp_path, many_offerings_results()))
    (ranked,) = shown["rankings"]
    assert ranked["bottom"] <= HEIGHT and ranked["text"].startswith("Ranked by cost: 1. "), ranked
    assert shown["versus"] == []  # this machine did not run: no comparison with the studies
