"""Where a results table lives (a directory or a bucket prefix) and the options that reach it: one spelling
whatever the user typed (`table`, `./table`, `file:///abs/table`, `s3://b/t/`); and what goes wrong there,
a full disk or a damaged table, named with the way to recover: OSErrors, which every command reports as a
message and exit code 1, each recognised here once whichever library met it (SQLite, Delta Lake, pyarrow)."""

from __future__ import annotations

import errno
import os
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

REMOTE_SCHEMES = ("s3", "gs")


@dataclass(frozen=True)
class Location:
    text: str  # as the user gave it: what messages name
    uri: str  # what deltalake opens: an absolute path, or s3://bucket/prefix
    storage_options: dict[str, str] = field(default_factory=dict)

    @property
    def local(self) -> Path | None:
        return None if urlparse(self.uri).scheme in REMOTE_SCHEMES else Path(self.uri)


def resolve(table: str | os.PathLike) -> Location:
    """The Location of `table`; ValueError naming an unsupported scheme."""
    text = str(table)
    parts = urlparse(text)
    if parts.scheme in REMOTE_SCHEMES:
        if not parts.netloc:
            raise ValueError(f"table location {text!r} names no bucket; write it as {parts.scheme}://BUCKET/PREFIX")
        uri = f"{parts.scheme}://{parts.netloc}/{parts.path.strip('/')}".rstrip("/")
        # gs://: the key file GOOGLE_APPLICATION_CREDENTIALS names, else application default credentials
        key = os.environ.get("GOOGLE_APPLICATION_CREDENTIALS")
        gs = {"GOOGLE_SERVICE_ACCOUNT": key} if key else {}
        return Location(text, uri, _s3_options() if parts.scheme == "s3" else gs)
    if parts.scheme == "file":
        return Location(text, str(Path(parts.path).resolve()))
    if parts.scheme and len(parts.scheme) > 1:  # c:\... is a path, http:// is not supported
        raise ValueError(
            f"table location {text!r}: {parts.scheme}:// is not supported; give a directory, s3://BUCKET/PREFIX "
            "or gs://BUCKET/PREFIX"
        )
    return Location(text, str(Path(text).resolve()))


def _s3_options() -> dict[str, str]:
    """deltalake's S3 options from the variables boto3 reads."""
    env = os.environ
    options = {"AWS_REGION": env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "us-east-1"}
    endpoint = env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL")
    if endpoint:
        options["AWS_ENDPOINT_URL"] = endpoint
        options["AWS_ALLOW_HTTP"] = str(endpoint.startswith("http://")).lower()
        options["AWS_VIRTUAL_HOSTED_STYLE_REQUEST"] = "false"
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        if env.get(name):
            options[name] = env[name]
    return options


SQLITE_FULL = 13  # sqlite3's primary result code for "database or disk is full"


class DiskFull(OSError):
    def __init__(self, where: str, detail: str):
        self.where = where
        super().__init__(
            f"no space left on the disk holding {where} ({detail}): free some space there (df -h), then run the "
            "same collect again: what it committed stays in the table, and the next collect reads the rest "
            "and rebuilds results.parquet and results.csv from the table"
        )


class TableDamaged(OSError):
    def __init__(self, where: str, detail: str):
        self.where = where
        super().__init__(
            f"the results table at {where} is damaged: its log (_delta_log/) cannot be read ({detail}). "
            f"Nothing is lost that the buckets hold: move it aside (mv {where} {where}.damaged) and collect again "
            f"into {where}, which reads every result again; or put back _delta_log/ from a backup"
        )


def is_disk_full(exc: BaseException) -> bool:
    """Whether `exc` or a cause is a full disk (ENOSPC, EDQUOT, SQLITE_FULL, or Delta Lake's Rust message)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        if isinstance(exc, sqlite3.Error) and (getattr(exc, "sqlite_errorcode", 0) or 0) & 0xFF == SQLITE_FULL:
            return True
        text = str(exc)
        if "No space left on device" in text or "os error 28" in text or "Disk quota exceeded" in text:
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def first_line(exc: BaseException, limit: int = 200) -> str:
    """The first line of an error's text, at most `limit` characters (Delta Lake's carry a backtrace)."""
    text = str(exc).strip()
    return (text.splitlines()[0] if text else type(exc).__name__)[:limit]
