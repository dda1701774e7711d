"""Headless Debian chromium driven over the DevTools protocol (CDP), for the
report's browser test: load a page from disk, record every failed request,
console error and exception, read what the page rendered, take a screenshot.

Only websocket-client is needed (no browser download: playwright's own
browsers cannot be fetched here). Under CI=true a missing chromium is a
failure, never a skip.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

from servers import missing_tool

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--remote-debugging-address=127.0.0.1",
    "--remote-debugging-port=0",
    "--hide-scrollbars",
)


def find_chromium() -> str:
    """Path of a chromium binary; skip the test without one (fail under CI=true)."""
    for name in CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    missing_tool("chromium is not installed (Debian: apt-get install -y chromium; .ci/run installs it)")


class CdpError(RuntimeError):
    pass


class Page:
    """One page target: send commands, collect events."""

    def __init__(self, ws_url: str):
        import websocket  # websocket-client (the dev extra)

        # No Origin header: chromium refuses DevTools websockets from unlisted origins.
        self.ws = websocket.create_connection(ws_url, timeout=30, suppress_origin=True)
        self.events: list[dict] = []
        self._id = 0

    def send(self, method: str, **params) -> dict:
        self._id += 1
        self.ws.send(json.dumps({"id": self._id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == self._id:
                if "error" in msg:
                    raise CdpError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            if "method" in msg:
                self.events.append(msg)

    def wait_for(self, method: str, timeout: float = 30.0) -> dict:
        deadline = time.monotonic() + timeout
        for ev in self.events:
            if ev["method"] == method:
                return ev
        while time.monotonic() < deadline:
            msg = json.loads(self.ws.recv())
            if "method" in msg:
                self.events.append(msg)
                if msg["method"] == method:
                    return msg
        raise CdpError(f"no {method} within {timeout} s")

    def evaluate(self, expression: str):
        out = self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in out:
            raise CdpError(f"page script failed: {out['exceptionDetails']}")
        return out["result"].get("value")

    def close(self) -> None:
        self.ws.close()


# What the page rendered: every <img> with its decoded size, every resource timing entry.
RENDERED_JS = """
(async () => {
  const imgs = Array.from(document.images);
  await Promise.all(imgs.map(i => i.decode().catch(() => null)));
  return {
    images: imgs.map(i => ({alt: i.alt, complete: i.complete, naturalWidth: i.naturalWidth,
                            naturalHeight: i.naturalHeight, src: i.src.slice(0, 40)})),
    resources: performance.getEntriesByType('resource').map(e => ({name: e.name.slice(0, 200),
                            status: e.responseStatus ?? null, size: e.transferSize})),
    headings: Array.from(document.querySelectorAll('h2')).map(h => h.textContent),
    title: document.title,
  };
})()
"""


class Browser:
    """chromium --headless with a fresh profile; `open(url)` returns a loaded Page and its problems."""

    def __init__(self, binary: str, width: int = 1200, height: int = 900):
        self.binary, self.width, self.height = binary, width, height
        self.profile = tempfile.mkdtemp(prefix="gpubench-chromium-")
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> Browser:
        self.proc = subprocess.Popen(
            [
                self.binary,
                *FLAGS,
                f"--user-data-dir={self.profile}",
                f"--window-size={self.width},{self.height}",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        port_file = Path(self.profile) / "DevToolsActivePort"
        deadline = time.monotonic() + 30
        while not port_file.exists() or not port_file.read_text().strip():
            if self.proc.poll() is not None:
                raise CdpError(f"chromium exited ({self.proc.returncode}): {self.proc.stderr.read().decode()[-2000:]}")
            if time.monotonic() > deadline:
                raise CdpError("chromium did not open its DevTools port within 30 s")
            time.sleep(0.05)
        self.port = int(port_file.read_text().split()[0])
        return self

    def __exit__(self, *exc) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        shutil.rmtree(self.profile, ignore_errors=True)

    def _page_ws(self) -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/json/list", timeout=10) as resp:
            targets = json.load(resp)
        pages = [t for t in targets if t.get("type") == "page"]
        if not pages:
            with urllib.request.urlopen(
                urllib.request.Request(f"http://127.0.0.1:{self.port}/json/new?about:blank", method="PUT"), timeout=10
            ) as resp:
                pages = [json.load(resp)]
        return pages[0]["webSocketDebuggerUrl"]

    def load(self, url: str) -> tuple[Page, dict]:
        """Navigate, wait for load, and return the page with what went wrong and what rendered."""
        page = Page(self._page_ws())
        for domain in ("Page", "Network", "Runtime", "Log"):
            page.send(f"{domain}.enable")
        page.send(
            "Emulation.setDeviceMetricsOverride",
            width=self.width,
            height=self.height,
            deviceScaleFactor=1,
            mobile=False,
        )
        nav = page.send("Page.navigate", url=url)
        if nav.get("errorText"):
            raise CdpError(f"navigating to {url}: {nav['errorText']}")
        page.wait_for("Page.loadEventFired")
        rendered = page.evaluate(RENDERED_JS)
        problems = {
            "failed_requests": [
                (e["params"].get("errorText"), e["params"].get("requestId"))
                for e in page.events
                if e["method"] == "Network.loadingFailed"
            ],
            "bad_responses": [
                (e["params"]["response"]["url"][:200], e["params"]["response"]["status"])
                for e in page.events
                if e["method"] == "Network.responseReceived" and e["params"]["response"].get("status", 200) >= 400
            ],
            "exceptions": [
                e["params"]["exceptionDetails"].get("text")
                for e in page.events
                if e["method"] == "Runtime.exceptionThrown"
            ],
            "console_errors": [
                e["params"]["entry"].get("text")
                for e in page.events
                if e["method"] == "Log.entryAdded" and e["params"]["entry"].get("level") == "error"
            ],
        }
        return page, {"problems": problems, **rendered}

    @staticmethod
    def screenshot(page: Page, path: Path) -> Path:
        """The whole page (not just the viewport) as PNG."""
        size = page.send("Page.getLayoutMetrics")["cssContentSize"]
        clip = {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}
        data = page.send("Page.captureScreenshot", format="png", clip=clip, captureBeyondViewport=True)["data"]
        path.write_bytes(base64.b64decode(data))
        return path


def png_size(data: bytes) -> tuple[int, int]:
    """(width, height) from a PNG's IHDR chunk."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR", "not a PNG"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
