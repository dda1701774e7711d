"""The bucket layout: every run's files live under ``runs/<stack>/<run-id>/``, written once each (`versioned`).
The payload writes there, the launcher scopes an instance to ``runs/<stack>/<launch>-*``, collect trusts a
result only where its key agrees with what it claims: all three build and parse keys here.
"""

from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass

ROOT = "runs/"
RESULT_NAME = "result.json"
# What a run directory may hold besides result.json.
RUN_FILES = ("events.jsonl", "epochs.csv")
RUN_DIRS = ("checkpoints/",)
LAYOUT = "runs/<stack>/<run-id>/result.json"

_KEY = re.compile(r"runs/(?P<stack>[^/]+)/(?P<run>[^/]+)/(?P<rest>.+)", re.DOTALL)


class BadKeyPart(ValueError):
    """A stack name or run id that cannot be one path segment of a key."""


# The one alphabet of names that become keys, table cells and report text (stacks: Pulumi's stack names): a bidi
# override, a Cyrillic look-alike or a Unicode hyphen would print like a real stack while being another.
NAME_PATTERNS = {
    "stack name": re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}"),
    "run id": re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}"),
    "offering id": re.compile(r"[a-z0-9][a-z0-9._-]{0,39}/[A-Za-z0-9][A-Za-z0-9._+-]{0,159}"),
}
# What each kind of name may hold, in words, and an example: the fix a refusal names.
_NAME_RULES = {
    "stack name": ("'.', '_' and '-' (no '/', no '..', at most 100 characters)", "aws-p3-8x-spot"),
    "run id": ("'.', '_' and '-' (no '/', no '..', at most 200 characters)", "20240101T100000Z-i-0abc-resnet50"),
    "offering id": ("'.', '_', '-' and '+', with one '/' after the provider (no '..')", "aws/p3.8xlarge"),
}


def name_problem(kind: str, value) -> str | None:
    """Why `value` is not a valid `kind` (a key of NAME_PATTERNS), or None when it is."""
    text = value if isinstance(value, str) else str(value)
    if NAME_PATTERNS[kind].fullmatch(text) and ".." not in text:
        return None
    odd = sorted({f"U+{ord(ch):04X}" for ch in text if not (ch.isascii() and ch.isprintable())})
    detail = f" (it holds {', '.join(odd[:5])})" if odd else ""
    allowed, example = _NAME_RULES[kind]
    return f"{kind} {text!r} is not a slug{detail}: use only ASCII letters, digits and {allowed}, e.g. {example}"


def check_name(kind: str, value) -> str:
    """The name if it is a valid `kind`; else BadKeyPart naming the fix."""
    problem = name_problem(kind, value)
    if problem is not None:
        raise BadKeyPart(problem)
    return str(value)


def _segment(what: str, value: str) -> str:
    text = str(value)
    if not text or "/" in text or text in (".", ".."):
        raise BadKeyPart(f"{what} {text!r} cannot be part of a bucket key: use a name without '/', e.g. aws-p3-8x")
    return check_name(what, text)


def check_stack_name(stack: str) -> str:
    return check_name("stack name", stack)


def stack_prefix(stack: str) -> str:
    """`runs/<stack>/`: everything one stack writes."""
    return f"{ROOT}{_segment('stack name', stack)}/"


def stack_of(prefix: str) -> str:
    """stack_prefix's inverse."""
    return prefix[len(ROOT) : -1]


def run_prefix(stack: str, run_id: str) -> str:
    return f"{stack_prefix(stack)}{_segment('run id', run_id)}/"


def result_key(stack: str, run_id: str) -> str:
    return run_prefix(stack, run_id) + RESULT_NAME


@dataclass(frozen=True)
class RunKey:
    """A key inside some run directory."""

    stack: str
    run_id: str
    rest: str

    @property
    def name(self) -> str:
        """Without its write-once version: `result.v1.json` is a `result.json`."""
        return version_of(self.rest)[0]

    @property
    def is_result(self) -> bool:
        return self.name == RESULT_NAME


def stack_prefix_of(key: str) -> str | None:
    """`runs/<stack>/` of any key below one (a run's file, or a stray beside the runs), else None."""
    parts = key.split("/", 2)
    return f"{parts[0]}/{parts[1]}/" if len(parts) == 3 and parts[0] + "/" == ROOT else None


def parse_key(key: str) -> RunKey | None:
    """The run a key belongs to, or None outside `runs/<stack>/<run-id>/`."""
    m = _KEY.fullmatch(key)
    if not m or m["stack"] in (".", "..") or m["run"] in (".", ".."):
        return None
    return RunKey(m["stack"], m["run"], m["rest"])


# Write-once versions (a run's role may only create), readers take the newest: result.json (a first attempt),
# result.v1.json (the first resumed attempt), log-tail.v0.12.txt (generation 0, its 12th rewrite).
_VERSION = re.compile(
    r"(?P<stem>[^/]*?)\.v(?P<generation>[0-9]{1,6})(?:\.(?P<part>[0-9]{1,9}))?(?P<ext>\.[A-Za-z0-9]+)"
)


def versioned(name: str, generation: int, part: int = 0) -> str:
    """The name of version (generation, part) of a run file: `name` itself for (0, 0)."""
    if (generation, part) == (0, 0):
        return name
    folder, slash, base = name.rpartition("/")
    stem, dot, ext = base.rpartition(".")
    if not dot or not stem:
        raise ValueError(f"a versioned run file needs a name and an extension, got {name!r}")
    tag = f".v{generation}" + (f".{part}" if part else "")
    return f"{folder}{slash}{stem}{tag}.{ext}"


def version_of(name: str) -> tuple[str, tuple[int, int]]:
    """(unversioned name, (generation, part)); (name, (0, 0)) for an unversioned one."""
    folder, slash, base = name.rpartition("/")
    m = _VERSION.fullmatch(base)
    if m is None:
        return name, (0, 0)
    return f"{folder}{slash}{m['stem']}{m['ext']}", (int(m["generation"]), int(m["part"] or 0))


def newest_versions(keys) -> dict[str, str]:
    """{unversioned key: the key of its newest version} of a listing: what a reader reads."""
    best: dict[str, tuple[tuple[int, int], str]] = {}
    for key in keys:
        plain, version = version_of(key)
        if plain not in best or version > best[plain][0]:
            best[plain] = (version, key)
    return {plain: key for plain, (_, key) in best.items()}


def current_only(listing: dict) -> dict:
    """A listing ({key: info}) without the versions a newer one superseded."""
    keep = set(newest_versions(listing).values())
    return {key: info for key, info in listing.items() if key in keep}


def next_generation(keys) -> int:
    """The generation a new attempt of a run writes: one above any already in its directory, 0 for a new run."""
    return max((version_of(key)[1][0] + 1 for key in keys), default=0)


# The results journal (payload.spool): `journal/<stack>/<stamp>-<run-id>`, the writer's clock in fixed width (key
# order is time order), listed by a collect from its last full listing less JOURNAL_WINDOW_S (clocks differ).
JOURNAL_ROOT = "journal/"
JOURNAL_WINDOW_S = 300.0
_JOURNAL_STAMP = "%Y%m%dT%H%M%S.%fZ"  # 23 characters, e.g. 20261126T034512.123456Z
_JOURNAL_KEY = re.compile(r"journal/(?P<stack>[^/]+)/(?P<stamp>[0-9]{8}T[0-9]{6}\.[0-9]{6}Z)-(?P<run>[^/]+)")


def journal_prefix(stack: str) -> str:
    return f"{JOURNAL_ROOT}{_segment('stack name', stack)}/"


def journal_stamp(when: float) -> str:
    return _dt.datetime.fromtimestamp(when, tz=_dt.timezone.utc).strftime(_JOURNAL_STAMP)


def journal_key(stack: str, run_id: str, when: float) -> str:
    return f"{journal_prefix(stack)}{journal_stamp(when)}-{_segment('run id', run_id)}"


def journal_start(stack: str, since: float) -> str:
    """The key a journal listing starts after to find every entry stamped at `since` or later."""
    return f"{journal_prefix(stack)}{journal_stamp(since)[:-8]}"  # to the second: sorts before its entries


def journal_run(key: str, stack: str) -> str | None:
    """The run id an entry of `stack`'s journal names, or None for a key that is not one."""
    m = _JOURNAL_KEY.fullmatch(key)
    if m is None or m["stack"] != stack or name_problem("run id", m["run"]) is not None:
        return None
    return m["run"]
