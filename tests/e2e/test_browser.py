"""The demo's report in a real browser: Debian's chromium, headless, loads
report/index.html from disk, and every plot must have rendered at the size of
its PNG with no resource failing to load. The screenshot is kept next to the
report (report/screenshot.png) for a human to look at."""

from __future__ import annotations

import base64
import re

import pytest
from chromium_cdp import Browser, find_chromium, png_size

WIDTH = 1200


@pytest.fixture(scope="module")
def browser():
    with Browser(find_chromium(), width=WIDTH) as b:
        yield b


def _pngs_in(html: str) -> list[bytes]:
    return [base64.b64decode(d) for d in re.findall(r'<img [^>]*src="data:image/png;base64,([A-Za-z0-9+/=]+)"', html)]


def test_report_renders_every_plot_and_loads_nothing_broken(browser, demo_first):
    index = demo_first.report / "index.html"
    text = index.read_text(encoding="utf-8")
    pngs = _pngs_in(text)
    # the demo runs one offering: the seed charts, which compare offerings, are left out
    # without a word; the answer's chart and the reference chart put this machine beside the studies
    assert len(pngs) >= 2, "the demo's report should embed the answer's chart and the reference chart"
    assert "Not drawn" not in text and "nothing to compare" not in text
    page, seen = browser.load(index.resolve().as_uri())
    try:
        shot = browser.screenshot(page, demo_first.report / "screenshot.png")
    finally:
        page.close()

    assert seen["problems"] == {"failed_requests": [], "bad_responses": [], "exceptions": [], "console_errors": []}
    for res in seen["resources"]:  # a self-contained report fetches nothing; if it did, it must have worked
        assert res["status"] in (None, 0, 200), res
    assert seen["title"] == "gpubench report"
    assert "Reference: published measurements" in seen["headings"]

    images = seen["images"]
    assert len(images) == len(pngs)
    for img, data in zip(images, pngs):
        assert img["complete"] and img["naturalWidth"] > 0 and img["naturalHeight"] > 0, img
        assert (img["naturalWidth"], img["naturalHeight"]) == png_size(data), img["alt"]
    assert any(i["alt"].startswith("This report's runs beside the studies") for i in images)

    raw = shot.read_bytes()
    w, h = png_size(raw)
    assert w >= WIDTH and h > 2000, (w, h)  # the whole page, not just the viewport
    import matplotlib.image

    pixels = matplotlib.image.imread(str(shot))
    assert pixels.std() > 0.05, "the screenshot is blank"
    # the orange bars of this machine in the reference chart made it to the screen
    r, g, b = pixels[..., 0], pixels[..., 1], pixels[..., 2]
    assert ((r > 0.95) & (g > 0.4) & (g < 0.6) & (b < 0.15)).sum() > 200


def test_the_check_catches_a_broken_image(browser, tmp_path):
    """The harness itself: a missing image file is reported, not silently passed."""
    page_file = tmp_path / "broken.html"
    page_file.write_text(
        '<!DOCTYPE html><html><head><title>t</title></head><body><img alt="gone" src="missing.png"></body></html>'
    )
    page, seen = browser.load(page_file.as_uri())
    page.close()
    assert seen["problems"]["failed_requests"], seen["problems"]
    assert seen["images"][0]["naturalWidth"] == 0


def test_missing_chromium_fails_under_ci_and_skips_elsewhere(monkeypatch):
    import shutil

    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true"):
        find_chromium()
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match="apt-get install -y chromium"):
        find_chromium()
