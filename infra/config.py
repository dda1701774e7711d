"""Typed parsing of a stack's `gpubench:` config, with errors naming the key and the fix.

Pure Python over the `config:` mapping of `stacks/Pulumi.<stack>.yaml` (or what the Pulumi engine
hands the program: the same values as strings), so `pulumi up`, preview and the tests share it.
Stack kinds: benchmark, recurring (benchmark keys plus `every`), results and sweeper.
"""

from __future__ import annotations

import difflib
import ipaddress
import json
import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from functools import partial
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator

from infra import clouds
from infra.provider_rules import table_of
from infra.schedule_expr import parse_schedule
from infra.tags import MAX_HOURS_BOUNDS
from payload.benchmarks import REGISTRY
from payload.config import ALL_REDUCES, BACKENDS
from payload.layout import BadKeyPart, check_stack_name
from payload.results_location import BUCKET_SCHEMES, parse_results_location
from payload.workloads.spec import WorkloadSpecError, load_spec

NAMESPACE = "gpubench"
MARKETS = ("on-demand", "spot")
PRECISIONS = ("fp32", "mixed")  # payload/config.py --precision
STACK_TYPES = ("benchmark", "recurring", "results", "sweeper")
RECURRING_PREFIX = "recurring-"  # recurring-<benchmark stack>: the stack it repeats
PROVIDERS = clouds.NAMES
DEFAULT_SUITE = ("mnist-cnn", "cifar10-cnn", "resnet50")
MIN_HOURS, MAX_HOURS_LIMIT = MAX_HOURS_BOUNDS  # under a quarter hour a GPU image cannot even boot
_MAX_HOURS_WHY = "it is the hard deadline after which the instance is terminated (boot and setup alone take minutes)"
# Provider-namespace keys the program reads (region/zone live where the provider reads them).
PROVIDER_KEYS = {c: clouds.get(c).CONFIG_KEYS for c in clouds.NAMES}
_PREFIX = re.compile(r"[A-Za-z0-9._/-]*")  # after s3://bucket/: the results key prefix
STACK_REF = "stack:"  # gpubench:results: stack:<results stack> reads that stack's outputs
_STACK_REF_FORM = "a stack reference (stack:aws-results)"


class ConfigError(ValueError):
    """A stack config key is missing, unknown or has a bad value; the message names the key and the fix."""

    def __init__(self, key: str, message: str):
        self.key = key
        super().__init__(f"{NAMESPACE}:{key}: {message}" if ":" not in key else f"{key}: {message}")


# Value checks: raw value (YAML type or Pulumi's string) -> typed value, or ValueError with the fix.


def nonempty_str(raw: Any) -> str:
    if isinstance(raw, (dict, list)) or raw is None or str(raw).strip() == "":
        raise ValueError(f"expected a non-empty string, got {raw!r}")
    return str(raw).strip()


def text_problem(text: str) -> str | None:
    """Why `text` cannot be one line of docker --env-file (which newer Docker also unquotes), or None."""
    bad = next((c for c in text if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp")), None)
    if bad is not None:
        return "contains a newline" if bad in "\r\n" else f"contains the control character {bad!r}"
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return "is wrapped in quotes, which docker --env-file strips; drop the quotes"
    return None


def _text(raw: Any) -> str:
    """Free text for the guest's environment (gpubench:data)."""
    text = nonempty_str(raw)
    if problem := text_problem(text):
        raise ValueError(f"{text!r} {problem}")
    return text


def _choice(allowed: tuple[str, ...], raw: Any) -> str:
    value = nonempty_str(raw)
    if value not in allowed:
        raise ValueError(f"{value!r} is not allowed; allowed values: {', '.join(allowed)}")
    return value


def int_at_least(lo: int, hi: int | None = None, rule: str | None = None) -> Callable[[Any], int]:
    """An integer in [lo, hi] (a bool is not one); `rule` words the message ("a positive integer")."""

    def parse(raw: Any) -> int:
        try:
            value = int(str(raw).strip()) if not isinstance(raw, bool) else None
        except ValueError:
            value = None
        if value is None or value < lo or (hi is not None and value > hi):
            bound = rule or (f"an integer {lo}..{hi}" if hi is not None else f"an integer >= {lo}")
            raise ValueError(f"expected {bound}, got {raw!r}")
        return value

    return parse


_positive_int = int_at_least(1, rule="a positive integer")


def hours(lo: float, hi: float, lo_open: bool, why: str) -> Callable[[Any], float]:
    """A number of hours in [lo, hi] ((lo, hi] when `lo_open`); `why` says what the hours bound."""

    def parse(raw: Any) -> float:
        try:
            value = float(str(raw).strip()) if not isinstance(raw, bool) else -1.0
        except ValueError:
            value = -1.0
        if not (lo < value if lo_open else lo <= value) or not value <= hi:
            span = f"{'(' if lo_open else '['}{lo:g}, {hi:g}]"
            raise ValueError(f"expected hours in {span}, got {raw!r}: {why}")
        return value

    return parse


_BOOLS = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}


def _bool(raw: Any) -> bool:
    try:
        return _BOOLS[str(raw).strip().lower()]
    except KeyError:
        raise ValueError(f"expected true or false, got {raw!r}") from None


def benchmark_names(raw: Any) -> tuple[str, ...]:
    """A non-empty list of built-in benchmark names: a YAML list, a JSON list or a comma list."""
    items: Any = raw
    if isinstance(raw, str):
        text = raw.strip()
        items = json.loads(text) if text.startswith("[") else text.split(",")
    if not isinstance(items, (list, tuple)) or not items:
        raise ValueError(f"expected a non-empty list of benchmark names, got {raw!r}")
    names = tuple(str(i).strip() for i in items)
    if unknown := next((n for n in names if n not in REGISTRY), None):  # the payload's one list of names
        close = difflib.get_close_matches(unknown, list(REGISTRY), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(f"unknown benchmark {unknown!r}{hint}; known: {', '.join(REGISTRY)}")
    return names


def gpu_count(lo: int) -> Callable[[Any], str]:
    """'all' (every GPU of the offering) or a count of at least `lo`."""
    count = int_at_least(lo, rule="a positive integer" if lo == 1 else None)
    return lambda raw: "all" if str(raw).strip().lower() == "all" else str(count(raw))


def params_text(raw: Any) -> str:
    """Benchmark parameter overrides as the payload's `k=v,k=v` text (GPUBENCH_PARAMS)."""
    if isinstance(raw, Mapping):
        pairs = [(str(k), str(v)) for k, v in raw.items()]
    else:
        text = str(raw).strip()
        if text.startswith("{"):
            return params_text(json.loads(text))
        pairs = []
        for part in filter(None, (p.strip() for p in text.split(","))):
            if "=" not in part:
                raise ValueError(f"{part!r} is not key=value; use e.g. {{dropout: 0.2}} or 'dropout=0.2'")
            k, v = part.split("=", 1)
            pairs.append((k.strip(), v.strip()))
    if any(("," in k + v) or ("=" in k) or not k for k, v in pairs):
        raise ValueError("parameter names and values may not contain ',' (or '=' in names)")
    for k, v in pairs:
        if problem := text_problem(k) or text_problem(f"{k}={v}"):
            raise ValueError(f"parameter {k}={v!r} {problem}")
    return ",".join(f"{k}={v}" for k, v in sorted(pairs))


def _cidr(raw: Any) -> str:
    text = nonempty_str(raw)
    try:
        net = ipaddress.ip_network(text, strict=False)
    except ValueError:
        raise ValueError(f"{text!r} is not a CIDR block; use e.g. 203.0.113.7/32 (your address)") from None
    if net.prefixlen == 0:
        raise ValueError(f"{text!r} opens SSH to the whole internet; use your own address, e.g. 203.0.113.7/32")
    return str(net)


# The widest SSH source range accepted without `gpubench:allowWideSsh: true`.
SSH_MAX_WIDTH = {4: 16, 6: 48}


def _results(raw: Any) -> str:
    """A bucket URL (payload.results_location) or `stack:<results stack>`; the prefix must be shell-safe."""
    text = nonempty_str(raw)
    if text.startswith(STACK_REF):
        if not text[len(STACK_REF) :]:
            raise ValueError("a stack reference needs a name, e.g. stack:aws-results")
        return text.rstrip("/")
    prefix = parse_results_location(text, schemes=BUCKET_SCHEMES, other_forms=[_STACK_REF_FORM]).prefix
    if not _PREFIX.fullmatch(prefix):
        raise ValueError(
            f"prefix {prefix.rstrip('/')!r} in {text!r} may only use letters, digits, '.', '_', '-' and '/' "
            "(it is written into the instance's env and shell unquoted)"
        )
    return text.rstrip("/")


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


def _image(raw: Any) -> str:
    text = nonempty_str(raw)
    if not is_image_reference(text):
        raise ValueError(
            f"{text!r} is not a container image reference; give the image you built from payload/Dockerfile "
            "and pushed, e.g. registry.example/gpubench:{generation} (lowercase repository, optional :tag and "
            "@sha256:digest), or leave payloadImage unset for the official TensorFlow image"
        )
    return text


def _ssh_key(raw: Any) -> str:
    text = nonempty_str(raw)
    if not text.startswith(("ssh-", "ecdsa-")):
        raise ValueError("expected an OpenSSH public key line (ssh-ed25519 AAAA... or ssh-rsa AAAA...)")
    return text


def _root_gb(raw: Any) -> int:
    if (value := _positive_int(raw)) < 60:
        raise ValueError(f"{value} GB is smaller than the Deep Learning images (use 60 or more)")
    return value


def _workload_spec(raw: Any) -> str:
    """The absolute path of a workload spec (relative to the current directory), checked before any launch."""
    text = nonempty_str(raw)
    try:
        return load_spec(Path(text).expanduser().resolve()).path
    except WorkloadSpecError as exc:
        raise ValueError(f"{exc} (the path is relative to the directory you run from)") from None


def _regions(raw: Any) -> tuple[str, ...]:
    items = raw if isinstance(raw, (list, tuple)) else str(raw).split(",")
    names = tuple(str(i).strip() for i in items if str(i).strip())
    if not names:
        raise ValueError(f"expected a comma list of regions, e.g. us-east-1,us-west-2, got {raw!r}")
    return names


# Where a cloud instance's code bundle unpacks the workload spec and its workdir (docs/workloads.md).
CLOUD_WORKLOAD_SPEC = "/gpubench/workload/workload.yaml"


def checked(typ: Any, check: Callable[[Any], Any]) -> Any:
    """A field type whose own check runs on the raw value before pydantic's."""
    return Annotated[typ, BeforeValidator(check)]


Text = checked(str, nonempty_str)
Flag = checked(bool, _bool)
PositiveInt = checked(int, _positive_int)
Schedule = checked(str, lambda raw: parse_schedule(nonempty_str(raw)).text)  # a ScheduleError is a ValueError
Image = checked(str, _image)
Benchmarks = checked(tuple[str, ...], benchmark_names)
Params = checked(str, params_text)
WorkloadSpec = checked(str, _workload_spec)
_max_hours = hours(MIN_HOURS, MAX_HOURS_LIMIT, False, _MAX_HOURS_WHY)


def Choice(allowed: tuple[str, ...]) -> Any:  # noqa: N802 - a type, spelt like one
    return checked(str, partial(_choice, allowed))


def config_key(name: str, description: str, default: Any = None) -> Any:
    """A config key `gpubench:<name>`: the field's alias, its description and default."""
    return Field(default, alias=name, description=description)


class StackConfig(BaseModel):
    """What every stack kind shares: its name, its provider keys, its kind."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    stack: str = Field(description="the stack's name: stacks/Pulumi.<stack>.yaml")
    provider_config: Mapping[str, str] = Field(default_factory=dict, description="aws:region, gcp:project ...")

    @classmethod
    def config_keys(cls) -> list[str]:
        """The `gpubench:` keys this kind of stack reads (every field with a config-key alias)."""
        return [f.alias for f in cls.model_fields.values() if f.alias]


class BenchmarkConfig(StackConfig):
    """What one benchmark (or recurring) stack launches; field names follow the config keys in snake_case."""

    stack_type: Choice(STACK_TYPES) = config_key("stackType", "benchmark, or recurring: on a schedule", "benchmark")
    offering: Text | None = config_key("offering", "catalog id of what to launch, e.g. aws/p3.8xlarge")
    market: Choice(MARKETS) = config_key("market", "billing market of the instance", "on-demand")
    suite: Benchmarks = config_key("suite", "built-in benchmarks to run, in order", DEFAULT_SUITE)
    workload: WorkloadSpec | None = config_key("workload", "your own job instead of the suite: a workload spec file")
    probe_seconds: PositiveInt | None = config_key("probeSeconds", "a bench probe: stop once steady or after this")
    epochs: PositiveInt | None = config_key("epochs", "epochs to train (epoch benchmarks)")
    steps: PositiveInt | None = config_key("steps", "training steps (throughput benchmarks); not with epochs")
    batch_size: PositiveInt | None = config_key("batchSize", "per-GPU batch size")
    precision: Choice(PRECISIONS) = config_key("precision", "fp32, or mixed (Keras mixed_float16)", "fp32")
    params: Params | None = config_key("params", "benchmark parameter overrides, e.g. {dropout: 0.2}")
    gpus: checked(str, gpu_count(1)) = config_key("gpus", "'all' or how many of the offering's GPUs", "all")
    data: checked(str, _text) | None = config_key("data", "synthetic, download or a directory on the instance")
    max_hours: checked(float, _max_hours) = config_key("maxHours", "hard deadline (hours): then terminated", 6.0)
    results: checked(str, _results) | None = config_key("results", "bucket URL or stack:<results stack>")
    payload_image: Image | None = config_key("payloadImage", "a prebuilt payload image (unset: the TensorFlow one)")
    backend: Choice(BACKENDS) | None = config_key("backend", "Keras backend")
    all_reduce: Choice(ALL_REDUCES) | None = config_key("allReduce", "MirroredStrategy's all-reduce (several GPUs)")
    zone: Text | None = config_key("zone", "the zone to launch in (inside the stack's region)")
    subnet: Text | None = config_key("subnet", "AWS: an existing subnet (unset: the default VPC)")
    ssh_cidr: checked(str, _cidr) | None = config_key("sshCidr", "source range allowed to SSH in")
    allow_wide_ssh: Flag = config_key("allowWideSsh", f"allow an sshCidr wider than /{SSH_MAX_WIDTH[4]}", False)
    ssh_public_key: checked(str, _ssh_key) | None = config_key("sshPublicKey", "OpenSSH public key line")
    root_volume_gb: checked(int, _root_gb) = config_key("rootVolumeGb", "root volume size in GB (>= 60)", 150)
    expect_gpu: Flag = config_key("expectGpu", "fail at once if the payload sees no GPU", True)
    image: Text | None = config_key("image", "host image override")
    every: Schedule | None = config_key("every", "recurring stacks: the schedule (UTC), e.g. 'rate(7 days)'")

    @model_validator(mode="after")
    def _rules_across_keys(self) -> BenchmarkConfig:
        if self.workload and self.payload_image:
            raise ConfigError(
                "payloadImage",
                "a cloud stack's workload travels in the code bundle, which a prebuilt payload image does not "
                "fetch: drop gpubench:payloadImage (the spec's `image`, or the official TensorFlow image, runs it)",
            )
        if self.stack_type == "recurring" and self.every is None:
            raise ConfigError(
                "every",
                "required for a recurring stack: its schedule (UTC), e.g. 'rate(7 days)' or 'cron(0 3 ? * MON *)'",
            )
        if self.offering is None:
            raise ConfigError(
                "offering",
                "required: the catalog id of what to launch, e.g. aws/p3.8xlarge (see `python -m infra stacks`)",
            )
        if self.epochs and self.steps:
            raise ConfigError("steps", "gpubench:epochs and gpubench:steps are mutually exclusive; set one")
        net = ipaddress.ip_network(self.ssh_cidr) if self.ssh_cidr and not self.allow_wide_ssh else None
        if net and net.prefixlen < (limit := SSH_MAX_WIDTH[net.version]):
            raise ConfigError(
                "sshCidr",
                f"{self.ssh_cidr} is wider than /{limit} (IPv{net.version}); use your own address "
                "(e.g. 203.0.113.7/32), or set gpubench:allowWideSsh: true if you mean it",
            )
        return self

    def zone_setting(self) -> tuple[str | None, str | None]:
        """(key, zone): `gpubench:zone`, else a provider-namespace zone key (`gcp:zone`)."""
        if self.zone:
            return "zone", self.zone
        return next(((k, v) for k, v in self.provider_config.items() if k.endswith(":zone") and v), (None, None))

    def results_ref(self, provider: str) -> str:
        """The results location: the configured one, else the provider's results stack."""
        return self.results or f"{STACK_REF}{provider}-results"


class _ProviderStack(StackConfig):
    """A per-cloud stack (results bucket, sweeper): it names its provider."""

    provider: Choice(PROVIDERS) | None = config_key("provider", "the cloud this stack lives in")

    @model_validator(mode="after")
    def _needs_provider(self) -> _ProviderStack:
        if self.provider is None:
            raise ConfigError(
                "provider", f"required for a {self.stack_type} stack; allowed values: {', '.join(PROVIDERS)}"
            )
        return self


class ResultsConfig(_ProviderStack):
    """The per-cloud results bucket stack."""

    stack_type: Choice(STACK_TYPES) = config_key("stackType", "results: the cloud's results bucket", "results")
    bucket_name: Text | None = config_key("bucketName", "the bucket's name (default: generated)")
    checkpoint_days: PositiveInt = config_key("checkpointDays", "days checkpoints are kept", 30)
    noncurrent_days: PositiveInt = config_key("noncurrentDays", "days overwritten result versions are kept", 30)

    @model_validator(mode="after")
    def _names_the_cloud_accepts(self) -> ResultsConfig:
        """Names the cloud would refuse at `pulumi up` (infra/<cloud>/rules.py `config`), refused now."""
        table = table_of(self.provider)
        values = {f.alias: getattr(self, name) for name, f in type(self).model_fields.items() if f.alias}
        for key, rule in table.config.items():
            if values[key] is not None and (problem := table.rule(rule).problem(values[key])):
                raise ConfigError(key, f"{problem}; choose another name")
        return self


class SweeperConfig(_ProviderStack):
    """The leak sweep as a function on the cloud's scheduler (stacks aws-sweeper, gcp-sweeper)."""

    stack_type: Choice(STACK_TYPES) = config_key("stackType", "sweeper: the leak sweep on a schedule", "sweeper")
    every: Schedule = config_key("every", "how often the sweep runs (UTC)", "rate(1 hour)")
    regions: checked(tuple[str, ...], _regions) | None = config_key("regions", "default: the stack's region / all")
    dry_run: Flag = config_key("dryRun", "report what would be terminated, terminate nothing", False)


MODELS = {
    "benchmark": BenchmarkConfig,
    "recurring": BenchmarkConfig,
    "results": ResultsConfig,
    "sweeper": SweeperConfig,
}


def validated(model: type[BaseModel], values: Mapping[str, Any]) -> Any:
    """`model` built from `values`; its first ValidationError as the ConfigError naming the key and the fix."""
    try:
        return model.model_validate(values)
    except ValidationError as exc:
        error = exc.errors()[0]
        cause = error.get("ctx", {}).get("error")
        if isinstance(cause, ConfigError):
            raise cause from None
        name = str(error["loc"][0]) if error["loc"] else "config"
        raise ConfigError(name, str(cause) if cause is not None else error["msg"]) from None


def _split(raw: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """`gpubench:*` keys (bare keys included) apart from provider keys."""
    ours: dict[str, Any] = {}
    provider: dict[str, str] = {}
    for full, value in raw.items():
        ns, key = split_key(full := str(full))
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
    """Regions and zones as the cloud spells them, other names as slugs (they reach the guest's env and CLIs)."""
    try:
        text = nonempty_str(value)
    except ValueError as exc:
        raise ConfigError(full, str(exc)) from None
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
    """(namespace, key) of a config key, a bare key counting as `gpubench`; a namespace typo
    (`gpubnech:suite`, `gpubench-suite`) is a ConfigError, so a setting never silently falls back."""
    ns, _, key = full.rpartition(":")
    if ns == "":
        m = re.fullmatch(r"([A-Za-z]+)[-_.]([A-Za-z].*)", key)  # `gpubench-suite`, `gpubnech_suite`: ':' got lost
        if m and _near_namespace(m[1]):
            raise ConfigError(full, f"unknown key {full!r}. Did you mean {NAMESPACE}:{m[2]}?")
        return NAMESPACE, key
    if ns != NAMESPACE and _near_namespace(ns):
        raise ConfigError(full, f"namespace {ns!r} looks like a typo. Did you mean {NAMESPACE}:{key}?")
    return ns, key


def _near_namespace(ns: str) -> bool:
    """`gpubnech`, `gpubench-x`, `GPUBench` (or `gpubench`): close to `gpubench` (difflib ratio >= 0.75)."""
    low = ns.lower()
    return difflib.SequenceMatcher(None, low, NAMESPACE).ratio() >= 0.75 or re.sub(r"[^a-z]", "", low) == NAMESPACE


def reject_unknown(keys: Iterable[str], allowed: Iterable[str], kind: str) -> None:
    """ConfigError for the first key not in `allowed`, suggesting the closest allowed key."""
    allowed = list(allowed)
    for key in keys:
        if key not in allowed:
            close = difflib.get_close_matches(key, allowed, n=1)
            hint = f" Did you mean {NAMESPACE}:{close[0]}?" if close else ""
            article = "an" if kind[:1].lower() in "aeiou" or kind.startswith("SSH") else "a"
            raise ConfigError(
                key, f"unknown key for {article} {kind} stack.{hint} Allowed keys: {', '.join(sorted(allowed))}"
            )


def parse_config(raw: Mapping[str, Any], stack: str) -> BenchmarkConfig | ResultsConfig | SweeperConfig:
    """Parse a stack's config mapping; raises ConfigError naming the key and the allowed values."""
    if not isinstance(raw, Mapping):
        raise ConfigError("config", f"expected a mapping of keys to values, got {type(raw).__name__}")
    try:
        check_stack_name(stack)  # the payload's rule: a results key segment and a guest env value
    except BadKeyPart as exc:
        raise ConfigError("stack", f"{exc}; rename the stack file stacks/Pulumi.<name>.yaml") from None
    ours, provider = _split(raw)
    try:
        stack_type = _choice(STACK_TYPES, ours.get("stackType", "benchmark"))
    except ValueError as exc:
        raise ConfigError("stackType", str(exc)) from None
    keys = MODELS[stack_type].config_keys()  # a benchmark stack reads all a recurring one does but `every`
    reject_unknown(ours, [k for k in keys if stack_type != "benchmark" or k != "every"], stack_type)
    given = {k: v for k, v in ours.items() if v is not None}
    if given.get("workload") is not None and "suite" in given:
        raise ConfigError(
            "suite",
            "set gpubench:suite or gpubench:workload, not both: a stack runs built-in benchmarks or one workload",
        )
    cfg = validated(MODELS[stack_type], {**given, "stackType": stack_type, "stack": stack, "provider_config": provider})
    return cfg.model_copy(update={"suite": ()}) if getattr(cfg, "workload", None) else cfg


def check_gpus(gpus: str, offering: Any, lo: int) -> None:
    """`gpus` ('all' or a count of at least `lo`) within the offering's GPU count."""
    if gpus != "all" and int(gpus) > (n := offering.gpu_count):
        raise ConfigError("gpus", f"{gpus} GPUs requested but {offering.id} has {n}; use 'all' or {lo}..{n}")


def check_against_offering(cfg: BenchmarkConfig, offering: Any, provider: str) -> None:
    """Checks that need the catalog row: market, GPU count, zone, subnet, results scheme."""
    if cfg.market not in offering.markets:
        raise ConfigError(
            "market", f"{cfg.market!r} is not offered for {offering.id}; allowed values: {', '.join(offering.markets)}"
        )
    check_gpus(cfg.gpus, offering, 1)
    cloud = clouds.get(provider) if clouds.is_cloud(provider) else None
    key, zone = cfg.zone_setting()
    if cloud and zone and not cloud.ZONE_PATTERN.fullmatch(zone):
        raise ConfigError(
            key, f"{zone!r} is not a {provider} zone name (e.g. {cloud.DEFAULT_REGION}-a / {cloud.DEFAULT_REGION}a)"
        )
    region = cfg.provider_config.get(f"{provider}:region")
    if cloud and zone and region and cloud.region_of_zone(zone) != region:
        raise ConfigError(
            key,
            f"zone {zone} is outside the stack's region {region} ({provider}:region); "
            f"use a zone of {region} or change the region to {cloud.region_of_zone(zone)}",
        )
    subnet = getattr(cloud, "SUBNET_PATTERN", None)
    if cfg.subnet and subnet is None:
        raise ConfigError("subnet", f"{provider} stacks create their own network; remove gpubench:subnet")
    if cfg.subnet and not subnet.fullmatch(cfg.subnet):
        raise ConfigError("subnet", f"{cfg.subnet!r} is not a {provider} subnet id; use e.g. subnet-0123456789abcdef0")
    bucket = cfg.results and not cfg.results.startswith(STACK_REF) and parse_results_location(cfg.results)
    if bucket and cloud and f"{bucket.scheme}://" != cloud.RESULTS_SCHEME:
        raise ConfigError(
            "results",
            f"{cfg.results!r} is not reachable with {provider} credentials; use a {cloud.RESULTS_SCHEME} bucket "
            f"or stack:{provider}-results",
        )
