"""Typed parsing of a stack's config (namespace `gpubench`), with errors that say how to fix them.

Pure Python over a plain mapping (the `config:` section of `stacks/Pulumi.<stack>.yaml`,
or what the Pulumi engine hands the program), so the same code serves `pulumi up`,
`python -m infra preview` and the tests. Values may be native YAML types or the
strings Pulumi passes at run time; both parse the same way.

Three kinds of stack share the namespace: benchmark stacks (`gpubench:offering` set),
recurring stacks (`gpubench:stackType: recurring` plus `gpubench:every`: the same
benchmark keys, launched by the cloud's own scheduler on that schedule), results
stacks (`gpubench:stackType: results`, one per cloud) and sweeper stacks
(`gpubench:stackType: sweeper`: the leak sweep as a scheduled cloud function).
"""

from __future__ import annotations

import difflib
import ipaddress
import json
import re
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from infra import clouds
from payload.config import ALL_REDUCES, BACKENDS
from payload.storage import bucket_name_problem

NAMESPACE = "gpubench"
MARKETS = ("on-demand", "spot")
PRECISIONS = ("fp32", "mixed")  # payload/config.py --precision
STACK_TYPES = ("benchmark", "recurring", "results", "sweeper")
RECURRING_PREFIX = "recurring-"  # recurring-<benchmark stack>: the stack it repeats
PROVIDERS = clouds.NAMES
DEFAULT_SUITE = ("mnist-cnn", "cifar10-cnn", "resnet50")
MAX_HOURS_LIMIT = 72.0
MIN_HOURS = 0.25  # the deadline is whole minutes; less than this cannot even boot a GPU image
# Provider-namespace keys the program reads (region/zone live where the provider reads them).
PROVIDER_KEYS = {c: clouds.get(c).CONFIG_KEYS for c in clouds.NAMES}
_SLUG = re.compile(r"^[a-z0-9][a-z0-9_-]*$")
_PREFIX = re.compile(r"(?:/[A-Za-z0-9._-]*)*")  # after s3://bucket: the results key prefix


class ConfigError(ValueError):
    """A stack config key is missing, unknown or has a bad value; the message names the key and the fix."""

    def __init__(self, key: str, message: str):
        self.key = key
        super().__init__(f"{NAMESPACE}:{key}: {message}" if ":" not in key else f"{key}: {message}")


# --- value parsers: each takes (key, raw) and returns the typed value or raises ConfigError.


def _str(key: str, raw: Any) -> str:
    if isinstance(raw, (dict, list)) or raw is None or str(raw).strip() == "":
        raise ConfigError(key, f"expected a non-empty string, got {raw!r}")
    return str(raw).strip()


def text_problem(text: str) -> str | None:
    """Why `text` cannot travel as one env-file value to the guest, or None.

    The guest's env file is line-based (docker --env-file; newer Docker also strips one pair of
    matching quotes around a value), so a control or line-separator character would split or
    cut the value, and a quote-wrapped value would arrive changed."""
    bad = next((c for c in text if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp")), None)
    if bad is not None:
        return "contains a newline" if bad in "\r\n" else f"contains the control character {bad!r}"
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return "is wrapped in quotes, which docker --env-file strips; drop the quotes"
    return None


def _text(key: str, raw: Any) -> str:
    """A free-text value written into the guest's environment (e.g. gpubench:data)."""
    text = _str(key, raw)
    problem = text_problem(text)
    if problem:
        raise ConfigError(key, f"{text!r} {problem}")
    return text


def _choice(allowed: tuple[str, ...]) -> Callable[[str, Any], str]:
    def parse(key: str, raw: Any) -> str:
        value = _str(key, raw)
        if value not in allowed:
            raise ConfigError(key, f"{value!r} is not allowed; allowed values: {', '.join(allowed)}")
        return value

    return parse


def _positive_int(key: str, raw: Any) -> int:
    try:
        value = int(str(raw).strip()) if not isinstance(raw, bool) else None
    except ValueError:
        value = None
    if value is None or value <= 0:
        raise ConfigError(key, f"expected a positive integer, got {raw!r}")
    return value


def _max_hours(key: str, raw: Any) -> float:
    try:
        value = float(str(raw).strip()) if not isinstance(raw, bool) else -1.0
    except ValueError:
        value = -1.0
    if not MIN_HOURS <= value <= MAX_HOURS_LIMIT:
        raise ConfigError(
            key,
            f"expected hours in [{MIN_HOURS:g}, {MAX_HOURS_LIMIT:g}], got {raw!r}: it is the hard deadline "
            "after which the instance is terminated (boot and setup alone take minutes)",
        )
    return value


def _bool(key: str, raw: Any) -> bool:
    text = str(raw).strip().lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no"):
        return False
    raise ConfigError(key, f"expected true or false, got {raw!r}")


def _suite(key: str, raw: Any) -> tuple[str, ...]:
    items: Any = raw
    if isinstance(raw, str):
        text = raw.strip()
        items = json.loads(text) if text.startswith("[") else [p for p in text.split(",")]
    if not isinstance(items, (list, tuple)) or not items:
        raise ConfigError(key, f"expected a non-empty list of benchmark names, got {raw!r}")
    names = tuple(str(i).strip() for i in items)
    # The payload's registry is the one list of benchmark names (imports no TensorFlow).
    from payload.benchmarks import REGISTRY

    unknown = [n for n in names if n not in REGISTRY]
    if unknown:
        close = difflib.get_close_matches(unknown[0], list(REGISTRY), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ConfigError(key, f"unknown benchmark {unknown[0]!r}{hint}; known: {', '.join(REGISTRY)}")
    return names


def _gpus(key: str, raw: Any) -> str:
    """'all' (every GPU of the offering) or a count."""
    text = str(raw).strip().lower()
    if text == "all":
        return "all"
    return str(_positive_int(key, raw))


def _params(key: str, raw: Any) -> str:
    """Benchmark parameter overrides as the payload's `k=v,k=v` text (GPUBENCH_PARAMS)."""
    if isinstance(raw, Mapping):
        pairs = [(str(k), str(v)) for k, v in raw.items()]
    else:
        text = str(raw).strip()
        if text.startswith("{"):
            return _params(key, json.loads(text))
        pairs = []
        for part in filter(None, (p.strip() for p in text.split(","))):
            if "=" not in part:
                raise ConfigError(key, f"{part!r} is not key=value; use e.g. {{dropout: 0.2}} or 'dropout=0.2'")
            k, v = part.split("=", 1)
            pairs.append((k.strip(), v.strip()))
    if any(("," in k + v) or ("=" in k) or not k for k, v in pairs):
        raise ConfigError(key, "parameter names and values may not contain ',' (or '=' in names)")
    for k, v in pairs:
        problem = text_problem(k) or text_problem(f"{k}={v}")
        if problem:
            raise ConfigError(key, f"parameter {k}={v!r} {problem}")
    return ",".join(f"{k}={v}" for k, v in sorted(pairs))


def _cidr(key: str, raw: Any) -> str:
    text = _str(key, raw)
    try:
        net = ipaddress.ip_network(text, strict=False)
    except ValueError:
        raise ConfigError(key, f"{text!r} is not a CIDR block; use e.g. 203.0.113.7/32 (your address)") from None
    if net.prefixlen == 0:
        raise ConfigError(key, f"{text!r} opens SSH to the whole internet; use your own address, e.g. 203.0.113.7/32")
    return str(net)


# The widest SSH source range accepted without `gpubench:allowWideSsh: true`.
SSH_MAX_WIDTH = {4: 16, 6: 48}


def _check_ssh_width(cidr: str | None, allowed: bool) -> None:
    if not cidr or allowed:
        return
    net = ipaddress.ip_network(cidr)
    limit = SSH_MAX_WIDTH[net.version]
    if net.prefixlen < limit:
        raise ConfigError(
            "sshCidr",
            f"{cidr} is wider than /{limit} (IPv{net.version}); use your own address (e.g. 203.0.113.7/32), "
            "or set gpubench:allowWideSsh: true if you mean it",
        )


def _results(key: str, raw: Any) -> str:
    text = _str(key, raw)
    if text.startswith(("s3://", "gs://")) or text.startswith("stack:"):
        if text.startswith("stack:") and not text[len("stack:") :]:
            raise ConfigError(key, "a stack reference needs a name, e.g. stack:aws-results")
        if text.startswith(("s3://", "gs://")):
            bucket = text[5:].split("/", 1)[0]
            if not bucket:
                raise ConfigError(key, f"{text!r} names no bucket; use e.g. {text[:5]}my-results-bucket")
            problem = bucket_name_problem(text[:2], bucket)
            if problem:
                raise ConfigError(key, f"bucket name {bucket!r} in {text!r} is not valid: {problem}")
            prefix = text[5 + len(bucket) :]
            if not _PREFIX.fullmatch(prefix):
                raise ConfigError(
                    key,
                    f"prefix {prefix!r} in {text!r} may only use letters, digits, '.', '_', '-' and '/' "
                    "(it is written into the instance's env and shell unquoted)",
                )
        return text.rstrip("/")
    raise ConfigError(
        key, f"{text!r} is neither a bucket URL (s3://bucket, gs://bucket) nor a stack reference (stack:aws-results)"
    )


# The OCI distribution reference grammar (github.com/distribution/reference, regexp.go):
# [registry[:port]/]path[:tag][@digest]; path components lowercase.
_COMPONENT = r"[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*"
_DOMAIN = r"(?:(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?"
_IMAGE_REF = re.compile(
    rf"(?:{_DOMAIN}/)?{_COMPONENT}(?:/{_COMPONENT})*(?::[\w][\w.-]{{0,127}})?(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{{32,}})?",
    re.ASCII,
)


def is_image_reference(text: str) -> bool:
    """A valid OCI image reference (docker pull would accept its syntax); `{generation}` is filled in later."""
    return bool(_IMAGE_REF.fullmatch(text.replace("{generation}", "x"))) and len(text) <= 255


def _image(key: str, raw: Any) -> str:
    text = _str(key, raw)
    if not is_image_reference(text):
        raise ConfigError(
            key,
            f"{text!r} is not a container image reference; use e.g. ghcr.io/gpubench/payload:cuda12 "
            "(lowercase repository, optional :tag and @sha256:digest)",
        )
    return text


def _ssh_key(key: str, raw: Any) -> str:
    text = _str(key, raw)
    if not text.startswith(("ssh-", "ecdsa-")):
        raise ConfigError(key, "expected an OpenSSH public key line (ssh-ed25519 AAAA... or ssh-rsa AAAA...)")
    return text


def _root_gb(key: str, raw: Any) -> int:
    value = _positive_int(key, raw)
    if value < 60:
        raise ConfigError(key, f"{value} GB is smaller than the Deep Learning images (use 60 or more)")
    return value


def _days(key: str, raw: Any) -> int:
    return _positive_int(key, raw)


def _every(key: str, raw: Any) -> str:
    from infra.schedule_expr import ScheduleError, parse_schedule

    try:
        return parse_schedule(_str(key, raw)).text
    except ScheduleError as exc:
        raise ConfigError(key, str(exc)) from None


def _workload(key: str, raw: Any) -> str:
    """A workload spec file (relative to the current directory, the project root): checked
    here, so a bad spec fails before anything is launched. Returns its absolute path."""
    from pathlib import Path

    from payload.workloads import WorkloadSpecError, load_spec

    text = _str(key, raw)
    try:
        return load_spec(Path(text).expanduser().resolve()).path
    except WorkloadSpecError as exc:
        raise ConfigError(key, f"{exc} (the path is relative to the directory you run from)") from None


# Where a cloud instance finds the workload spec: the stack's code bundle unpacks the spec
# and its workdir there (docs/workloads.md).
CLOUD_WORKLOAD_SPEC = "/gpubench/workload/workload.yaml"

# --- key tables: key -> (parser, default). `None` default means optional, absent.

BENCHMARK_KEYS: dict[str, tuple[Callable[[str, Any], Any], Any]] = {
    "stackType": (_choice(STACK_TYPES), "benchmark"),
    "offering": (_str, None),
    "market": (_choice(MARKETS), "on-demand"),
    "suite": (_suite, DEFAULT_SUITE),
    "workload": (_workload, None),
    "epochs": (_positive_int, None),
    "steps": (_positive_int, None),
    "batchSize": (_positive_int, None),
    "precision": (_choice(PRECISIONS), "fp32"),
    "params": (_params, None),
    "gpus": (_gpus, "all"),
    "data": (_text, None),
    "maxHours": (_max_hours, 6.0),
    "results": (_results, None),
    # unset: the official TensorFlow image per GPU generation runs the uploaded code bundle
    "payloadImage": (_image, None),
    "backend": (_choice(BACKENDS), None),
    "allReduce": (_choice(ALL_REDUCES), None),
    "zone": (_str, None),
    "sshCidr": (_cidr, None),
    "allowWideSsh": (_bool, False),
    "sshPublicKey": (_ssh_key, None),
    "rootVolumeGb": (_root_gb, 150),
    "expectGpu": (_bool, True),
    "image": (_str, None),
    # a `gpubench bench` probe: the payload stops the job once its throughput is steady, or after this many seconds
    "probeSeconds": (_positive_int, None),
}
# A recurring stack: the benchmark keys plus its schedule (UTC).
RECURRING_KEYS = {**BENCHMARK_KEYS, "stackType": (_choice(STACK_TYPES), "recurring"), "every": (_every, None)}

RESULTS_KEYS: dict[str, tuple[Callable[[str, Any], Any], Any]] = {
    "stackType": (_choice(STACK_TYPES), "results"),
    "provider": (_choice(PROVIDERS), None),
    "bucketName": (_str, None),
    "checkpointDays": (_days, 30),
    "noncurrentDays": (_days, 30),
}


@dataclass(frozen=True)
class BenchmarkConfig:
    """What one benchmark stack launches; field names follow the config keys in snake_case."""

    stack: str
    offering: str
    market: str
    suite: tuple[str, ...]
    precision: str
    gpus: str
    max_hours: float
    root_volume_gb: int
    expect_gpu: bool
    results: str | None = None
    epochs: int | None = None
    steps: int | None = None
    batch_size: int | None = None
    data: str | None = None
    zone: str | None = None
    ssh_cidr: str | None = None
    allow_wide_ssh: bool = False
    ssh_public_key: str | None = None
    image: str | None = None
    params: str | None = None
    payload_image: str | None = None  # a prebuilt payload image instead of the code bundle
    backend: str | None = None
    all_reduce: str | None = None
    provider_config: Mapping[str, str] = field(default_factory=dict)
    stack_type: str = "benchmark"
    every: str | None = None  # recurring stacks: the schedule expression
    workload: str | None = None  # a workload spec file (absolute local path) run instead of the suite
    probe_seconds: int | None = None  # a bench probe's limit (GPUBENCH_PROBE_SECONDS); None: a full run

    def results_ref(self, provider: str) -> str:
        """The results location: the configured one, else the provider's results stack."""
        return self.results or f"stack:{provider}-results"


def _regions(key: str, raw: Any) -> tuple[str, ...]:
    items = raw if isinstance(raw, (list, tuple)) else str(raw).split(",")
    names = tuple(str(i).strip() for i in items if str(i).strip())
    if not names:
        raise ConfigError(key, f"expected a comma list of regions, e.g. us-east-1,us-west-2, got {raw!r}")
    return names


SWEEPER_KEYS: dict[str, tuple[Callable[[str, Any], Any], Any]] = {
    "stackType": (_choice(STACK_TYPES), "sweeper"),
    "provider": (_choice(PROVIDERS), None),
    "every": (_every, "rate(1 hour)"),
    "regions": (_regions, None),
    "dryRun": (_bool, False),
}


@dataclass(frozen=True)
class SweeperConfig:
    """The leak sweep as a function on the cloud's scheduler (stacks aws-sweeper, gcp-sweeper)."""

    stack: str
    provider: str
    every: str
    dry_run: bool = False
    regions: tuple[str, ...] | None = None  # AWS default: the stack's region; GCP: every zone
    provider_config: Mapping[str, str] = field(default_factory=dict)
    stack_type: str = "sweeper"


@dataclass(frozen=True)
class ResultsConfig:
    """The per-cloud results bucket stack."""

    stack: str
    provider: str
    checkpoint_days: int
    noncurrent_days: int
    bucket_name: str | None = None
    provider_config: Mapping[str, str] = field(default_factory=dict)
    stack_type: str = "results"


def _snake(key: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()


def _split(raw: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """Separate `gpubench:*` keys from provider keys; bare keys count as gpubench keys."""
    ours: dict[str, Any] = {}
    provider: dict[str, str] = {}
    for full, value in raw.items():
        full = str(full)
        ns, key = split_key(full)
        if ns == NAMESPACE:
            ours[key] = value
        elif ns in PROVIDER_KEYS:
            if key not in PROVIDER_KEYS[ns]:
                close = difflib.get_close_matches(key, list(PROVIDER_KEYS[ns]), n=1)
                hint = f" Did you mean {ns}:{close[0]}?" if close else ""
                raise ConfigError(
                    full,
                    f"{full!r} is not a {ns} key this program reads.{hint} "
                    f"It reads: {', '.join(f'{ns}:{k}' for k in PROVIDER_KEYS[ns])}",
                )
            provider[f"{ns}:{key}"] = _provider_value(full, ns, key, value)
    return ours, provider


def _provider_value(full: str, ns: str, key: str, value: Any) -> str:
    """A provider key's value: regions and zones as the cloud spells them, other names as slugs
    (they reach the guest's environment and the cloud CLI's arguments)."""
    text = _str(full, value)
    cloud = clouds.get(ns)
    pattern = {"region": cloud.REGION_PATTERN, "zone": cloud.ZONE_PATTERN}.get(key, _PROVIDER_NAME)
    if not pattern.fullmatch(text):
        zone = next(
            z for z in (f"{cloud.DEFAULT_REGION}a", f"{cloud.DEFAULT_REGION}-a") if cloud.ZONE_PATTERN.fullmatch(z)
        )
        example = {"region": cloud.DEFAULT_REGION, "zone": zone}.get(key, "my-project-123")
        raise ConfigError(full, f"{text!r} is not a {ns} {key} name; use e.g. {example}")
    return text


_PROVIDER_NAME = re.compile(r"[a-z0-9][a-z0-9.:-]*")  # GCP project ids (domain-scoped ones have '.' and ':')


def split_key(full: str) -> tuple[str, str]:
    """(namespace, key) of a stack config key, a bare key counting as `gpubench`.

    A namespace that looks like a typo of `gpubench` (`gpubnech:suite`, `GPUBench:suite`)
    or a lost ':' (`gpubench-suite`) is a ConfigError suggesting the key meant, so a
    misspelt setting never silently falls back to its default. Shared by every stack kind."""
    ns, _, key = full.rpartition(":")
    if ns == "":
        typo = _namespace_typo(key)
        if typo:  # `gpubench-suite`, `gpubench.suite`: the ':' got lost
            raise ConfigError(full, f"unknown key {full!r}. Did you mean {NAMESPACE}:{typo}?")
        return NAMESPACE, key
    if _looks_like_namespace(ns):
        raise ConfigError(full, f"namespace {ns!r} looks like a typo. Did you mean {NAMESPACE}:{key}?")
    return ns, key


def _looks_like_namespace(ns: str) -> bool:
    """`gpubnech`, `gpubench-x`, `GPUBench`: close to `gpubench` but not it (difflib ratio >= 0.75)."""
    low = ns.lower()
    return ns != NAMESPACE and (
        difflib.SequenceMatcher(None, low, NAMESPACE).ratio() >= 0.75 or re.sub(r"[^a-z]", "", low) == NAMESPACE
    )


def _namespace_typo(key: str) -> str | None:
    """The key meant by a bare `gpubench-suite` / `gpubnech_suite` (separator instead of ':'), or None."""
    m = re.fullmatch(r"([A-Za-z]+)[-_.]([A-Za-z].*)", key)
    if m and (m[1].lower() == NAMESPACE or _looks_like_namespace(m[1])):
        return m[2]
    return None


def reject_unknown(keys: Mapping[str, Any], table: Mapping[str, Any], kind: str) -> None:
    """ConfigError for the first key not in `table`, suggesting the closest allowed key."""
    for key in keys:
        if key not in table:
            close = difflib.get_close_matches(key, list(table), n=1)
            hint = f" Did you mean {NAMESPACE}:{close[0]}?" if close else ""
            article = "an" if kind[:1].lower() in "aeiou" or kind.startswith("SSH") else "a"
            raise ConfigError(
                key, f"unknown key for {article} {kind} stack.{hint} Allowed keys: {', '.join(sorted(table))}"
            )


def _parse_table(ours: Mapping[str, Any], table: Mapping[str, tuple[Callable, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, (parser, default) in table.items():
        if key in ours and ours[key] is not None:
            out[_snake(key)] = parser(key, ours[key])
        elif default is not None:
            out[_snake(key)] = default
    return out


def _check_stack_name(stack: str) -> None:
    """The payload's own rule (payload.layout): the name is a results key segment and a guest env value."""
    from payload.layout import BadKeyPart, check_stack_name

    try:
        check_stack_name(stack)
    except BadKeyPart as exc:
        raise ConfigError("stack", f"{exc}; rename the stack file stacks/Pulumi.<name>.yaml") from None


def parse_config(raw: Mapping[str, Any], stack: str) -> BenchmarkConfig | ResultsConfig | SweeperConfig:
    """Parse a stack's config mapping; raises ConfigError naming the key and the allowed values."""
    if not isinstance(raw, Mapping):
        raise ConfigError("config", f"expected a mapping of keys to values, got {type(raw).__name__}")
    _check_stack_name(stack)
    ours, provider = _split(raw)
    stack_type = _choice(STACK_TYPES)("stackType", ours.get("stackType", "benchmark"))
    if stack_type == "results":
        reject_unknown(ours, RESULTS_KEYS, "results")
        values = _parse_table(ours, RESULTS_KEYS)
        if "provider" not in values:
            raise ConfigError("provider", f"required for a results stack; allowed values: {', '.join(PROVIDERS)}")
        return ResultsConfig(stack=stack, provider_config=provider, **values)
    if stack_type == "sweeper":
        reject_unknown(ours, SWEEPER_KEYS, "sweeper")
        values = _parse_table(ours, SWEEPER_KEYS)
        if "provider" not in values:
            raise ConfigError("provider", f"required for a sweeper stack; allowed values: {', '.join(PROVIDERS)}")
        return SweeperConfig(stack=stack, provider_config=provider, **values)
    table = RECURRING_KEYS if stack_type == "recurring" else BENCHMARK_KEYS
    reject_unknown(ours, table, stack_type)
    values = _parse_table(ours, table)
    if values.get("workload"):
        if ours.get("suite") is not None:
            raise ConfigError(
                "suite",
                "set gpubench:suite or gpubench:workload, not both: a stack runs built-in benchmarks or one workload",
            )
        values["suite"] = ()
        if values.get("payload_image"):
            raise ConfigError(
                "payloadImage",
                "a cloud stack's workload travels in the code bundle, which a prebuilt payload image does not "
                "fetch: drop gpubench:payloadImage (the spec's `image`, or the official TensorFlow image, runs it)",
            )
    if stack_type == "recurring" and "every" not in values:
        raise ConfigError(
            "every", "required for a recurring stack: its schedule (UTC), e.g. 'rate(7 days)' or 'cron(0 3 ? * MON *)'"
        )
    if "offering" not in values:
        raise ConfigError(
            "offering", "required: the catalog id of what to launch, e.g. aws/p3.8xlarge (see `python -m infra stacks`)"
        )
    if values.get("epochs") and values.get("steps"):
        raise ConfigError("steps", "gpubench:epochs and gpubench:steps are mutually exclusive; set one")
    _check_ssh_width(values.get("ssh_cidr"), values.get("allow_wide_ssh", False))
    return BenchmarkConfig(stack=stack, provider_config=provider, **values)


def check_against_offering(cfg: BenchmarkConfig, offering: Any, provider: str) -> None:
    """Checks that need the catalog row: market offered, GPU count, results scheme."""
    if cfg.market not in offering.markets:
        raise ConfigError(
            "market", f"{cfg.market!r} is not offered for {offering.id}; allowed values: {', '.join(offering.markets)}"
        )
    if cfg.gpus != "all" and int(cfg.gpus) > offering.gpu_count:
        raise ConfigError(
            "gpus",
            f"{cfg.gpus} GPUs requested but {offering.id} has {offering.gpu_count}; use 'all' or 1..{offering.gpu_count}",
        )
    _check_zone(cfg, provider)
    scheme = clouds.get(provider).RESULTS_SCHEME if clouds.is_cloud(provider) else None
    if cfg.results and not cfg.results.startswith("stack:") and scheme and not cfg.results.startswith(scheme):
        raise ConfigError(
            "results",
            f"{cfg.results!r} is not reachable with {provider} credentials; use a {scheme} bucket or stack:{provider}-results",
        )


def _check_zone(cfg: BenchmarkConfig, provider: str) -> None:
    """A zone must be the provider's and inside the stack's configured region."""
    if not clouds.is_cloud(provider):
        return
    cloud = clouds.get(provider)
    key, zone = (
        ("zone", cfg.zone)
        if cfg.zone
        else next(((k, v) for k, v in cfg.provider_config.items() if k.endswith(":zone") and v), (None, None))
    )
    if not zone:
        return
    if not cloud.ZONE_PATTERN.fullmatch(zone):
        raise ConfigError(
            key, f"{zone!r} is not a {provider} zone name (e.g. {cloud.DEFAULT_REGION}-a / {cloud.DEFAULT_REGION}a)"
        )
    region = cfg.provider_config.get(f"{provider}:region")
    if region and cloud.region_of_zone(zone) != region:
        raise ConfigError(
            key,
            f"zone {zone} is outside the stack's region {region} ({provider}:region); "
            f"use a zone of {region} or change the region to {cloud.region_of_zone(zone)}",
        )
