"""Is this machine ready? The Pulumi CLI, each cloud's credentials, the installed extras and
whether results buckets answer; asked about a cloud, what a first real run needs of the account
too (account_checks: the account, network, GPU quotas, APIs) and the Pulumi backend. Reads only
(but for launch_checks' one test object); `gpubench check` prints these. A command about to
launch calls `launch_checks` to stop before it asks anything: that adds the Pulumi backend
login, an identity call per cloud (the credentials are not only present but accepted) and a
write of one object to the results bucket."""

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
from infra.conventions import UsageError
from payload import extras
from payload.storage import StorageError, open_store
from payload.yamlfile import quote

EXTRAS = {  # extra -> (what it is for, modules it brings): `gpubench check EXTRA` asks about one
    "payload": ("run benchmarks, read and write buckets", ("boto3", "google.cloud.storage", "jsonschema_rs")),
    "infra": ("preview and launch stacks, SSH hosts", ("pulumi", "pulumi_aws", "pulumi_gcp", "fabric")),
    "analysis": (
        "collect, report, teardown, sweep, prices",
        ("pandas", "pyarrow", "matplotlib", "jinja2", "jsonschema_rs", "deltalake"),
    ),
    "demo": (
        "`gpubench demo` (make demo): a short suite on this machine's CPU, collected and reported locally",
        ("pandas", "pyarrow", "matplotlib", "jinja2", "jsonschema_rs", "deltalake", "tensorflow"),
    ),
    "tf": ("the built-in TensorFlow benchmarks", ("tensorflow",)),
}
# pyproject.toml's other extras, and why `check` does not ask about them by name.
NOT_CHECKED = {
    "payload-legacy": "the payload's pins for Python 3.8 containers (payload/Dockerfile.legacy), not this machine",
    "tf-cpu": "the CPU build of TensorFlow: `check tf` checks the same module",
    "dev": "the test suite (make setup)",
}


def pulumi_check() -> dict:
    exe = shutil.which("pulumi")
    if exe is None:
        return {
            "check": "pulumi CLI",
            "ok": False,
            "detail": "not on PATH: `curl -fsSL https://get.pulumi.com | sh` "
            "(up, bench's cloud probes, destroy, teardown and campaigns need it)",
        }
    try:
        version = subprocess.run([exe, "version"], capture_output=True, text=True, timeout=20).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        return {"check": "pulumi CLI", "ok": False, "detail": f"{exe} does not run: {exc}"}
    return {"check": "pulumi CLI", "ok": True, "detail": f"{exe} {version}"}


def extras_checks() -> list[dict]:
    out = []
    for extra, (purpose, modules) in EXTRAS.items():
        missing = [m for m in modules if not extras.installed(m)]
        detail = purpose if not missing else f"missing {', '.join(missing)}: pip install 'gpubench[{extra}]'"
        out.append({"check": f"extra [{extra}]", "ok": not missing, "detail": detail})
    return out


def credential_checks() -> list[dict]:
    return [{"check": f"{c.NAME} credentials", **c.credentials_status()} for c in clouds.all_clouds()]


def bucket_check(url: str) -> dict:
    try:
        store = open_store(url)
        next(iter(store.list("runs/")), None)
    except extras.MissingExtra as exc:
        return {"check": f"bucket {url}", "ok": False, "detail": str(exc)}
    except (StorageError, ImportError, ValueError, OSError) as exc:
        return {"check": f"bucket {url}", "ok": False, "detail": f"does not answer: {exc}"}
    return {"check": f"bucket {url}", "ok": True, "detail": "lists runs/"}


LOGIN_FIX = "`pulumi login` (Pulumi Cloud), or `pulumi login --local` / `pulumi login s3://BUCKET` (self-managed)"
PASSPHRASE_VARS = ("PULUMI_CONFIG_PASSPHRASE", "PULUMI_CONFIG_PASSPHRASE_FILE")


def pulumi_login_check(cwd=None) -> dict:
    """Whether the Pulumi CLI is logged in to a backend (`pulumi whoami`, in the project so its `backend:`
    counts); a self-managed backend also needs the passphrase of its stacks' secrets in the environment,
    since a new stack cannot ask for it (https://www.pulumi.com/docs/iac/concepts/secrets/)."""
    name = "pulumi login"
    exe = shutil.which("pulumi")
    if exe is None:
        return {"check": name, "ok": False, "detail": "needs the Pulumi CLI (see the line above)"}
    env = {**os.environ, "PULUMI_SKIP_UPDATE_CHECK": "true"}
    try:
        done = subprocess.run(
            [exe, "whoami", "--verbose", "--non-interactive"],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return {"check": name, "ok": False, "detail": f"`pulumi whoami` did not run ({exc}); {LOGIN_FIX}"}
    if done.returncode != 0:
        lines = (done.stderr or done.stdout).strip().splitlines()
        said = quote(lines[-1] if lines else f"exit {done.returncode}", 160)
        return {"check": name, "ok": False, "detail": f"not logged in ({said}): {LOGIN_FIX}"}
    fields = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in done.stdout.splitlines()) if v}
    url = fields.get("backend url", "an unnamed backend")
    who = f" as {fields['user']}" if fields.get("user") else ""
    self_managed = not url.startswith("https://")
    if self_managed and not any(v in os.environ for v in PASSPHRASE_VARS):  # an empty passphrase is one
        return {
            "check": name,
            "ok": False,
            "detail": f"logged in to {url}{who}, a self-managed backend, but new stacks there need the passphrase of "
            "their secrets: set PULUMI_CONFIG_PASSPHRASE (or PULUMI_CONFIG_PASSPHRASE_FILE)",
        }
    return {"check": name, "ok": True, "detail": f"logged in to {url}{who}"}


def identity_check(provider: str) -> dict:
    """The cloud's credentials found (as `check` finds them) and then accepted by an identity call."""
    name = f"{provider} credentials"
    cloud = clouds.get(provider)
    found = cloud.credentials_status()
    if not found["ok"]:
        return {"check": name, **found}
    try:
        return {"check": name, "ok": True, "detail": cloud.identity()}
    except ImportError as exc:
        return {"check": name, "ok": False, "detail": f"missing {exc.name}: pip install 'gpubench[payload]'"}
    except Exception as exc:  # noqa: BLE001 - each SDK raises its own types; the message says which
        return {"check": name, "ok": False, "detail": f"refused ({quote(str(exc), 200)}): {cloud.IDENTITY_FIX}"}


def bucket_write_check(url: str, key: str) -> dict:
    """The bucket answers and takes a write: one small object created at `key` (write-once, never replaced)."""

    name = f"bucket {url}"
    body = json.dumps({"check": "write", "at": datetime.now(timezone.utc).isoformat()}).encode()
    try:
        open_store(url, retries=2, backoff=0.2, write_once=True).put_bytes(key, body, "application/json")
    except extras.MissingExtra as exc:
        return {"check": name, "ok": False, "detail": str(exc)}
    except Exception as exc:  # noqa: BLE001 - StorageError and each SDK's own
        return {
            "check": name,
            "ok": False,
            "detail": f"cannot write {key} ({quote(str(exc), 200)}): check the URL and that your credentials may "
            "write to it (`pulumi stack output resultsUrl -s aws-results` prints the results bucket)",
        }
    return {"check": name, "ok": True, "detail": f"wrote {key}"}


def launch_checks(
    providers: Sequence[str], results_url: str, probe_key: str, *, pulumi: bool = True, cwd=None
) -> list[dict]:
    """What launching on `providers` and reading results from `results_url` needs, each {"check", "ok",
    "detail"}: the Pulumi CLI and its login (`pulumi`: when Pulumi is the backend), the infra and payload
    extras, the credentials of each cloud (the bucket's too) accepted, and the bucket written (`probe_key`),
    tried only with its cloud's credentials in place (never a request that can only fail)."""
    checks = [pulumi_check(), pulumi_login_check(cwd)] if pulumi else []
    checks += [c for c in extras_checks() if c["check"] in ("extra [infra]", "extra [payload]")]
    owner = clouds.of_results(results_url)  # whose credentials read and write the bucket
    bucket_cloud = owner.NAME if owner else None
    identities = {p: identity_check(p) for p in sorted({*providers, *([bucket_cloud] if bucket_cloud else [])})}
    checks += identities.values()
    if bucket_cloud and not identities[bucket_cloud]["ok"]:
        detail = f"not tried: writing to it needs the {bucket_cloud} credentials (above)"
        return [*checks, {"check": f"bucket {results_url}", "ok": False, "detail": detail}]
    return [*checks, bucket_write_check(results_url, probe_key)]


def selected_stacks(cloud: str, patterns: Sequence[str] = (), stacks_dir=None, catalog=None) -> list:
    """The stacks of `cloud` a first-run check looks at (infra.stacks.StackNeed): those matching
    `patterns` (shell globs over stack names), or by default every stack file of the cloud whose
    offering is not retired."""
    folder = stacks_dir or stacks.STACKS_DIR
    names = [n for n in stacks.stack_names(folder) if not patterns or any(fnmatchcase(n, p) for p in patterns)]
    needs = stacks.stack_needs(cloud, names, catalog or load_catalog(), folder)
    return needs if patterns else [n for n in needs if n.offering is None or not n.offering.retired]


def account_checks(
    cloud: str, patterns: Sequence[str] = (), stacks_dir=None, catalog=None, needs=None, **clients
) -> list[dict]:
    """What a first real run on `cloud` needs of the account (the identity, network, GPU quotas
    for the selected stacks, APIs; infra/<cloud>/readiness.py); every row carries "for": the
    cloud it is needed for. Makes read-only API calls. With `patterns`, every selected stack must
    fit its quota; without, at least the smallest of each quota. `needs` (infra.stacks.StackNeed,
    e.g. for stacks not yet written, as a bench's probes) replaces the stack files, all strict."""
    strict = bool(patterns) or needs is not None
    if needs is None:
        needs = selected_stacks(cloud, patterns, stacks_dir, catalog)
        if patterns and not needs:
            raise UsageError(f"no {cloud} stack matches {', '.join(patterns)}; list them with `gpubench stacks --list`")
    rows = clouds.get(cloud).account_checks(list(needs), strict=strict, **clients)
    return [{**row, "for": cloud} for row in rows]


def readiness_checks(results_urls: Sequence[str] = ()) -> list[dict]:
    """Every check, each {"check", "ok", "detail"}: the Pulumi CLI, credentials, extras, then each bucket."""
    return [pulumi_check(), *credential_checks(), *extras_checks(), *(bucket_check(u) for u in results_urls)]


# What each thing a user can ask `check` about needs: the checks (by name) that must pass.
def requirements(providers: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """For each cloud: the Pulumi CLI, the infra extra and its credentials (what launching there needs);
    for each extra: the extra itself."""
    needs = {c: ("pulumi CLI", "extra [infra]", f"{c} credentials") for c in providers}
    needs.update({extra: (f"extra [{extra}]",) for extra in EXTRAS})
    return needs


def verdict(checks: Sequence[dict], asked: Sequence[str], providers: Sequence[str]) -> tuple[list[str], list[str]]:
    """(ready, not ready) among what was asked; nothing asked means "at least one cloud".

    A row with "for": <cloud> (account_checks) is needed by that cloud, "for": "clouds" (the
    Pulumi backend) by every cloud. A bucket that does not answer is judged apart (its own exit code)."""
    ok = {c["check"]: c["ok"] for c in checks}
    needs = requirements(providers)
    for c in checks:  # account rows and the backend: needed by the provider(s) they are for
        targets = list(providers) if c.get("for") == "clouds" else [c["for"]] if c.get("for") in providers else []
        for cloud in targets:
            needs[cloud] = (*needs[cloud], c["check"])
    wanted = list(asked) or list(providers)
    ready = [w for w in wanted if all(ok.get(n, False) for n in needs[w])]
    if not asked:  # any one cloud will do
        return ready, ([] if ready else wanted)
    return ready, [w for w in wanted if w not in ready]
