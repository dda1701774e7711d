"""Before a first real `pulumi up` on GCP: credentials and project, the APIs the stacks need, the GPU
quotas, by read-only REST calls; each a row {"check", "ok", "detail"} whose detail names the fix.
`http` is a requests-like session (the real one carries the application default credentials)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any
from urllib.parse import quote

from infra.cloudparts import row
from infra.gcp.sweep import _check, api_root, authorized_session, default_project
from infra.stacks import quota_row

SERVICE_USAGE = "https://serviceusage.googleapis.com/v1/"

# The APIs a project must enable for each kind of stack. A benchmark stack makes a network, a
# VM, a service account and its bucket grants; a recurring one adds a custom role and a project
# binding (Resource Manager) and a Cloud Scheduler job; a sweeper deploys a Cloud Run function,
# which needs Cloud Functions, Cloud Build, Artifact Registry and Cloud Run ("Before you begin",
# https://cloud.google.com/functions/docs/create-deploy-gcloud).
_VM_APIS = ("compute.googleapis.com", "iam.googleapis.com", "storage.googleapis.com")
_SCHEDULED = ("cloudresourcemanager.googleapis.com", "cloudscheduler.googleapis.com")
_FUNCTION = ("cloudfunctions.googleapis.com", "cloudbuild.googleapis.com", "artifactregistry.googleapis.com")
REQUIRED_APIS: dict[str, tuple[str, ...]] = {
    "benchmark": _VM_APIS,
    "results": ("storage.googleapis.com",),
    "recurring": (*_VM_APIS, *_SCHEDULED),
    "sweeper": ("iam.googleapis.com", "storage.googleapis.com", *_SCHEDULED, *_FUNCTION, "run.googleapis.com"),
}

# Regional GPU quota metrics (Compute Engine, "GPU quota",
# https://cloud.google.com/compute/resource-usage#gpu_quota): `NVIDIA_<model>_GPUS`, Spot VMs
# `PREEMPTIBLE_NVIDIA_<model>_GPUS` (A100-80GB: NVIDIA_A100_80GB_GPUS); and the project-wide
# GPUS_ALL_REGIONS. H200 and B200 as public tooling that checks A3 Ultra and A4 quotas reads them
# (NVIDIA_H200_GPUS, NVIDIA_B200_GPUS and their PREEMPTIBLE_ forms), not yet in the API enum's docs.
QUOTA_MODELS = ("K80", "P100", "V100", "T4", "P4", "L4", "A100", "H100", "A100-80GB", "H200", "B200")
# Machine types whose GPUs count against a quota of their own: A3 Mega's H100s.
MACHINE_METRICS = {"a3-megagpu-": "NVIDIA_H100_MEGA_GPUS"}
ALL_REGIONS = "GPUS_ALL_REGIONS"


def gpu_metric(offering: Any, market: str) -> str | None:
    """The regional quota metric a stack's GPUs count against (None: no GPU)."""
    metric = next((m for p, m in MACHINE_METRICS.items() if offering.instance_type.startswith(p)), None)
    if metric is None and offering.gpu_model in QUOTA_MODELS:
        metric = f"NVIDIA_{offering.gpu_model.replace('-', '_')}_GPUS"
    if metric is None:
        return None
    return f"PREEMPTIBLE_{metric}" if market == "spot" else metric


# Read-only access to every API the checks read (Service Usage, Compute); the sweep's session
# carries the Compute scope only.
READ_SCOPES = ["https://www.googleapis.com/auth/cloud-platform.read-only"]


def _get(http, url: str, **params) -> dict:
    return _check(http.get(url, params=params or None, timeout=30))


def enabled_apis(http, project: str, root: str = SERVICE_USAGE) -> set[str]:
    names: set[str] = set()
    token = None
    while True:
        params = {"filter": "state:ENABLED", "pageSize": "200", **({"pageToken": token} if token else {})}
        page = _get(http, f"{root}projects/{quote(project)}/services", **params)
        names.update(
            s.get("config", {}).get("name") or s.get("name", "").rsplit("/", 1)[-1] for s in page.get("services", [])
        )
        token = page.get("nextPageToken")
        if not token:
            return names


def apis_check(http, project: str, kinds: set[str], root: str = SERVICE_USAGE) -> dict:
    name = f"gcp apis {project}"
    wanted = sorted({api for kind in kinds for api in REQUIRED_APIS.get(kind, ())})
    try:
        enabled = enabled_apis(http, project, root)
    except Exception as exc:  # noqa: BLE001 - reported with the fix
        return row(
            name,
            False,
            f"could not list the enabled APIs ({str(exc)[:200]}); "
            f"`gcloud services enable serviceusage.googleapis.com --project {project}` and "
            "`gcloud auth application-default login`",
        )
    missing = [a for a in wanted if a not in enabled]
    if missing:
        return row(
            name,
            False,
            f"not enabled: {', '.join(missing)}: `gcloud services enable {' '.join(missing)} --project {project}`",
        )
    return row(name, True, f"enabled: {', '.join(wanted)}")


def quota_rows(http, url: str, project: str, where: str, needs: dict[str, list[tuple[int, str]]], strict: bool):
    """One row per GPU quota metric ((GPUs, stack), smallest first) among the quotas at `url`: a
    region's, or the project's (`where` "global", for GPUS_ALL_REGIONS)."""
    suffix = "" if where == "global" else f" {where}"
    try:
        limits = {q["metric"]: float(q.get("limit", 0)) for q in _get(http, url).get("quotas", []) if "metric" in q}
    except Exception as exc:  # noqa: BLE001
        name, what = (f"gcp quota {where}", "the region's quotas") if suffix else (f"gcp quota {ALL_REGIONS}", "it")
        return [row(name, False, f"could not read {what} ({str(exc)[:200]})")]
    console = f"https://console.cloud.google.com/iam-admin/quotas?project={project}"
    return [
        quota_row(
            f"gcp quota {metric}{suffix}",
            "limit",
            limits.get(metric, 0.0),
            stacks,
            strict,
            "GPUs",
            lambda want, metric=metric: f"request it at {console} (metric {metric}, {where})",
        )
        for metric, stacks in sorted(needs.items())
    ]


def project_of(needs: list[Any]) -> str | None:
    """The project the stacks name (gcp:project), else the one of the credentials or environment."""
    named = sorted({n.project for n in needs if n.project})
    if named:
        return named[0]
    try:
        return default_project()
    except Exception:  # noqa: BLE001 - None: reported by the caller with the fix
        return None


def checks(
    needs: Iterable[Any], strict: bool = False, http=None, root: str | None = None, usage_root: str = SERVICE_USAGE
) -> list[dict]:
    """Every row for these stacks (infra.stacks.StackNeed): credentials and project, APIs, quotas."""
    needs = list(needs)
    root = root or api_root()
    project = project_of(needs)
    if not project:
        return [
            row(
                "gcp project",
                False,
                "no project: `pulumi config set gcp:project MY-PROJECT --stack <stack>` on your GCP stacks, "
                "or set GOOGLE_CLOUD_PROJECT",
            )
        ]
    try:
        http = http or authorized_session(root, READ_SCOPES)
        _get(http, f"{root}projects/{quote(project)}")
    except Exception as exc:  # noqa: BLE001 - credentials, project or API: reported
        return [
            row(
                "gcp project",
                False,
                f"{project}: {str(exc)[:240]}; `gcloud auth application-default login`, and "
                f"`gcloud services enable compute.googleapis.com --project {project}`",
            )
        ]
    out = [row("gcp project", True, f"{project} answers with your credentials")]
    out.append(apis_check(http, project, {n.kind for n in needs} or {"benchmark"}, usage_root))
    by_region: dict[str, dict[str, list[tuple[int, str]]]] = {}
    for n in needs:
        metric = n.offering is not None and gpu_metric(n.offering, n.market)
        if metric:
            by_region.setdefault(n.region, {}).setdefault(metric, []).append((n.offering.gpu_count, n.stack))
    for region, metrics in sorted(by_region.items()):
        url = f"{root}projects/{quote(project)}/regions/{quote(region)}"
        out += quota_rows(http, url, project, region, {m: sorted(s) for m, s in metrics.items()}, strict)
    if by_region:
        stacks = sorted({s for metrics in by_region.values() for ss in metrics.values() for s in ss})
        out += quota_rows(http, f"{root}projects/{quote(project)}", project, "global", {ALL_REGIONS: stacks}, strict)
    return out
