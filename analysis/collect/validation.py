"""Judging what a bucket holds: which keys are results, which files are set aside and why, and whether a
result.json's bytes make a table row, the same whichever way a file was read."""

from __future__ import annotations

import json
from collections.abc import Iterable

from analysis.collect.upgrade import MigrationError, migrate
from analysis.dataset.row import result_to_row
from analysis.fastjson import NestedTooDeeply, loads_finite
from payload import layout
from payload.schema import ResultValidationError, is_valid, validate_result

# What a run directory may hold besides result.json (payload.layout); log-tail.txt is a job's rolling log
# tail (payload.workloads.job.LOG_TAIL_NAME: named here, that module loads the job runner)
LOG_TAIL_NAME = "log-tail.txt"
KNOWN_RUN_FILES = (*layout.RUN_FILES, LOG_TAIL_NAME)
KNOWN_RUN_DIRS = layout.RUN_DIRS

PARTIAL_UPLOAD = "partial: temporary upload file"
UNREADABLE_NAME = "unreadable name: not UTF-8 text (shown escaped); rename it to collect it"
UNKNOWN_RUN_FILE = (
    "unknown file in a run directory (expected result.json, events.jsonl, epochs.csv, log-tail.txt, checkpoints/)"
)

# The largest result.json a collect reads (a real one is a few kB): past it a file is set aside unread,
# so a planted file can neither fill memory nor grow the manifest or the table.
MAX_RESULT_BYTES = 4 * 1024 * 1024


def too_large(size: int | None) -> str | None:
    if size is not None and size > MAX_RESULT_BYTES:
        cap = MAX_RESULT_BYTES // (1024 * 1024)
        return f"too large: {size} bytes or more, over the {cap} MiB a result.json may have (set aside unread)"
    return None


def parse(data, *, source: str, key: str, etag: str | None) -> tuple[dict, dict]:
    """(row, migrated result) of one result.json's bytes; ValueError with the reason."""
    if (why := too_large(len(data))) is not None:  # what a capped read handed over: never parsed
        raise ValueError(why)
    data = bytes(data)
    if not data.strip():
        raise ValueError("corrupt: empty file (upload interrupted?)")
    try:
        raw, finite = loads_finite(data)
    except UnicodeDecodeError:
        raise ValueError("corrupt: not UTF-8 text") from None
    except NestedTooDeeply:
        raise ValueError("corrupt: nested too deeply to be a result") from None
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"corrupt: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}; truncated upload?)"
        ) from None
    try:
        result, version = migrate(raw)
        if not is_valid(result):  # a yes costs 0.016 ms; validate_result says why not
            validate_result(result)
    except MigrationError as exc:
        raise ValueError(f"unknown schema: {exc}") from None
    except ResultValidationError as exc:
        problems = exc.problems[:5] + ([f"... {len(exc.problems) - 5} more"] if len(exc.problems) > 5 else [])
        raise ValueError("invalid: " + "; ".join(problems)) from None
    # a document orjson read holds no NaN or infinity (it refuses them); a migrated one is checked again
    try:
        row = result_to_row(
            result,
            source=source,
            key=key,
            etag=etag,
            schema_version_read=version,
            check_finite=not (finite and result is raw),
        )
    except ValueError:
        raise
    except Exception as exc:  # noqa: BLE001 - a value the row cannot be made from sets this result aside, nothing more
        raise ValueError(f"invalid: {type(exc).__name__}: {exc}") from None
    return row, result


def run_file_problem(rest: str) -> str | None:
    """Why a file of a run directory (not result.json) is set aside, None for a known one."""
    if layout.version_of(rest)[0] in KNOWN_RUN_FILES or rest.startswith(KNOWN_RUN_DIRS):
        return None
    if rest.split("/")[-1].startswith(".") or rest.endswith((".tmp", ".part")):
        return PARTIAL_UPLOAD
    return UNKNOWN_RUN_FILE


def classify(keys: Iterable[str]) -> tuple[list[str], list[dict], int]:
    """(result keys, set-aside files, number of run directories) of a listing; keys outside runs/ are left alone."""
    results, skipped, runs = [], [], {}
    for key in keys:
        m = layout.parse_key(key)
        if m is None:
            if key.startswith(layout.ROOT):
                skipped.append({"key": key, "reason": "unknown file: not inside runs/<stack>/<run-id>/"})
            continue
        run = runs.setdefault((m.stack, m.run_id), {"result": False, "files": []})
        if m.is_result:
            run["result"] = True
            results.append(key)
        elif (why := run_file_problem(m.rest)) is None:
            run["files"].append(m.rest)
        else:
            skipped.append({"key": key, "reason": why})
    for (stack, run_id), run in runs.items():
        if not run["result"]:
            found = ", ".join(sorted({f.split("/")[0] for f in run["files"]})) or "nothing"
            skipped.append(
                {
                    "key": f"{layout.ROOT}{stack}/{run_id}/",  # as listed: a name outside the slugs is no error here
                    "reason": f"partial run: no result.json (still running, or stopped before writing it); has {found}",
                }
            )
    return results, skipped, len(runs)


def wrong_layout(url: str, listing: Iterable[str]) -> str:
    """The error for a location holding objects but no runs: the layout, and the URL probably meant."""
    keys = sorted(listing)
    hint = ""
    for key in keys:
        head, sep, _ = key.rpartition("/" + layout.ROOT)
        parts = key.split("/")
        if sep and layout.parse_key(key[len(head) + 1 :]) is not None:
            hint = f"; did you mean {url.rstrip('/')}/{head}?"
            break
        if len(parts) == 3 and parts[2] == layout.RESULT_NAME and url.rstrip("/").endswith("/runs"):
            hint = f"; did you mean {url.rstrip('/')[: -len('/runs')]}? (the URL is the folder holding runs/)"
            break
    sample = ", ".join(keys[:3]) + (" ..." if len(keys) > 3 else "")
    return (
        f"no runs in the expected layout {layout.LAYOUT} under {url} ({len(keys)} object(s), e.g. {sample})"
        f"{hint}; the table is left as it was"
    )


def misplaced_check(row: dict, key: str) -> dict:
    """The row, if the result is where it claims to be; else ValueError("misplaced: ...") (a copy or forgery)."""
    where = layout.parse_key(key)
    claims = (row.get("stack"), row.get("run_id"))
    if where is not None and (where.stack, where.run_id) == claims:
        return row
    try:
        expected = f" (its place is {layout.result_key(*claims)})"
    except layout.BadKeyPart:
        expected = " (its stack or run id cannot even be a key)"
    raise ValueError(
        f"misplaced: the result says stack {claims[0]!r}, run {claims[1]!r}, but is stored at {key}{expected}"
    )
