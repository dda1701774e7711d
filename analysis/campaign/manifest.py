"""The campaign record at `campaigns/<campaign-id>/manifest.json` in the results bucket. Writes are whole
and serialised in this process; two machines updating one campaign at once: the last writer wins."""

from __future__ import annotations

import json
import re
import threading
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, ValidationError

from analysis import fastjson
from analysis.observe import read_bounded
from payload import exitcodes
from payload.layout import name_problem
from payload.storage import ObjectNotFound
from payload.terminal import terminal_text
from payload.timestamps import iso, parse_time, stamp

SCHEMA_VERSION = 1
MANIFEST_KEY = "campaigns/{id}/manifest.json"
SUMMARY_KEY = "campaigns/{id}/summary.json"
STATES = ("pending", "launching", "launched", "launch-failed")
MAX_MANIFEST_BYTES = 64 * 1024 * 1024  # thousands of stacks with every launch attempt fit many times over
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,79}$")


class ManifestError(exitcodes.GpubenchError, RuntimeError):
    """A manifest that is missing, unreadable or for another campaign; the message says which key."""

    exit_code = exitcodes.USAGE


class ManifestInvalid(ManifestError):
    """A manifest in the bucket that is not one (not JSON, a wrong shape): data refused, not a bad argument."""

    exit_code = exitcodes.INVALID


def new_campaign_id(now: datetime | None = None) -> str:
    """UTC-timestamp id, one per run of a schedule: `20250106T060000Z`."""
    return stamp(now)


def check_id(campaign_id: str) -> str:
    if not _ID.match(campaign_id or ""):
        raise ManifestError(
            f"campaign id {campaign_id!r} is not usable as a bucket key: use letters, digits, '.', '_' "
            f"and '-' (e.g. {new_campaign_id()}, the default)"
        )
    return campaign_id


def _time(value: str | None) -> str | None:
    if value is not None:
        try:
            parse_time(value)
        except ValueError:
            raise ValueError(f"{value[:40]!r} is not an ISO 8601 time, e.g. 2025-01-06T06:00:00Z") from None
    return value


Time = Annotated[str | None, AfterValidator(_time)]  # what every reader relies on is checked once, at load


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")  # fields a newer version adds are kept, not refused


class _Failure(_Open):
    kind: str = "other"
    message: str = ""


class _Teardown(_Open):
    action: str | None = None
    at: Time = None


class _Stack(_Open):
    state: Literal[STATES] = "pending"  # type: ignore[valid-type]
    offering: str | None = None
    market: str | None = None
    zone: str | None = None
    suite: list[str] | None = None
    hourly_usd: float | None = None
    up_started_at: Time = None
    launched_at: Time = None
    deadline: Time = None
    outputs: dict[str, Any] | None = None
    run_ids: list[str] = []
    attempts: list[dict[str, Any]] = []
    failure: _Failure | None = None
    teardown: _Teardown | None = None


def _stack_names(stacks: dict[str, _Stack]) -> dict[str, _Stack]:
    bad = next((problem for name in stacks if (problem := name_problem("stack name", name))), None)
    if bad:
        raise ValueError(bad)
    return stacks


class _Manifest(_Open):
    campaign_id: str
    results: str
    stacks: Annotated[dict[str, _Stack], AfterValidator(_stack_names)]
    selections: list[dict[str, Any]] = []


def check_shape(data: Any, where: str) -> None:
    """A ManifestError naming `where` and the first bad part when `data` is not a campaign manifest."""
    try:
        _Manifest.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        part = ".".join(str(p) for p in error["loc"]) or "the document"
        cause = error.get("ctx", {}).get("error") or error["msg"].split(" or instance of ")[0]
        raise ManifestInvalid(
            f"{where} is not a campaign manifest: {terminal_text(part, multiline=False)}: {cause}; "
            "fix it, or start a new campaign (a new id)"
        ) from None


class Manifest:
    """One campaign's manifest: its JSON document and the store it lives in."""

    def __init__(self, store: Any, data: dict[str, Any]):
        self.store = store
        self.data = data
        self._lock = threading.RLock()

    @property
    def campaign_id(self) -> str:
        return self.data["campaign_id"]

    @property
    def key(self) -> str:
        return MANIFEST_KEY.format(id=self.campaign_id)

    @property
    def url(self) -> str:
        return self.store.url_for(self.key)

    @property
    def stacks(self) -> dict[str, dict[str, Any]]:
        return self.data["stacks"]

    @classmethod
    def load(cls, store: Any, campaign_id: str) -> Manifest | None:
        """The stored manifest, or None when this campaign has none yet."""
        key = MANIFEST_KEY.format(id=check_id(campaign_id))
        try:
            raw = read_bounded(store, key, MAX_MANIFEST_BYTES)
        except ObjectNotFound:
            return None
        except ValueError as exc:
            raise ManifestInvalid(f"{store.url_for(key)}: {exc}; fix or delete it") from None
        try:
            data = fastjson.loads(raw)
        except ValueError as exc:
            raise ManifestInvalid(f"{store.url_for(key)} is not valid JSON ({exc}); fix or delete it") from None
        check_shape(data, store.url_for(key))
        if data["campaign_id"] != campaign_id:
            raise ManifestError(
                f"{store.url_for(key)} is the manifest of campaign {data['campaign_id']!r}, not {campaign_id!r}"
            )
        return cls(store, data)

    @classmethod
    def require(cls, store: Any, campaign_id: str) -> Manifest:
        found = cls.load(store, campaign_id)
        if found is None:
            raise ManifestError(
                f"no campaign {campaign_id!r}: {store.url_for(MANIFEST_KEY.format(id=campaign_id))} "
                "does not exist. Check the id and --results (the bucket `up` wrote to)."
            )
        return found

    @classmethod
    def open_or_create(cls, store: Any, campaign_id: str, results_url: str) -> Manifest:
        found = cls.load(store, campaign_id)
        if found is not None:
            return found
        now = iso()
        return cls(
            store,
            {
                "schema_version": SCHEMA_VERSION,
                "campaign_id": campaign_id,
                "results": results_url,
                "created_at": now,
                "updated_at": now,
                "selections": [],
                "stacks": {},
            },
        )

    def ensure(self, name: str, facts: dict[str, Any]) -> None:
        """A new stack's entry, `pending` with `facts` (an existing entry is kept as is)."""
        with self._lock:
            self.stacks.setdefault(name, {"state": "pending", "attempts": [], "run_ids": [], **facts})

    def update(self, name: str, save: bool = True, **fields: Any) -> None:
        with self._lock:
            self.stacks[name].update(fields)
            if save:
                self.save()

    def add_attempt(self, name: str, attempt: dict[str, Any]) -> None:
        with self._lock:
            self.stacks[name].setdefault("attempts", []).append(attempt)

    def save(self) -> None:
        """Write the whole manifest (StorageError propagates: a campaign must not run unrecorded)."""
        with self._lock:
            self.data["updated_at"] = iso()
            self.store.put_bytes(self.key, json.dumps(self.data, indent=2).encode(), "application/json")
