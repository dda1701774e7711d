"""The report's layout on a common laptop screen (1366x768) in headless
chromium: the answer is the first section of the body, and no table runs
past its container (every table sits in a container that either holds it or
scrolls sideways by design), nor the page past the window."""

from __future__ import annotations

import pytest
from chromium_cdp import Browser, find_chromium
from synthetic_results import demo_like_results, result_bytes, result_key

from analysis.cli import main
from payload.storage import open_store

WIDTH, HEIGHT = 1366, 768

LAYOUT_JS = """
(() => {
  const body = document.body;
  const firstSection = body.querySelector(':scope > section');
  const beforeAnswer = [];
  for (const el of body.children) {
    if (el === firstSection) break;
    if (el.tagName !== 'HEADER') beforeAnswer.push(el.tagName);
  }
  const tables = Array.from(document.querySelectorAll('table')).map(t => {
    const box = t.parentElement;
    const style = getComputedStyle(box);
    return {head: t.querySelector('th') ? t.querySelector('th').textContent : '',
            container: box.tagName + '.' + box.className,
            overflowX: style.overflowX, scrollWidth: box.scrollWidth, clientWidth: box.clientWidth,
            tableRight: t.getBoundingClientRect().right, boxRight: box.getBoundingClientRect().right};
  });
  return {firstSection: firstSection && firstSection.id, beforeAnswer,
          firstHeading: document.querySelector('h2') ? document.querySelector('h2').textContent : null,
          answerItems: document.querySelectorAll('#answer li').length,
          pageWidth: document.documentElement.scrollWidth, viewport: window.innerWidth, tables};
})()
"""


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """The demo's four benchmarks on this machine plus cloud, on-prem and unpriced offerings, collected and reported."""
    tmp = tmp_path_factory.mktemp("layout")
    src, out = tmp / "results", tmp / "report"
    store = open_store(str(src))
    for r in demo_like_results():
        store.put_bytes(result_key(r), result_bytes(r))
    assert main(["collect", "--results", str(src), "--table", str(out), "--json"]) == 0
    assert main(["report", "--table", str(out), "--out", str(out)]) == 0
    return out / "index.html"


def test_answer_first_and_no_table_cut_off_at_1366(report):
    with Browser(find_chromium(), width=WIDTH, height=HEIGHT) as browser:
        page, seen = browser.load(report.resolve().as_uri())
        try:
            layout = page.evaluate(LAYOUT_JS)
            browser.screenshot(page, report.parent / "screenshot-1366.png")
        finally:
            page.close()
    assert seen["problems"]["exceptions"] == [] and seen["problems"]["failed_requests"] == []
    assert layout["firstSection"] == "answer" and layout["beforeAnswer"] == [], layout
    assert layout["firstHeading"] == "The answer"
    assert layout["answerItems"] == 4  # one sentence per configuration of the demo-like data
    assert layout["viewport"] == WIDTH and layout["pageWidth"] <= WIDTH, layout["pageWidth"]
    assert len(layout["tables"]) >= 8
    for t in layout["tables"]:
        # every table sits in a container that would scroll sideways rather than cut it off...
        assert t["overflowX"] in ("auto", "scroll"), t
        # ...and at 1366 px none needs to: ids and notes wrap, so every table fits as it is
        assert t["scrollWidth"] <= t["clientWidth"], t
        # the container itself is inside the window, whatever the table does inside it
        assert t["boxRight"] <= WIDTH, t


def test_the_check_catches_a_table_that_runs_off(tmp_path):
    """The harness itself: a wide table in a plain div is reported as overflowing."""
    f = tmp_path / "wide.html"
    cells = "".join(f"<td>column-{i}-with-a-long-unbreakable-identifier</td>" for i in range(20))
    f.write_text(
        "<!DOCTYPE html><html><head><title>t</title></head><body><div style='width:600px'>"
        f"<table><tr>{cells}</tr></table></div></body></html>"
    )
    with Browser(find_chromium(), width=WIDTH, height=HEIGHT) as browser:
        page, _ = browser.load(f.as_uri())
        try:
            layout = page.evaluate(LAYOUT_JS)
        finally:
            page.close()
    (t,) = layout["tables"]
    assert t["scrollWidth"] > t["clientWidth"] and t["overflowX"] == "visible", t
    assert layout["firstSection"] is None


NOTES_JS = """
(() => Array.from(document.querySelectorAll('#ranked .notes')).map(n => {
  const box = n.getBoundingClientRect();
  const line = parseFloat(getComputedStyle(n).lineHeight) || 16;
  return {width: box.width, right: box.right, lines: box.height / line, text: n.textContent.length};
}))()
"""
LONG_NOTE = (
    "throughput not steady by the probe limit (time-limit): interval +/-18.4 %; the estimate is wide; "
    "excludes the time from the job's end to the machine's release (result upload, shutdown): not timed by "
    "this probe; the job's own clock left out 12.5% of the wall time (evaluation, say): rates are per wall second"
)


def test_the_bench_pages_notes_read_at_1366(tmp_path):
    """Long notes (why a probe was not steady) on a bench page at 1366 px: every note gets a readable width
    (never one letter per line), no table runs past its container, the page fits the window."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    from test_page import candidate, document

    from analysis.bench.page import write_page

    rows = [candidate(i, 2.0 + i, 3.0 + i, status="not-steady", reason=LONG_NOTE) for i in range(6)]
    rows[0]["offering"] = "aws/p4de.24xlarge-with-a-long-offering-name"
    page_file = write_page(document(rows), tmp_path)
    with Browser(find_chromium(), width=WIDTH, height=HEIGHT) as browser:
        page, seen = browser.load(page_file.resolve().as_uri())
        try:
            layout, notes = page.evaluate(LAYOUT_JS), page.evaluate(NOTES_JS)
            browser.screenshot(page, tmp_path / "bench-1366.png")
        finally:
            page.close()
    assert seen["problems"]["exceptions"] == [] and seen["problems"]["failed_requests"] == []
    assert layout["pageWidth"] <= WIDTH, layout["pageWidth"]
    for t in layout["tables"]:
        assert t["scrollWidth"] <= t["clientWidth"] and t["boxRight"] <= WIDTH, t
    assert len(notes) == len(rows)
    for note in notes:
        # at least 60 characters' width (0.82em text, about 6 px a character) and never past the window
        assert note["width"] >= 360 and note["right"] <= WIDTH, note
        assert note["lines"] <= 6, note
