"""The charts' stand-in (tests/chart_content.py) that page comparisons rely on:
the same chart gives the same bytes, a chart that shows anything else does not."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
from chart_content import STAND_IN, charts_described, content_png  # noqa: E402


def _chart(heights=(1.0, 2.5), title="cost", labels=("a", "b"), colour="tab:blue", note="1"):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4, 3))
    ax.barh(list(labels), list(heights), color=colour)
    ax.set_title(title)
    ax.set_xscale("log")
    ax.annotate(note, (heights[0], 0))
    return fig


def test_the_same_chart_gives_the_same_stand_in():
    first = content_png(_chart())
    assert first.startswith(STAND_IN) and first == content_png(_chart())
    assert content_png(_chart(heights=(1.0, 2.5 + 1e-12))) == first  # a sum taken in another order


@pytest.mark.parametrize(
    "changed",
    [
        {"heights": (1.0, 2.6)},
        {"title": "cost per hour"},
        {"labels": ("a", "c")},
        {"colour": "tab:red"},
        {"note": "2"},
    ],
    ids=["a value", "the title", "a tick label", "a colour", "a placed number"],
)
def test_a_chart_that_shows_anything_else_gives_another_stand_in(changed):
    assert content_png(_chart(**changed)) != content_png(_chart())


def test_the_stand_in_replaces_the_reports_rasteriser_only_within():
    import analysis.report.plots as plots

    real = plots.to_png
    with charts_described():
        assert plots.to_png is content_png
    assert plots.to_png is real
