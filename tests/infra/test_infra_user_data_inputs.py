"""Hostile stack values against the rendered user-data.

Every value a stack file sets that reaches the guest (env file, code env, systemd unit, shell)
is either refused at parse time with a ConfigError naming its key, or it renders user-data that
`cloud-init schema`, shellcheck and `systemd-analyze verify` accept and that carries the value
intact to the container (read back with docker --env-file's own rules). Nothing in between: a
value that breaks the unit or a script would leave the instance idle until its deadline.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import subprocess

import pytest
import yaml
from infra_matrix import NOW, require_tool, shell_scripts

from infra import cloud_init
from infra import stacks as stackfiles
from infra.config import ConfigError

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

HOSTILE = {
    "space": "a b",
    "single-quote": "it's",
    "double-quote": 'say "hi"',
    "subst": "$(reboot)",
    "backtick": "`reboot`",
    "dollar": "$HOME",
    "percent": "50%n",  # a systemd specifier
    "backslash": "C:\\dir",
    "newline": "a\nb",
    "carriage-return": "a\rb",
    "nul": "a\x00b",
    "line-separator": "a\u2028b",
    "non-ascii": "données-✓",
    "quoted": "'x'",  # newer docker --env-file strips matching quotes
    "semicolon": "x; poweroff",
}
AWS, GCP = "aws-p3-2x", "gcp-v100-1x"


def _set(key: str):
    return lambda raw, v: {**raw, key: v}


# (label, stack, stack-name transform, config transform, key a refusal must name, env var and expected text)
FIELDS = [
    ("data-aws", AWS, None, _set("gpubench:data"), "data", ("GPUBENCH_DATA", lambda v: v)),
    ("data-gcp", GCP, None, _set("gpubench:data"), "data", ("GPUBENCH_DATA", lambda v: v)),
    ("data-recurring", f"recurring-{AWS}", None, None, "data", ("GPUBENCH_DATA", lambda v: v)),
    (
        "params",
        AWS,
        None,
        lambda raw, v: {**raw, "gpubench:params": {"dropout": v}},
        "params",
        ("GPUBENCH_PARAMS", lambda v: f"dropout={v.strip()}"),
    ),
    (
        "results-prefix",
        AWS,
        None,
        lambda raw, v: {**raw, "gpubench:results": f"s3://gpubench-ok/{v}"},
        "results",
        ("GPUBENCH_RESULTS", lambda v: f"s3://gpubench-ok/{v}"),
    ),
    ("payload-image", GCP, None, _set("gpubench:payloadImage"), "payloadImage", None),
    ("suite", AWS, None, _set("gpubench:suite"), "suite", None),
    ("zone", GCP, None, _set("gpubench:zone"), "zone", None),
    ("aws-region", AWS, None, _set("aws:region"), "aws:region", None),
    ("gcp-region", GCP, None, _set("gcp:region"), "gcp:region", None),
    ("gcp-project", GCP, None, _set("gcp:project"), "gcp:project", None),
    ("stack-name", AWS, lambda name, v: f"{name}-{v}", None, "stack", ("GPUBENCH_STACK", None)),
]
CASES = [(f, label) for f in FIELDS for label in HOSTILE]


def _config(field, value):
    name, stack, rename, change, *_ = field
    if name == "data-recurring":
        raw = {
            **stackfiles.load_config(AWS),
            "gpubench:stackType": "recurring",
            "gpubench:every": "rate(7 days)",
            "gpubench:data": value,
        }
        return stack, raw
    raw = stackfiles.load_config(stack)
    return (rename(stack, value) if rename else stack), (change(raw, value) if change else raw)


def _user_data(rendered) -> str | None:
    """The #cloud-config of an instance, a launch template (base64 of gzip) or an instance template."""

    def walk(value):
        if isinstance(value, dict):
            for v in value.values():
                yield from walk(v)
        elif isinstance(value, list):
            for v in value:
                yield from walk(v)
        elif isinstance(value, str):
            yield value

    for r in rendered.resources:
        for text in walk(r.inputs):
            if text.startswith("#cloud-config"):
                return text
            if text.startswith(("I2Nsb3VkLWNvbmZpZw", "H4sI")):  # base64 of "#cloud-config", of gzip
                return cloud_init.inflated(text)
    return None


@pytest.fixture(scope="module")
def outcomes(catalog):
    """(field, label) -> ("refused", ConfigError) | ("rendered", user-data) | ("broken", what happened)."""
    from infra.render import render

    out = {}
    for field, label in CASES:
        stack, raw = _config(field, HOSTILE[label])
        try:
            text = _user_data(render(stack, raw, catalog, now=NOW))
        except ConfigError as exc:
            out[field[0], label] = ("refused", exc)
            continue
        except Exception as exc:  # a value that slipped through parsing and broke rendering
            out[field[0], label] = ("broken", f"{type(exc).__name__}: {exc}"[:300])
            continue
        out[field[0], label] = ("rendered", text) if text else ("broken", "no user-data rendered")
    return out


def docker_env_file(text: str) -> dict[str, str]:
    """KEY=value pairs as `docker run --env-file` reads them (docker/cli pkg/kvfile/kvfile.go):
    split on \\n only (a trailing \\r dropped), leading whitespace trimmed, # comments and blank lines
    skipped, the value kept as is except one pair of matching quotes around it removed."""
    env = {}
    for raw in text.encode().split(b"\n"):
        line = raw.removesuffix(b"\r").decode().lstrip()
        if not line or line.startswith("#"):
            continue
        key, _, value = line.partition("=")
        assert key and not any(c in key for c in " \t"), line
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        env[key] = value
    return env


def _files(user_data: str) -> dict[str, str]:
    return {f["path"]: f["content"] for f in yaml.safe_load(user_data)["write_files"]}


@pytest.mark.parametrize("field, label", CASES, ids=[f"{f[0]}-{label}" for f, label in CASES])
def test_hostile_value_is_refused_naming_its_key_or_arrives_intact(outcomes, field, label):
    name, _stack, _rename, _change, key, carried = field
    kind, detail = outcomes[name, label]
    # pytrace=False: a render that failed deep inside Pulumi's async machinery leaves CPython 3.11
    # unable to format an assertion traceback (AST recursion-depth SystemError), so say it plainly.
    if kind == "broken":
        pytest.fail(f"{name}={HOSTILE[label]!r} was neither refused nor rendered: {detail}", pytrace=False)
    if kind == "refused":
        if detail.key != key:
            pytest.fail(f"refusal names {detail.key!r}, not {key!r}: {detail}", pytrace=False)
        return
    if not carried:
        pytest.fail(f"{name}={HOSTILE[label]!r} rendered but reaches no env var: it should be refused", pytrace=False)
    env = docker_env_file(_files(detail)[cloud_init.ENV_FILE])
    assert not any("\x00" in v for v in env.values()), "an environment variable cannot hold NUL (execve)"
    var, expected = carried
    if expected is not None:
        assert env[var] == expected(HOSTILE[label]), (var, env.get(var))
    else:
        assert HOSTILE[label] in env[var], (var, env.get(var))


def test_each_kind_of_value_renders_somewhere(outcomes):
    """Not everything is refused: free text (data, params) with spaces, quotes and $ goes through,
    so the checks below see hostile values in rendered user-data, not only the defaults."""
    rendered = {(n, label) for (n, label), (kind, _) in outcomes.items() if kind == "rendered"}
    for label in ("space", "single-quote", "double-quote", "subst", "backtick", "percent", "backslash", "non-ascii"):
        assert ("data-aws", label) in rendered and ("params", label) in rendered, label
    assert ("data-recurring", "subst") in rendered


def _rendered(outcomes) -> list[str]:
    return [text for kind, text in outcomes.values() if kind == "rendered"]


# cloud-init's own schema code over every document in one interpreter (see test_infra_cloud_init.py)
VALIDATE_ALL = r"""
import json, sys, yaml
from cloudinit.config.schema import get_schema, validate_cloudconfig_schema
schema = get_schema()
bad = {}
for path in sys.argv[1:]:
    try:
        validate_cloudconfig_schema(yaml.safe_load(open(path)), schema, strict=True)
    except Exception as exc:
        bad[path] = str(exc)
print(json.dumps(bad))
"""


def test_rendered_user_data_is_valid_cloud_config(outcomes, tmp_path):
    exe = require_tool("cloud-init")
    texts = {hashlib.sha1(t.encode()).hexdigest(): t for t in _rendered(outcomes)}
    paths = []
    for digest, text in texts.items():
        (tmp_path / f"{digest}.yaml").write_text(text)
        paths.append(str(tmp_path / f"{digest}.yaml"))
    proc = subprocess.run([exe, "schema", "--config-file", paths[0]], capture_output=True, text=True)
    assert proc.returncode == 0 and "Valid" in proc.stdout, proc.stdout + proc.stderr
    python = open(exe).readline().removeprefix("#!").strip().split()[0]
    proc = subprocess.run([python, "-c", VALIDATE_ALL, *paths], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {}


def test_rendered_shell_is_shellcheck_clean(outcomes, tmp_path):
    exe = require_tool("shellcheck")
    scripts = {}
    for text in _rendered(outcomes):
        for body in shell_scripts(text).values():
            scripts[hashlib.sha1(body.encode()).hexdigest()] = body
    for digest, body in scripts.items():
        (tmp_path / f"{digest}.sh").write_text(body)
    proc = subprocess.run(
        [exe, "--severity=style", *(str(tmp_path / f"{d}.sh") for d in scripts)], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout


def test_rendered_units_pass_systemd_analyze_verify(outcomes, tmp_path):
    """Each distinct unit set, with its ExecStart programs present (the scripts it ships, a stand-in
    docker), verified as systemd would load it; each unit's argv is the image and code dir, unsplit."""
    exe = require_tool("systemd-analyze")
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "docker").write_text("#!/bin/sh\nexit 0\n")
    (lib / "docker").chmod(0o755)
    unit_sets = {}
    for text in _rendered(outcomes):
        files = _files(text)
        for path, body in files.items():
            if path.startswith(cloud_init.LIB_DIR + "/"):
                target = lib / os.path.basename(path)
                target.write_text(body)
                target.chmod(0o755)
        units = {os.path.basename(p): b for p, b in files.items() if p.startswith("/etc/systemd/system/")}
        unit_sets[hashlib.sha1(json.dumps(units, sort_keys=True).encode()).hexdigest()] = units
    assert unit_sets
    for digest, units in unit_sets.items():
        d = tmp_path / digest
        d.mkdir()
        for name, body in units.items():
            body = body.replace(cloud_init.LIB_DIR, str(lib)).replace("/usr/bin/docker", str(lib / "docker"))
            (d / name).write_text(body)
        proc = subprocess.run(
            [exe, "verify", *(str(d / n) for n in units)],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "SYSTEMD_LOG_LEVEL": "warning"},
        )
        ours = [ln for ln in (proc.stdout + proc.stderr).splitlines() if "gpubench" in ln]
        assert proc.returncode == 0 and not ours, proc.stdout + proc.stderr
        start = next(ln for ln in units[cloud_init.UNIT].splitlines() if ln.startswith("ExecStart="))
        argv = shlex.split(start.removeprefix("ExecStart="))
        assert argv[0] == f"{cloud_init.LIB_DIR}/run.sh" and len(argv) in (2, 3), argv
        assert "%" not in start and "$" not in start, start


def test_env_file_refuses_what_docker_would_change():
    for value in ("a\nb", "a\rb", "a\x00b", "a\u2028b", "'x'", '"x"'):
        with pytest.raises(ValueError, match="GPUBENCH_DATA"):
            cloud_init.env_file({"GPUBENCH_DATA": value})
    for value in ("a b", "it's", "$(reboot)", "50%n", "données-✓", "'x", "x'"):
        assert docker_env_file(cloud_init.env_file({"GPUBENCH_DATA": value})) == {"GPUBENCH_DATA": value}


def test_unit_refuses_an_image_systemd_would_expand_or_split():
    env = {"GPUBENCH_DEADLINE": "2030-01-01T00:00:00Z"}
    for image in ("img:$(reboot)", "img:50%n", "a b", "IMG", "img;poweroff"):
        with pytest.raises(ValueError, match="image reference"):
            cloud_init.render_user_data(cloud_init.PayloadLaunch(image, env))
