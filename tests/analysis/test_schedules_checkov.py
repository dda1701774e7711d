"""checkov's Kubernetes checks on every manifest under schedules/, offline.

Every Kubernetes manifest the project ships (the teardown and campaign CronJobs,
their namespace and service accounts) must pass all of checkov's Kubernetes
checks, except those listed in ALLOWED_FAILURES with the reason. checkov runs
with --skip-download (no Bridgecrew/Prisma platform calls) and is found as a
console script; under CI=true a missing checkov fails (tests/servers.py find_tool).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml
from servers import find_tool

ROOT = Path(__file__).resolve().parents[2]
SCHEDULES = ROOT / "schedules"
INSTALL = "make test installs it in .venv-tools/checkov (kept out of the dev extra: it pins boto3 and packaging below the project's)"

# check id -> why it may fail. Empty: every check passes; a new failure must be fixed or justified here.
ALLOWED_FAILURES: dict[str, str] = {}


def kubernetes_manifests() -> list[Path]:
    """Every YAML file under schedules/ whose documents have apiVersion and kind."""
    found = []
    for path in sorted(SCHEDULES.rglob("*.y*ml")):
        docs = [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict)]
        if docs and all("apiVersion" in d and "kind" in d for d in docs):
            found.append(path)
    return found


def failed_checks(path: Path) -> tuple[list[dict], int]:
    """(failed checks, resources scanned) from checkov's JSON report on one file."""
    checkov = find_tool("checkov", INSTALL)
    env = {**os.environ, "BC_SKIP_MAPPING": "TRUE", "CHECKOV_RUN_SCA_PACKAGE_SCAN_V2": "false"}
    proc = subprocess.run(
        [checkov, "-f", str(path), "--framework", "kubernetes", "--skip-download", "--compact", "-o", "json"],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert proc.returncode in (0, 1), f"checkov failed on {path}: {proc.stderr[-2000:]}"
    report = json.loads(proc.stdout)
    reports = report if isinstance(report, list) else [report]
    failed = [c for r in reports for c in (r.get("results") or {}).get("failed_checks", [])]
    scanned = sum((r.get("summary") or r).get("resource_count", 0) for r in reports)
    return failed, scanned


def test_the_manifests_are_found():
    names = {p.relative_to(SCHEDULES).as_posix() for p in kubernetes_manifests()}
    assert {"kubernetes/cronjob.yaml", "campaign/cronjob.yaml"} <= names


@pytest.mark.parametrize("path", kubernetes_manifests(), ids=lambda p: p.relative_to(SCHEDULES).as_posix())
def test_checkov_kubernetes_checks_pass(path):
    failed, scanned = failed_checks(path)
    assert scanned >= 3, f"{path}: checkov scanned {scanned} resources (namespace, service account, CronJob)"
    unexpected = sorted(
        {(c["check_id"], c["check_name"], c["resource"]) for c in failed if c["check_id"] not in ALLOWED_FAILURES}
    )
    assert not unexpected, f"{path.relative_to(ROOT)} fails checkov: {unexpected}"


def pod_spec(path: Path) -> dict:
    (job,) = [d for d in yaml.safe_load_all(path.read_text()) if d["kind"] == "CronJob"]
    return job["spec"]["jobTemplate"]["spec"]["template"]["spec"]


@pytest.mark.parametrize("path", kubernetes_manifests(), ids=lambda p: p.relative_to(SCHEDULES).as_posix())
def test_secrets_are_files_and_images_are_pinned(path):
    """What checkov cannot see: the secret reaches the job only as a read-only volume the
    job's group can read, and every image names a digest (the README says to pin it)."""
    pod = pod_spec(path)
    for container in pod["containers"] + pod.get("initContainers", []):
        assert "envFrom" not in container, container["name"]
        assert not any("valueFrom" in e for e in container.get("env", [])), container["name"]
        assert "@sha256:" in container["image"], container["image"]
    (secret,) = [v for v in pod["volumes"] if "secret" in v]
    assert secret["secret"]["defaultMode"] == 0o440
    mounts = {m["name"]: m for c in pod["containers"] for m in c["volumeMounts"]}
    assert mounts[secret["name"]]["readOnly"] is True
    assert pod["automountServiceAccountToken"] is False and pod["securityContext"]["runAsUser"] >= 10000
    assert "Pinning the images" in (SCHEDULES / "README.md").read_text()
