"""GCP (Compute Engine, Cloud Storage, IAM, Cloud Scheduler): the provider interface of `infra.clouds`, light
enough for the base install and the sweeper function; the other modules load when used (infra.cloudparts)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from infra.cloudparts import deferred, imported, stack_region
from infra.gcp.sweep import (  # noqa: F401  (the interface's label names and deadline format live with the sweep)
    EXPIRES_TAG,
    STACK_TAG,
    deadline_tag,
    format_deadline,
    is_launcher_deadline,
    label_value,
    region_of_zone,
    tags,
)
from infra.gcp.sweep import sweep as sweep_expired  # noqa: F401  (the interface's sweep_expired)

NAME = "gcp"
RESULTS_SCHEME = "gs://"
CONFIG_KEYS = ("project", "region", "zone")
DEFAULT_REGION = "us-central1"
REGION_PATTERN = re.compile(r"^[a-z]+-[a-z]+\d+$")
ZONE_PATTERN = re.compile(r"[a-z]+-[a-z]+\d+-[a-z]")

# (kind, Compute Engine error codes / phrases) in a failed `pulumi up` transcript.
FAILURE_PATTERNS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("quota", ("QUOTA_EXCEEDED", "Quota '[A-Z0-9_]+' exceeded", "quotaExceeded", "exceeds your current quota")),
    ("no-capacity", ("ZONE_RESOURCE_POOL_EXHAUSTED", "STOCKOUT")),
    (
        "gpu-not-in-zone",
        (
            "acceleratorTypes/[^' ]+' was not found",
            "Invalid value for field 'resource.guestAccelerators",
            "does not exist in zone",
            "not available in zone",
            "machineTypes/[^' ]+' was not found",
        ),
    ),
)


def stack_keys(offering: Any) -> dict[str, Any]:
    zone = offering.zones[0]
    return {"gcp:zone": zone, "gcp:region": region_of_zone(zone)}


def stack_base(offering: Any) -> str:
    """gcp-<gpu>-<N>x: n1-standard-8 + 1 x V100 -> gcp-v100-1x; a machine
    type with no GPU is named after itself: gcp-cpu-n1-highcpu-16."""
    if not offering.gpu_model:
        return f"gcp-cpu-{offering.instance_type}"
    return f"gcp-{offering.gpu_model.lower()}-{offering.gpu_count}x"


region = stack_region("gcp:region", region_of_zone)
components = imported("infra.gcp.component", "COMPONENTS")
price_tables = deferred("infra.gcp.prices", "price_tables")
account_checks = deferred("infra.gcp.readiness", "checks")  # what a first real run needs of the account
preview_mocks = imported("infra.gcp.mocks")  # mock answers for the offline preview (infra/render.py)
parse_offerings = deferred("infra.gcp.catalog", "parse_offerings")
# Price API clients by name, for `analysis.price.refresh.Clients`.
CLIENTS = {"gcp_session": deferred("infra.gcp.prices", "default_session")}


def spot_history():
    """GCP publishes no spot price history: spot runs are priced from the catalog snapshot of their date."""
    return None


def credentials_status() -> dict:
    """{"ok", "detail"}: a credentials file from GOOGLE_APPLICATION_CREDENTIALS or gcloud's
    application-default login. Files only: google.auth.default() would probe the GCE metadata
    server (a request to 169.254.169.254) when neither exists."""
    named = os.environ.get("GOOGLE_APPLICATION_CREDENTIALS")
    if named:
        ok = Path(named).is_file()
        return {"ok": ok, "detail": f"GOOGLE_APPLICATION_CREDENTIALS={named}" + ("" if ok else " does not exist")}
    config = Path(os.environ.get("CLOUDSDK_CONFIG") or Path.home() / ".config" / "gcloud")
    adc = config / "application_default_credentials.json"
    if adc.is_file():
        return {"ok": True, "detail": f"application default credentials ({adc})"}
    return {
        "ok": False,
        "detail": "none found: `gcloud auth application-default login` (a VM's service account is not probed)",
    }


IDENTITY_FIX = "`gcloud auth application-default login`"


def identity() -> str:
    """google.auth.default(): the application default credentials load (called only once a credentials
    file exists, so it never asks the metadata server of a machine that is not a VM)."""
    import google.auth  # heavy: the cloud SDK

    _, project = google.auth.default()
    return f"application default credentials load (project {project or 'not set'})"


# What a Cloud Run function (Python) needs beside the sweep modules: `main.py` at the source
# root (entry point `sweep`) and the requirements it installs (infra/sweeper_function.py packages them).
SWEEPER_FUNCTION_FILES = {
    "main.py": "from infra.sweeper_function import http as sweep  # noqa: F401\n",
    "requirements.txt": "functions-framework>=3,<4\ngoogle-auth>=2\nrequests>=2\n",
}
