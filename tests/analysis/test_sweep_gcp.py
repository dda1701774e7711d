"""The GCP leak sweeper against a fake Compute Engine v1 REST API on loopback.

There is no Compute emulator, so a small HTTP server speaks the two calls the
sweeper makes (instances aggregatedList with filter and paging, instances.delete);
the sweeper is pointed at it through gcloud's CLOUDSDK_API_ENDPOINT_OVERRIDES_COMPUTE.
"""

from __future__ import annotations

import json
import threading
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import pytest

from analysis.cli import main
from infra import gcp
from infra.gcp import sweep as sweep_gcp

NOW = datetime(2024, 5, 1, 12, 0, tzinfo=timezone.utc)


def gcp_label_deadline(when: datetime) -> str:
    """The expires-at label as the launcher writes it from the deadline's RFC 3339 time."""
    return gcp.deadline_tag(when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))


PAST = gcp_label_deadline(NOW - timedelta(minutes=1))
FUTURE = gcp_label_deadline(NOW + timedelta(hours=3))
PROJECT = "gpubench-test"


class FakeCompute:
    """instances in zones; aggregatedList pages by maxResults and honours `labels.K:*` filters."""

    def __init__(self):
        self.instances: dict[str, dict[str, dict]] = {}  # zone -> name -> instance
        self.deleted: list[tuple[str, str]] = []
        self.requests: list[tuple[str, str]] = []
        self.fail_delete: set[str] = set()
        self.warnings: dict[str, dict] = {}  # scope -> warning, e.g. an unreachable zone
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    @property
    def root(self):
        return f"http://127.0.0.1:{self._server.server_address[1]}/compute/v1/"

    def add(self, zone, name, labels=None, status="RUNNING"):
        self.instances.setdefault(zone, {})[name] = {
            "name": name,
            "status": status,
            "labels": labels or {},
            "zone": f"{self.root}projects/{PROJECT}/zones/{zone}",
        }

    def names(self):
        return {n for z in self.instances.values() for n in z}

    def stop(self):
        self._server.shutdown()
        self._server.server_close()

    def _listing(self, query):
        flt = query.get("filter", [""])[0]
        rows = []
        for zone, insts in sorted(self.instances.items()):
            for inst in insts.values():
                if flt.endswith(":*") and flt[len("labels.") : -2] not in inst["labels"]:
                    continue
                rows.append((zone, inst))
        size = int(query.get("maxResults", ["500"])[0])
        start = int(query.get("pageToken", ["0"])[0])
        items: dict = {}
        for zone, inst in rows[start : start + size]:
            items.setdefault(f"zones/{zone}", {"instances": []})["instances"].append(inst)
        items["regions/us-central1"] = {"warning": {"code": "NO_RESULTS_ON_PAGE", "message": "none"}}
        for scope, warning in self.warnings.items():
            items.setdefault(scope, {})["warning"] = warning
        doc = {"kind": "compute#instanceAggregatedList", "items": items}
        if start + size < len(rows):
            doc["nextPageToken"] = str(start + size)
        return doc

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, code, doc):
                body = json.dumps(doc).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                url = urlparse(self.path)
                fake.requests.append(("GET", self.path))
                if url.path == f"/compute/v1/projects/{PROJECT}/aggregated/instances":
                    return self._send(200, fake._listing(parse_qs(url.query)))
                self._send(404, {"error": {"code": 404, "message": f"not found: {url.path}"}})

            def do_DELETE(self):
                fake.requests.append(("DELETE", self.path))
                parts = urlparse(self.path).path.split("/")  # /compute/v1/projects/P/zones/Z/instances/N
                zone, name = parts[6], parts[8]
                if name in fake.fail_delete:
                    return self._send(
                        403, {"error": {"code": 403, "message": "Required 'compute.instances.delete' permission"}}
                    )
                if name not in fake.instances.get(zone, {}):
                    return self._send(404, {"error": {"code": 404, "message": f"instance {name} not found"}})
                del fake.instances[zone][name]
                fake.deleted.append((zone, name))
                self._send(200, {"kind": "compute#operation", "operationType": "delete", "status": "RUNNING"})

        return Handler


@pytest.fixture
def compute(monkeypatch):
    fake = FakeCompute()
    monkeypatch.setenv("CLOUDSDK_API_ENDPOINT_OVERRIDES_COMPUTE", fake.root)
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", PROJECT)
    yield fake
    fake.stop()


def labels(expires, stack="gcp-v100-1x"):
    """The launcher's labels; stack=None leaves the stack label out (someone else's VM)."""
    own = {
        "gpubench-expires-at": expires,
        "gpubench-offering": "gcp_n1-standard-8_1xv100",
        "gpubench-project": "gpubench",
    }
    return own | ({"gpubench-stack": stack} if stack is not None else {})


def populate(fake):
    fake.add("us-central1-a", "expired-1", labels(PAST))
    fake.add("europe-west4-b", "expired-stopped", labels(PAST, "gcp-v100-8x-spot"), status="TERMINATED")
    fake.add("us-central1-a", "fresh", labels(FUTURE))
    fake.add("us-central1-b", "untagged", {"team": "prod"})
    fake.add("us-central1-b", "garbled", labels("tomorrow"))


def sweep_cli(capsys, *extra):
    code = main(["sweep", "--provider", "gcp", "--now", NOW.isoformat(), "--json", "--yes", *extra])
    return code, json.loads(capsys.readouterr().out)


def test_deletes_exactly_the_expired_labelled_vms(compute, capsys):
    populate(compute)
    code, doc = sweep_cli(capsys)
    assert code == 0 and doc["ok"] is True
    assert sorted(compute.deleted) == [("europe-west4-b", "expired-stopped"), ("us-central1-a", "expired-1")]
    assert compute.names() == {"fresh", "untagged", "garbled"}
    assert doc["counts"] == {"terminated": 2, "kept": 1, "left-alone": 1}
    acted = {a["id"]: a for a in doc["actions"]}
    assert "untagged" not in acted
    assert acted["expired-1"]["stack"] == "gcp-v100-1x" and acted["expired-1"]["region"] == "us-central1-a"
    listing = [p for m, p in compute.requests if m == "GET"]
    # one listing per rule: expires-at, and recurring launches' max-hours (test_sweep_recurring.py)
    assert all("filter=labels.gpubench-expires-at%3A%2A" in p or "max-hours" in p for p in listing)


def test_dry_run_deletes_nothing(compute, capsys):
    populate(compute)
    code, doc = sweep_cli(capsys, "--dry-run")
    assert code == 0 and compute.deleted == [] and len(compute.names()) == 5
    assert doc["counts"] == {"would-terminate": 2, "kept": 1, "left-alone": 1}


def test_region_filter_and_paging(compute):
    for i in range(7):
        compute.add("us-central1-a", f"old-{i}", labels(PAST))
    compute.add("europe-west4-b", "old-eu", labels(PAST))
    actions = sweep_gcp.sweep(["us-central1"], NOW, page_size=3)
    assert sorted(a.id for a in actions) == [f"old-{i}" for i in range(7)]
    assert compute.names() == {"old-eu"}
    assert sum(m == "GET" and "expires-at" in p for m, p in compute.requests) == 3  # 8 VMs, 3 per page


def test_a_failed_delete_is_reported_and_the_sweep_goes_on(compute, capsys):
    populate(compute)
    compute.fail_delete.add("expired-1")
    code, doc = sweep_cli(capsys)
    acted = {a["id"]: a for a in doc["actions"]}
    assert code == 1 and acted["expired-1"]["action"] == "failed" and "403" in acted["expired-1"]["error"]
    assert acted["expired-stopped"]["action"] == "terminated"


def test_missing_project_is_a_clear_error(compute, monkeypatch, capsys):
    for name in sweep_gcp.PROJECT_ENVS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr("google.auth.default", lambda *a, **k: (None, None))
    assert main(["sweep", "--provider", "gcp"]) == 3  # a setting is missing (like credentials), not a bad argument
    assert "--project" in capsys.readouterr().err


def test_acts_only_on_what_is_ours(compute, capsys):
    """Foreign (expiry label, no stack label) and malformed-label VMs are left alone with the reason; a label that
    used to crash the parser (hour 25) stops neither the zone nor the sweep."""
    compute.add("us-central1-a", "ours", labels(PAST))
    compute.add("us-central1-a", "foreign", labels(PAST, stack=None))
    compute.add("us-central1-b", "crashy", labels("20240501t250000z"))
    compute.add("us-central1-b", "rfc3339", labels("2024-05-01t11_00_00z"))
    compute.add("us-central1-c", "after-crashy", labels(PAST))
    code, doc = sweep_cli(capsys)
    acted = {a["id"]: a for a in doc["actions"]}
    assert code == 0, doc
    assert compute.names() == {"foreign", "crashy", "rfc3339"}
    assert acted["foreign"]["action"] == "left-alone" and acted["foreign"]["reason"] == "no gpubench-stack tag"
    for name in ("crashy", "rfc3339"):
        assert acted[name]["action"] == "left-alone"
        assert acted[name]["reason"].startswith("expires-at not in the launcher's format"), acted[name]
    assert acted["after-crashy"]["action"] == "terminated"


def test_an_unreachable_zone_is_a_failure_and_the_rest_is_swept(compute, capsys):
    compute.add("us-central1-a", "ours", labels(PAST))
    compute.warnings["zones/asia-east1-a"] = {"code": "UNREACHABLE", "message": "zone asia-east1-a is unreachable"}
    code, doc = sweep_cli(capsys)
    acted = {a["id"]: a for a in doc["actions"]}
    assert code == 1 and doc["ok"] is False
    assert acted["asia-east1-a"]["action"] == "failed" and "UNREACHABLE" in acted["asia-east1-a"]["error"]
    assert acted["ours"]["action"] == "terminated" and "ours" not in compute.names()
