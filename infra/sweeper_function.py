"""The leak sweep as a cloud function: AWS Lambda (`handler`), GCP Cloud Run (`http`, via main.py).

It runs `python -m analysis sweep`'s sweep with the environment the sweeper component sets
(GPUBENCH_SWEEP_PROVIDER, GPUBENCH_SWEEP_REGIONS, GPUBENCH_SWEEP_DRY_RUN; GCP: GOOGLE_CLOUD_PROJECT)
and returns JSON. `package()`: exactly the files it needs, zipped by the Pulumi program.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

from infra import clouds

ROOT = Path(__file__).resolve().parent.parent
# The modules the sweep imports, and nothing else (no Pulumi, no catalog).
MODULES = (
    "payload/__init__.py",
    "payload/exitcodes.py",
    "payload/timestamps.py",
    "infra/__init__.py",
    "infra/clouds.py",
    "infra/cloudparts.py",
    "infra/sweep.py",
    "infra/sweeper_function.py",
    "infra/tags.py",
    "infra/aws/__init__.py",
    "infra/aws/sweep.py",
    "infra/gcp/__init__.py",
    "infra/gcp/sweep.py",
)
ENTRY_POINT = "sweep"
LAMBDA_HANDLER = "infra.sweeper_function.handler"
# The AWS sweep waits at most 120 x 5 s for terminations before deleting security
# groups; the function's timeout leaves room for that.
TIMEOUT_S = 900


def package(provider: str) -> dict[str, bytes]:
    """archive path -> content, sorted; the same bytes for the same checkout."""
    files = {name: (ROOT / name).read_bytes() for name in MODULES}
    files.update({name: text.encode() for name, text in clouds.get(provider).SWEEPER_FUNCTION_FILES.items()})
    return dict(sorted(files.items()))


def package_hash(files: dict[str, bytes]) -> str:
    digest = hashlib.sha256()
    for name, body in sorted(files.items()):
        digest.update(name.encode() + b"\0" + hashlib.sha256(body).digest())
    return digest.hexdigest()


def run_sweep(env=None, now: datetime | None = None, **kw) -> dict:
    """Sweep as the environment says; the result document `analysis sweep --json` prints, minus counts' order."""
    env = os.environ if env is None else env
    provider = env.get("GPUBENCH_SWEEP_PROVIDER", "")
    if not clouds.is_cloud(provider):
        raise ValueError(f"GPUBENCH_SWEEP_PROVIDER={provider!r}; set it to one of {', '.join(clouds.NAMES)}")
    regions = [r.strip() for r in env.get("GPUBENCH_SWEEP_REGIONS", "").split(",") if r.strip()]
    dry_run = env.get("GPUBENCH_SWEEP_DRY_RUN", "false").lower() == "true"
    now = now or datetime.now(timezone.utc)
    actions = clouds.get(provider).sweep_expired(regions or None, now, dry_run, **kw)
    counts = dict(Counter(a.action for a in actions))
    return {
        "provider": provider,
        "now": now.isoformat(),
        "dry_run": dry_run,
        "regions": regions,
        "counts": counts,
        "actions": [a.to_dict() for a in actions],
        "ok": all(a.ok for a in actions),
    }


def handler(event, context):
    """AWS Lambda entry (EventBridge Scheduler invokes it with an empty event)."""
    result = run_sweep()
    print(json.dumps({"counts": result["counts"], "ok": result["ok"]}))  # one line in CloudWatch Logs
    return result


def http(request):
    """Cloud Run function entry (Cloud Scheduler POSTs to it): the result as JSON, 500 if an action failed."""
    try:
        result = run_sweep()
    except Exception as exc:  # noqa: BLE001 - the scheduler's log shows the message, not a traceback
        return json.dumps({"ok": False, "error": str(exc)}), 500, {"Content-Type": "application/json"}
    return json.dumps(result), (200 if result["ok"] else 500), {"Content-Type": "application/json"}
