"""GCP sweep: delete VMs labelled `gpubench-expires-at` whose deadline has passed.

Talks to the Compute Engine REST API (v1) with google-auth's AuthorizedSession,
both already installed with google-cloud-storage, so the analysis extra needs no
new package. One aggregated list (every zone, filtered server-side on the
label's presence and re-checked here), then `instances.delete` per expired VM.
GCP's own `max_run_duration` deletes VMs at the deadline; this catches the rest.
A VM in status TERMINATED (stopped) still bills for its disks, so it goes too.

The API root honours gcloud's `CLOUDSDK_API_ENDPOINT_OVERRIDES_COMPUTE`; an
http:// loopback root is used without credentials, like an emulator.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from urllib.parse import quote

from infra.gcp import EXPIRES_TAG as GCP_EXPIRES_LABEL
from infra.gcp import STACK_TAG as GCP_STACK_LABEL
from infra.sweep import Action
from infra.tags import MAX_HOURS_KEY, BadDeadline, parse_deadline, recurring_deadline

DEFAULT_ROOT = "https://compute.googleapis.com/compute/v1/"
ENDPOINT_ENV = "CLOUDSDK_API_ENDPOINT_OVERRIDES_COMPUTE"
PROJECT_ENVS = ("GOOGLE_CLOUD_PROJECT", "CLOUDSDK_CORE_PROJECT", "GCLOUD_PROJECT")
SCOPES = ["https://www.googleapis.com/auth/compute"]
LABEL_FILTER = f"labels.{GCP_EXPIRES_LABEL}:*"
MAX_HOURS_LABEL = f"gpubench-{MAX_HOURS_KEY}"  # recurring launches (infra/gcp/component.py GcpRecurring)
RECURRING_FILTER = f"labels.{MAX_HOURS_LABEL}:*"


class GcpSweepError(RuntimeError):
    """Missing project or credentials; the message says how to provide them."""


def api_root() -> str:
    root = os.environ.get(ENDPOINT_ENV) or DEFAULT_ROOT
    return root if root.endswith("/") else root + "/"


def authorized_session(root: str):
    import requests

    if root.startswith("http://"):
        return requests.Session()  # loopback emulator / fake: no IAM
    import google.auth
    from google.auth.exceptions import DefaultCredentialsError
    from google.auth.transport.requests import AuthorizedSession

    try:
        credentials, _ = google.auth.default(scopes=SCOPES)
    except DefaultCredentialsError as exc:
        raise GcpSweepError(
            f"no Google credentials ({exc}); run `gcloud auth application-default login` "
            "or set GOOGLE_APPLICATION_CREDENTIALS to a service account key"
        ) from None
    return AuthorizedSession(credentials)


def default_project() -> str:
    for name in PROJECT_ENVS:
        if os.environ.get(name):
            return os.environ[name]
    try:
        import google.auth

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


def labelled_instances(
    http, root: str, project: str, page_size: int | None = None, label_filter: str = LABEL_FILTER
) -> Iterator[tuple[str, dict]]:
    """(zone, instance) for every VM with the expires-at label, across all zones, every page."""
    url = f"{root}projects/{quote(project)}/aggregated/instances"
    params: dict = {"filter": label_filter, "returnPartialSuccess": "true"}
    if page_size:
        params["maxResults"] = str(page_size)
    while True:
        page = _check(http.get(url, params=params, timeout=60))
        for scope, body in (page.get("items") or {}).items():
            for inst in body.get("instances") or []:
                yield scope.rsplit("/", 1)[-1], inst
        token = page.get("nextPageToken")
        if not token:
            return
        params["pageToken"] = token


def classify(labels: dict, now: datetime) -> tuple[str, str]:
    raw = (labels or {}).get(GCP_EXPIRES_LABEL, "")
    try:
        deadline = parse_deadline(raw)
    except BadDeadline as exc:
        return "skipped", str(exc)
    return (
        ("expired", f"expired at {deadline.isoformat()}")
        if deadline <= now
        else ("kept", f"expires at {deadline.isoformat()}")
    )


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
    """Sweep every zone (or only zones of `regions`) of one project."""
    root = root or api_root()
    project = project or default_project()
    http = http or authorized_session(root)
    wanted = set(regions or [])
    out: list[Action] = []
    # list every page before deleting anything: deleting while paging can skip VMs
    for zone, inst in list(labelled_instances(http, root, project, page_size)):
        region = zone.rsplit("-", 1)[0]
        if wanted and region not in wanted and zone not in wanted:
            continue
        labels = inst.get("labels") or {}
        if GCP_EXPIRES_LABEL not in labels:
            continue  # the server filter is a hint; the label decides
        verdict, reason = classify(labels, now)
        name = inst.get("name", "?")
        stack, expires = labels.get(GCP_STACK_LABEL), labels.get(GCP_EXPIRES_LABEL)

        def record(action, error=None, zone=zone, name=name, stack=stack, expires=expires, reason=reason):
            out.append(Action("gcp", zone, "instance", name, action, stack, expires, reason, error))

        if verdict != "expired":
            record(verdict)
        elif dry_run:
            record("would-terminate")
        else:
            try:
                _check(
                    http.delete(
                        f"{root}projects/{quote(project)}/zones/{quote(zone)}/instances/{quote(name)}", timeout=60
                    )
                )
                record("terminated")
                log(f"[gcp {zone}] deleting {name} ({labels.get(GCP_STACK_LABEL)}, {reason})")
            except Exception as exc:  # noqa: BLE001 - keep sweeping
                record("failed", str(exc))
    out.extend(sweep_recurring(http, root, project, wanted, now, dry_run, page_size, log))
    return out


def sweep_recurring(http, root, project, wanted, now, dry_run, page_size=None, log=lambda line: None) -> list[Action]:
    """VMs a recurring job launched that outlived their own deadline. GCP's
    max_run_duration deletes them first; this is the backstop (a failed
    deletion, a VM stopped rather than deleted). Ours only with the stack label
    and a launcher-format max-hours and no expires-at label; deadline =
    creationTimestamp + max-hours + grace."""
    out: list[Action] = []
    for zone, inst in list(labelled_instances(http, root, project, page_size, RECURRING_FILTER)):
        region = zone.rsplit("-", 1)[0]
        labels = inst.get("labels") or {}
        if wanted and region not in wanted and zone not in wanted:
            continue
        if GCP_EXPIRES_LABEL in labels or not labels.get(GCP_STACK_LABEL) or MAX_HOURS_LABEL not in labels:
            continue
        name, stack = inst.get("name", "?"), labels.get(GCP_STACK_LABEL)
        try:
            created = parse_deadline(inst.get("creationTimestamp", ""))
        except BadDeadline:
            created = None
        deadline = recurring_deadline(created, labels[MAX_HOURS_LABEL]) if created else None

        def record(action, reason, error=None, zone=zone, name=name, stack=stack, deadline=deadline):
            shown = deadline.strftime("%Y%m%dt%H%M%Sz") if deadline else None
            out.append(Action("gcp", zone, "instance", name, action, stack, shown, reason, error))

        if deadline is None:
            record("skipped", f"no readable creationTimestamp or launcher max-hours ({labels[MAX_HOURS_LABEL]!r})")
            continue
        reason = f"recurring launch at {created.isoformat()} + {MAX_HOURS_LABEL} {labels[MAX_HOURS_LABEL]} + grace"
        if deadline > now:
            record("kept", reason)
        elif dry_run:
            record("would-terminate", reason)
        else:
            try:
                url = f"{root}projects/{quote(project)}/zones/{quote(zone)}/instances/{quote(name)}"
                _check(http.delete(url, timeout=60))
                record("terminated", reason)
                log(f"[gcp {zone}] deleting {name} ({stack}, {reason})")
            except Exception as exc:  # noqa: BLE001 - keep sweeping
                record("failed", reason, str(exc))
    return out
