"""GCP sweep: delete VMs of ours (infra.cloudparts.Marks.classify) whose `gpubench-expires-at` has passed
(max_run_duration deletes them first; this catches the rest), a TERMINATED one too: its disk still bills.
Compute Engine REST v1 through google-auth's AuthorizedSession: one aggregated list (every zone, filtered
server-side on the label and re-checked here), then `instances.delete` per VM. The API root honours
`CLOUDSDK_API_ENDPOINT_OVERRIDES_COMPUTE`; an http:// loopback root (an emulator) goes without credentials.
The folder's lowest module: label names, deadline format and the one authorized-session maker.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from urllib.parse import quote

from infra import sweep as common
from infra.cloudparts import Marks, SweepRun
from infra.sweep import Action
from infra.tags import MAX_HOURS_KEY, BadDeadline, parse_deadline
from payload.timestamps import stamp


def label_value(value: str) -> str:
    """GCP label values allow only [a-z0-9_-] (max 63): lowercase, everything else becomes '_'.

    So `gcp/n1-standard-8+1xv100` -> `gcp_n1-standard-8_1xv100` and `3.06` -> `3_06`."""
    return re.sub(r"[^a-z0-9_-]", "_", value.lower())[:63]


# Labels: keys `gpubench-<key>` (labels allow no ':' and no uppercase); the deadline in ISO 8601 basic form.
MARKS = Marks("gcp", "gpubench-", re.compile(r"\d{8}t\d{6}z", re.ASCII), lambda when: stamp(when).lower(), label_value)
STACK_TAG, EXPIRES_TAG = MARKS.key("stack"), MARKS.key("expires-at")
MAX_HOURS_LABEL = MARKS.key(MAX_HOURS_KEY)  # recurring launches (infra/gcp/component.py GcpRecurring)
tags, is_launcher_deadline, owner, classify = MARKS.tags, MARKS.is_launcher_deadline, MARKS.owner, MARKS.classify
format_deadline = MARKS.format_deadline

DEFAULT_ROOT = "https://compute.googleapis.com/compute/v1/"
ENDPOINT_ENV = "CLOUDSDK_API_ENDPOINT_OVERRIDES_COMPUTE"
PROJECT_ENVS = ("GOOGLE_CLOUD_PROJECT", "CLOUDSDK_CORE_PROJECT", "GCLOUD_PROJECT")
SCOPES = ["https://www.googleapis.com/auth/compute"]
LABEL_FILTER = f"labels.{EXPIRES_TAG}:*"
RECURRING_FILTER = f"labels.{MAX_HOURS_LABEL}:*"
CREDENTIALS_FIX = (
    "Run `gcloud auth application-default login` or set GOOGLE_APPLICATION_CREDENTIALS to a service account key."
)


def deadline_tag(rfc3339: str) -> str:
    """`2024-05-01T12:00:00Z` -> `20240501t120000z` (ISO 8601 basic form, lowercased)."""
    return rfc3339.replace("-", "").replace(":", "").lower()


class GcpSweepError(common.NoAccess):
    """Missing project or credentials, or the API refused; the message says which."""


def region_of_zone(zone: str) -> str:
    """us-central1-a -> us-central1."""
    return zone.rsplit("-", 1)[0]


def api_root() -> str:
    root = os.environ.get(ENDPOINT_ENV) or DEFAULT_ROOT
    return root if root.endswith("/") else root + "/"


def authorized_session(root: str = "", scopes=SCOPES, error=GcpSweepError, fix=CREDENTIALS_FIX, api_key=None):
    """A requests session with the application default credentials; a plain one for an http://
    loopback root (an emulator: no IAM) or with `api_key` (sent as `key`). No credentials: `error`."""
    import requests  # heavy: the cloud SDK's transport; the provider interface stays light

    if root.startswith("http://") or api_key:
        session = requests.Session()
        session.params = {"key": api_key} if api_key else {}
        return session
    import google.auth  # heavy: the cloud SDK
    from google.auth.transport.requests import AuthorizedSession  # heavy: the cloud SDK

    try:
        credentials, _ = google.auth.default(scopes=list(scopes))
    except google.auth.exceptions.DefaultCredentialsError as exc:
        raise error(f"no Google credentials found ({exc}). {fix}") from None
    return AuthorizedSession(credentials)


def default_project() -> str:
    for name in PROJECT_ENVS:
        if os.environ.get(name):
            return os.environ[name]
    try:
        import google.auth  # heavy: the cloud SDK

        _, project = google.auth.default()
    except Exception:  # noqa: BLE001 - reported below
        project = None
    if not project:
        raise GcpSweepError("no GCP project: pass --project ID or set GOOGLE_CLOUD_PROJECT")
    return project


def _check(resp) -> dict:
    if resp.status_code >= 400:
        try:
            message = resp.json().get("error", {}).get("message") or resp.text
        except ValueError:
            message = resp.text
        raise GcpSweepError(f"HTTP {resp.status_code} from {resp.request.method} {resp.url}: {message.strip()[:500]}")
    return resp.json() if resp.content else {}


# Scope warnings that only say a zone has nothing; any other warning means the zone was not read.
EMPTY_SCOPE = frozenset({"NO_RESULTS_ON_PAGE"})


def labelled_instances(
    http, root: str, project: str, page_size: int | None = None, label_filter: str = LABEL_FILTER
) -> Iterator[tuple[str, dict]]:
    """(zone, instance) for every VM with the label of `label_filter`, across all zones, every page; a
    zone the API could not read comes out as (zone, {"_unreadable": why}), reported, never missed."""
    url = f"{root}projects/{quote(project)}/aggregated/instances"
    params: dict = {"filter": label_filter, "returnPartialSuccess": "true"}
    if page_size:
        params["maxResults"] = str(page_size)
    while True:
        page = _check(http.get(url, params=params, timeout=60))
        for scope, body in (page.get("items") or {}).items():
            zone = str(scope).rsplit("/", 1)[-1]
            if not isinstance(body, dict):
                yield zone, {"_unreadable": f"scope entry is {type(body).__name__}, not an object"}
                continue
            warning = body.get("warning") or {}
            if isinstance(warning, dict) and warning.get("code") and warning.get("code") not in EMPTY_SCOPE:
                yield zone, {"_unreadable": f"{warning.get('code')}: {warning.get('message', '')}".strip()}
            for inst in body.get("instances") or []:
                yield zone, inst
        for scope in page.get("unreachables") or []:
            yield str(scope).rsplit("/", 1)[-1], {"_unreadable": "unreachable (partial listing)"}
        token = page.get("nextPageToken")
        if not token:
            return
        params["pageToken"] = token


def sweep(
    regions: Iterable[str] | None,
    now: datetime,
    dry_run: bool = False,
    project: str | None = None,
    http=None,
    root: str | None = None,
    page_size: int | None = None,
    log: Callable[[str], None] = lambda line: None,
) -> list[Action]:
    """Sweep every zone (or only zones of `regions`) of one project: one Action per labelled VM or unreadable zone."""
    mine = owner()  # a bad GPUBENCH_PROJECT_ID stops here, before any call
    root = root or api_root()
    project = project or default_project()
    http = http or authorized_session(root)
    delete = lambda zone, name: _check(  # noqa: E731
        http.delete(f"{root}projects/{quote(project)}/zones/{quote(zone)}/instances/{quote(name)}", timeout=60)
    )
    run = SweepRun(MARKS, now, dry_run, mine, delete, log=log)
    wanted = set(regions or [])
    out: list[Action] = []
    # list every page before deleting anything: deleting while paging can skip VMs
    for zone, inst in list(labelled_instances(http, root, project, page_size)):
        if wanted and not {zone, region_of_zone(zone)} & wanted:
            continue
        try:
            outcome = _one(run, zone, inst)
        except Exception as exc:  # noqa: BLE001 - one unreadable VM never stops the rest
            name = inst.get("name", "?") if isinstance(inst, dict) else "?"
            outcome = Action("gcp", zone, "instance", str(name), "failed", reason="reading the VM", error=str(exc))
        if outcome is not None:
            out.append(outcome)
    # VMs a recurring job launched that outlived their own deadline: GCP's max_run_duration deletes
    # them first; this is the backstop (a failed deletion, a VM stopped rather than deleted).
    for zone, inst in list(labelled_instances(http, root, project, page_size, RECURRING_FILTER)):
        labels = inst.get("labels") or {}
        if "_unreadable" in inst or not isinstance(labels, dict):
            continue  # the expires-at pass already reported an unreadable zone or VM
        if wanted and not {zone, region_of_zone(zone)} & wanted:
            continue
        if EXPIRES_TAG not in labels and labels.get(STACK_TAG) and MAX_HOURS_LABEL in labels:
            out.append(run.recurring(zone, inst.get("name", "?"), labels, _created(inst)))
    return out


def _created(inst: dict) -> datetime | None:
    try:
        return parse_deadline(inst.get("creationTimestamp", ""))
    except BadDeadline:
        return None


def _one(run: SweepRun, zone: str, inst: dict) -> Action | None:
    """What happens to one listed VM (or the failure of one unreadable zone)."""
    if "_unreadable" in inst:
        return Action("gcp", zone, "zone", zone, "failed", reason="listing the zone", error=inst["_unreadable"])
    labels = inst.get("labels") or {}
    if not isinstance(labels, dict):
        return Action("gcp", zone, "instance", str(inst.get("name", "?")), "left-alone", reason="labels unreadable")
    if EXPIRES_TAG not in labels:
        return None  # the server filter is a hint; the label decides
    verdict, reason = classify(labels, run.now, run.mine)
    return run.decide("instance", zone, str(inst.get("name", "?")), verdict, labels, reason)
