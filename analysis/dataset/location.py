"""Where a results table lives (a directory or a bucket prefix) and the options that reach it: one spelling
whatever the user typed (`table`, `./table`, `file:///abs/table`, `s3://b/t/`)."""

from __future__ import annotations

import os
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
        return Location(text, uri, _OPTIONS[parts.scheme]())
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


def _gs_options() -> dict[str, str]:
    """Application default credentials, or the key file GOOGLE_APPLICATION_CREDENTIALS names."""
    key = os.environ.get("GOOGLE_APPLICATION_CREDENTIALS")
    return {"GOOGLE_SERVICE_ACCOUNT": key} if key else {}


_OPTIONS = {"s3": _s3_options, "gs": _gs_options}
