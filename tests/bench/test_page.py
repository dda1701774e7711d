"""analysis.bench.page: the bench answer as one self-contained HTML page."""

from __future__ import annotations

import base64
import re
from html.parser import HTMLParser

import matplotlib.pyplot as plt
import pytest

from analysis.bench.answer import answer
from analysis.bench.page import DPI, LABEL_POINTS, spans_decades, write_page
from analysis.report.plots import place_numbers

BASIS = {
    "overhead_seconds": "measured",
    "samples_per_second": "measured",
    "est_hours": "extrapolated",
    "est_usd": "extrapolated",
}


def candidate(i: int, hours: float, cost: float | None, **extra) -> dict:
    rate = 1_000_000 / (hours * 3600)
    row = {
        "offering": f"aws/type-{i}",
        "name": f"aws-type-{i}",
        "kind": "cloud",
        "market": "on-demand",
        "status": "done",
        "reason": None,
        "overhead_seconds": 240.0 + i,
        "samples_per_second": rate,
        "samples_per_second_low": rate * 0.95,
        "samples_per_second_high": rate * 1.05,
        "est_hours": hours,
        "est_hours_low": hours * 0.95,
        "est_hours_high": hours * 1.05,
        "est_usd": cost,
        "est_usd_low": None if cost is None else cost * 0.95,
        "est_usd_high": None if cost is None else cost * 1.05,
        "probe_usd": 0.25 + i / 100,
        "basis": BASIS,
    }
    return row | extra


def document(rows: list[dict], **limits) -> dict:
    limits = {"deadline_hours": None, "budget_usd": None} | limits
    total = sum(r.get("probe_usd") or 0 for r in rows)
    return {
        "task": "train.yaml",
        "work_samples": 1_000_000,
        "candidates": rows,
        "answer": answer(rows, **limits),
        "probe_total_usd": total,
    }


class _Parsed(HTMLParser):
    """Tags and text of a page, to check it is well formed enough and what it says."""

    def __init__(self):
        super().__init__()
        self.tags: list[str] = []
        self.text: list[str] = []
        self.images: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag == "img":
            self.images.append(dict(attrs)["src"])

    def handle_data(self, data):
        self.text.append(data)


def _parse(path) -> _Parsed:
    parsed = _Parsed()
    parsed.feed(path.read_text(encoding="utf-8"))
    return parsed


def _png(parsed: _Parsed) -> bytes:
    (src,) = parsed.images
    assert src.startswith("data:image/png;base64,")
    return base64.b64decode(src.split(",", 1)[1])


def test_one_candidate(tmp_path):
    doc = document([candidate(1, 3.0, 6.0)])
    path = write_page(doc, tmp_path / "out")
    assert path == tmp_path / "out" / "index.html"
    parsed = _parse(path)
    text = " ".join(parsed.text)
    assert doc["answer"]["sentence"] in text
    assert _png(parsed).startswith(b"\x89PNG")
    assert "3.00 (2.85-3.15) h" in text and "6.00 (5.70-6.30)" in text
    assert "script" not in parsed.tags
    assert "Task train.yaml (1,000,000 samples in the whole job)." in text


def test_fourteen_candidates_numbered_in_rank_order(tmp_path):
    rows = [candidate(i, 0.5 + i * 3.7, 2.0 + (13 - i) * 1.3 + (i % 3)) for i in range(14)]
    doc = document(rows, deadline_hours=20.0, budget_usd=12.0)
    html_text = write_page(doc, tmp_path).read_text(encoding="utf-8")
    ranked = [r["name"] for r in doc["answer"]["ranked"]]
    numbers = re.findall(r'<td class="num">(\d+)</td>\s*<td>aws/type-(\d+)</td>', html_text)
    assert [int(n) for n, _ in numbers] == list(range(1, 15))
    assert [f"aws-type-{i}" for _, i in numbers] == ranked
    assert _png(_parse(tmp_path / "index.html")).startswith(b"\x89PNG")


def test_each_figure_marked_measured_or_extrapolated(tmp_path):
    html_text = write_page(document([candidate(1, 3.0, 6.0)]), tmp_path).read_text(encoding="utf-8")
    row = html_text[html_text.index('<tr class="frontier">') :]
    row = row[: row.index("</tr>")]
    marks = re.findall(r'<span class="basis (\w+)"', row)
    assert marks == ["measured", "measured", "extrapolated", "extrapolated"]


def test_hostile_names_are_escaped(tmp_path):
    hostile = "<script>alert('x')</script>"
    rows = [
        candidate(1, 3.0, 6.0, offering=f"aws/{hostile}", notes=[f"note {hostile}"]),
        {"offering": "gcp/<img src=x onerror=alert(1)>", "name": "n", "status": "failed", "reason": f"quota {hostile}"},
    ]
    doc = document(rows) | {"task": f"task {hostile}.yaml"}
    path = write_page(doc, tmp_path)
    parsed = _parse(path)
    assert "script" not in parsed.tags
    assert len(parsed.images) == 1  # the chart only, not the hostile <img>
    raw = path.read_text(encoding="utf-8")
    assert "&lt;script&gt;" in raw and "<script>" not in raw
    assert "onerror=alert(1)&gt;" in raw


def test_no_priced_candidate_no_chart(tmp_path):
    rows = [candidate(1, 3.0, None, kind="local", offering="local/this-machine", name="local")]
    parsed = _parse(write_page(document(rows), tmp_path))
    text = " ".join(parsed.text)
    assert parsed.images == []
    assert "Not drawn: no candidate has both an estimated time and a price" in text
    assert "local/this-machine: timed, but no hourly price" in text


def test_probe_costs_and_unmeasured_listed(tmp_path):
    failed = {
        "offering": "gcp/g2-standard-4",
        "name": "g2",
        "status": "failed",
        "reason": "no L4 quota",
        "probe_usd": 0.1,
    }
    doc = document([candidate(1, 3.0, 6.0), failed])
    text = " ".join(_parse(write_page(doc, tmp_path)).text)
    assert "gcp/g2-standard-4: no L4 quota" in text
    assert "All probes together: USD 0.36." in text  # 0.26 + 0.10


@pytest.mark.parametrize(
    ("values", "log"), [([1.0, 9.9], False), ([1.0, 10.5], True), ([0.0, 100.0], False), ([3.0, 3.0], False)]
)
def test_log_axes_only_past_a_decade(values, log):
    assert spans_decades(values) is log


def test_numbers_do_not_overlap_even_when_markers_crowd():
    fig, ax = plt.subplots(figsize=(8, 5), dpi=DPI)
    xs = [10.0 + i * 0.01 for i in range(14)]
    ys = [5.0 + (i % 2) * 0.01 for i in range(14)]
    ax.plot(xs, ys, "o")
    ax.set_xlim(0, 20)
    ax.set_ylim(0, 10)
    boxes = place_numbers(ax, list(zip(xs, ys)), [str(i + 1) for i in range(14)], LABEL_POINTS)
    plt.close(fig)
    assert len(boxes) == 14
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            assert not (a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]), (a, b)


def test_numbers_stay_inside_the_axes_when_points_sit_in_its_corners():
    fig, ax = plt.subplots(figsize=(8, 5), dpi=DPI)
    ax.set_xlim(0, 20)
    ax.set_ylim(0, 10)
    corners = [(19.9, 9.9), (0.1, 9.9), (19.9, 0.1), (0.1, 0.1)]
    boxes = place_numbers(ax, corners, ["1", "2", "3", "4"], LABEL_POINTS)
    left, bottom, right, top = ax.bbox.extents
    plt.close(fig)
    assert all(left <= b[0] and b[2] <= right and bottom <= b[1] and b[3] <= top for b in boxes), boxes
