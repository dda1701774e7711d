"""`check`: is this machine ready? The Pulumi CLI, each cloud's credentials, the installed
extras and (with --results) whether a results bucket answers. Reads only; changes nothing."""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys

from analysis.output import emit_json, print_table
from payload import exitcodes

EXTRAS = {  # extra -> (what it is for, modules it brings)
    "payload": ("run benchmarks, read and write buckets", ("boto3", "google.cloud.storage", "jsonschema")),
    "infra": ("preview and launch stacks, SSH hosts", ("pulumi", "pulumi_aws", "pulumi_gcp", "fabric")),
    "analysis": (
        "collect, report, teardown, sweep, prices",
        ("pandas", "pyarrow", "matplotlib", "jinja2", "jsonschema_rs"),
    ),
    "tf": ("the built-in TensorFlow benchmarks", ("tensorflow",)),
}


def register(sub) -> None:
    p = sub.add_parser(
        "check",
        help="check the Pulumi CLI, credentials, extras and buckets (read-only)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--results",
        action="append",
        default=[],
        metavar="URL",
        help="also check that this results bucket answers (s3://, gs://, file://; repeatable)",
    )
    p.add_argument("--json", action="store_true", help="print a JSON list of checks")
    p.set_defaults(func=run)


def _pulumi() -> dict:
    exe = shutil.which("pulumi")
    if exe is None:
        return {
            "check": "pulumi CLI",
            "ok": False,
            "detail": "not on PATH: `curl -fsSL https://get.pulumi.com | sh` "
            "(only up/destroy/refresh/teardown/campaign need it)",
        }
    try:
        version = subprocess.run([exe, "version"], capture_output=True, text=True, timeout=20).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        return {"check": "pulumi CLI", "ok": False, "detail": f"{exe} does not run: {exc}"}
    return {"check": "pulumi CLI", "ok": True, "detail": f"{exe} {version}"}


def _extras() -> list[dict]:
    from payload.extras import installed

    out = []
    for extra, (purpose, modules) in EXTRAS.items():
        missing = [m for m in modules if not installed(m)]
        detail = purpose if not missing else f"missing {', '.join(missing)}: pip install 'gpubench[{extra}]'"
        out.append({"check": f"extra [{extra}]", "ok": not missing, "detail": detail})
    return out


def _credentials() -> list[dict]:
    from infra import clouds

    return [{"check": f"{c.NAME} credentials", **c.credentials_status()} for c in clouds.all_clouds()]


def _bucket(url: str) -> dict:
    from payload.extras import MissingExtra

    try:
        from payload.storage import StorageError, open_store

        store = open_store(url)
        next(iter(store.list("runs/")), None)
    except MissingExtra as exc:
        return {"check": f"bucket {url}", "ok": False, "detail": str(exc)}
    except (StorageError, ImportError, ValueError, OSError) as exc:
        return {"check": f"bucket {url}", "ok": False, "detail": f"does not answer: {exc}"}
    return {"check": f"bucket {url}", "ok": True, "detail": "lists runs/"}


def run(args) -> int:
    checks = [_pulumi(), *_credentials(), *_extras(), *(_bucket(u) for u in args.results)]
    if args.json:
        emit_json(checks)
    else:
        print_table(
            ((c["check"], "ok" if c["ok"] else "MISSING", c["detail"]) for c in checks), ("check", "status", "detail")
        )
    if any(not c["ok"] for c in checks if c["check"].startswith("bucket")):
        return exitcodes.REMOTE
    if not all(c["ok"] for c in checks):
        print(
            "\nsome pieces are missing: each line says how to add it; what you have works without them", file=sys.stderr
        )
        return exitcodes.MISSING
    return exitcodes.OK
