"""Is this machine ready? `gpubench check`: the Pulumi CLI, each cloud's credentials, the extras, the
results buckets and, asked about a cloud, what a first run needs of the account (account_checks).
Reads only. `launch_checks`, run before a launch asks anything, adds the Pulumi login, an identity
call per cloud and a write of one object to the results bucket."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Sequence
from datetime import datetime, timezone
from fnmatch import fnmatchcase

from infra import clouds, stacks
from infra.catalog import load_catalog
from payload import extras
from payload.exitcodes import UsageError
from payload.storage import StorageError, open_store
from payload.yamlfile import quote

_ANALYSIS = ("pandas", "pyarrow", "matplotlib", "jinja2", "jsonschema_rs", "deltalake")
EXTRAS = {  # extra -> (what it is for, modules it brings): `gpubench check EXTRA` asks about one
    "payload": ("run benchmarks, read and write buckets", ("boto3", "google.cloud.storage", "jsonschema_rs")),
    "infra": ("preview and launch stacks, SSH hosts", ("pulumi", "pulumi_aws", "pulumi_gcp", "fabric")),
    "analysis": ("collect, report, teardown, sweep, prices", _ANALYSIS),
    "demo": (
        "`gpubench demo` (make demo): a short suite on this machine's CPU, collected and reported locally",
        (*_ANALYSIS, "tensorflow"),
    ),
    "tf": ("the built-in TensorFlow benchmarks", ("tensorflow",)),
}
# pyproject.toml's other extras, and why `check` does not ask about them by name.
NOT_CHECKED = {
    "payload-legacy": "the payload's pins for Python 3.8 containers (payload/Dockerfile.legacy), not this machine",
    "tf-cpu": "the CPU build of TensorFlow: `check tf` checks the same module",
    "dev": "the test suite (make setup)",
}
LOGIN_FIX = "`pulumi login` (Pulumi Cloud), or `pulumi login --local` / `pulumi login s3://BUCKET` (self-managed)"
PASSPHRASE_VARS = ("PULUMI_CONFIG_PASSPHRASE", "PULUMI_CONFIG_PASSPHRASE_FILE")


def _row(check: str, ok: bool, detail: str) -> dict:
    return {"check": check, "ok": ok, "detail": detail}


def pulumi_check() -> dict:
    exe = shutil.which("pulumi")
    if exe is None:
        return _row(
            "pulumi CLI",
            False,
            "not on PATH: `curl -fsSL https://get.pulumi.com | sh` "
            "(up, bench's cloud probes, destroy, teardown and campaigns need it)",
        )
    try:
        version = subprocess.run([exe, "version"], capture_output=True, text=True, timeout=20).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        return _row("pulumi CLI", False, f"{exe} does not run: {exc}")
    return _row("pulumi CLI", True, f"{exe} {version}")


def extras_checks() -> list[dict]:
    out = []
    for extra, (purpose, modules) in EXTRAS.items():
        missing = [m for m in modules if not extras.installed(m)]
        detail = purpose if not missing else f"missing {', '.join(missing)}: pip install 'gpubench[{extra}]'"
        out.append(_row(f"extra [{extra}]", not missing, detail))
    return out


def bucket_check(url: str) -> dict:
    try:
        next(iter(open_store(url).list("runs/")), None)
    except extras.MissingExtra as exc:
        return _row(f"bucket {url}", False, str(exc))
    except (StorageError, ImportError, ValueError, OSError) as exc:
        return _row(f"bucket {url}", False, f"does not answer: {exc}")
    return _row(f"bucket {url}", True, "lists runs/")


def pulumi_login_check(cwd=None) -> dict:
    """Whether the Pulumi CLI is logged in (`pulumi whoami`, in the project so its `backend:` counts); a
    self-managed backend also needs its secrets' passphrase in the environment, since a new stack cannot
    ask for it (https://www.pulumi.com/docs/iac/concepts/secrets/)."""
    name = "pulumi login"
    exe = shutil.which("pulumi")
    if exe is None:
        return _row(name, False, "needs the Pulumi CLI (see the line above)")
    try:
        done = subprocess.run(
            [exe, "whoami", "--verbose", "--non-interactive"],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=cwd,
            env={**os.environ, "PULUMI_SKIP_UPDATE_CHECK": "true"},
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return _row(name, False, f"`pulumi whoami` did not run ({exc}); {LOGIN_FIX}")
    if done.returncode != 0:
        lines = (done.stderr or done.stdout).strip().splitlines()
        said = quote(lines[-1] if lines else f"exit {done.returncode}", 160)
        return _row(name, False, f"not logged in ({said}): {LOGIN_FIX}")
    fields = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in done.stdout.splitlines()) if v}
    url = fields.get("backend url", "an unnamed backend")
    who = f" as {fields['user']}" if fields.get("user") else ""
    if not url.startswith("https://") and not any(v in os.environ for v in PASSPHRASE_VARS):  # "" is a passphrase
        return _row(
            name,
            False,
            f"logged in to {url}{who}, a self-managed backend, but new stacks there need the passphrase of "
            "their secrets: set PULUMI_CONFIG_PASSPHRASE (or PULUMI_CONFIG_PASSPHRASE_FILE)",
        )
    return _row(name, True, f"logged in to {url}{who}")


def identity_check(provider: str) -> dict:
    """The cloud's credentials found (as `check` finds them) and then accepted by an identity call."""
    name = f"{provider} credentials"
    cloud = clouds.get(provider)
    found = cloud.credentials_status()
    if not found["ok"]:
        return {"check": name, **found}
    try:
        return _row(name, True, cloud.identity())
    except ImportError as exc:
        return _row(name, False, f"missing {exc.name}: pip install 'gpubench[payload]'")
    except Exception as exc:  # noqa: BLE001 - each SDK raises its own types; the message says which
        return _row(name, False, f"refused ({quote(str(exc), 200)}): {cloud.IDENTITY_FIX}")


def bucket_write_check(url: str, key: str) -> dict:
    """The bucket takes a write: one small object created at `key` (write-once, never replaced)."""
    name = f"bucket {url}"
    body = json.dumps({"check": "write", "at": datetime.now(timezone.utc).isoformat()}).encode()
    try:
        open_store(url, retries=2, backoff=0.2, write_once=True).put_bytes(key, body, "application/json")
    except extras.MissingExtra as exc:
        return _row(name, False, str(exc))
    except Exception as exc:  # noqa: BLE001 - StorageError and each SDK's own
        return _row(
            name,
            False,
            f"cannot write {key} ({quote(str(exc), 200)}): check the URL and that your credentials may "
            "write to it (`pulumi stack output resultsUrl -s aws-results` prints the results bucket)",
        )
    return _row(name, True, f"wrote {key}")


def launch_checks(
    providers: Sequence[str], results_url: str, probe_key: str, *, pulumi: bool = True, cwd=None
) -> list[dict]:
    """What launching on `providers` and reading results from `results_url` needs: the Pulumi CLI and login
    (`pulumi`), the infra and payload extras, each cloud's credentials accepted (the bucket's too), and a
    write to the bucket, tried only with its cloud's credentials in place (never a request that must fail)."""
    checks = [pulumi_check(), pulumi_login_check(cwd)] if pulumi else []
    checks += [c for c in extras_checks() if c["check"] in ("extra [infra]", "extra [payload]")]
    owner = clouds.of_results(results_url)  # whose credentials read and write the bucket
    identities = {p: identity_check(p) for p in sorted({*providers, *([owner.NAME] if owner else [])})}
    checks += identities.values()
    if owner and not identities[owner.NAME]["ok"]:
        detail = f"not tried: writing to it needs the {owner.NAME} credentials (above)"
        return [*checks, _row(f"bucket {results_url}", False, detail)]
    return [*checks, bucket_write_check(results_url, probe_key)]


def account_checks(
    cloud: str, patterns: Sequence[str] = (), stacks_dir=None, catalog=None, needs=None, **clients
) -> list[dict]:
    """What a first real run on `cloud` needs of the account (infra/<cloud>/readiness.py), each row "for"
    that cloud; read-only API calls. The stacks are those matching `patterns` (globs), each of which must
    fit its quota, else every stack file of the cloud not retired, the smallest of each quota enough;
    `needs` (infra.stacks.StackNeed, e.g. a bench's probes) replaces the stack files, all strict."""
    strict = bool(patterns) or needs is not None
    if needs is None:
        folder = stacks_dir or stacks.STACKS_DIR
        names = [n for n in stacks.stack_names(folder) if not patterns or any(fnmatchcase(n, p) for p in patterns)]
        needs = stacks.stack_needs(cloud, names, catalog or load_catalog(), folder)
        if not patterns:
            needs = [n for n in needs if n.offering is None or not n.offering.retired]
        elif not needs:
            raise UsageError(f"no {cloud} stack matches {', '.join(patterns)}; list them with `gpubench stacks --list`")
    rows = clouds.get(cloud).account_checks(list(needs), strict=strict, **clients)
    return [{**row, "for": cloud} for row in rows]


def readiness_checks(results_urls: Sequence[str] = ()) -> list[dict]:
    """Every check: the Pulumi CLI, each cloud's credentials, the extras, then each bucket."""
    credentials = [{"check": f"{c.NAME} credentials", **c.credentials_status()} for c in clouds.all_clouds()]
    return [pulumi_check(), *credentials, *extras_checks(), *(bucket_check(u) for u in results_urls)]


def verdict(checks: Sequence[dict], asked: Sequence[str], providers: Sequence[str]) -> tuple[list[str], list[str]]:
    """(ready, not ready) among what was asked; nothing asked means "at least one cloud". A cloud needs the
    Pulumi CLI, the infra extra, its credentials and every row "for" it ("for": "clouds", the Pulumi
    backend, is every cloud's); an extra needs itself. A bucket that does not answer is judged apart."""
    ok = {c["check"]: c["ok"] for c in checks}
    needs = {c: ["pulumi CLI", "extra [infra]", f"{c} credentials"] for c in providers}
    needs.update({extra: [f"extra [{extra}]"] for extra in EXTRAS})
    for c in checks:
        for cloud in providers if c.get("for") == "clouds" else [c["for"]] if c.get("for") in providers else []:
            needs[cloud].append(c["check"])
    wanted = list(asked) or list(providers)
    ready = [w for w in wanted if all(ok.get(n, False) for n in needs[w])]
    if not asked:  # any one cloud will do
        return ready, ([] if ready else wanted)
    return ready, [w for w in wanted if w not in ready]
