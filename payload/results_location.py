"""Where results go: the one parser of a results location (s3://, gs://, file:// or a local path), so the
payload, the stack configs, the SSH runner, teardown and collect accept, refuse and explain it alike.
Standard library, Python 3.8 (the legacy payload image).
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass

# Scheme -> how a user writes it: the forms listed in every error message.
FORMS = {"s3": "s3://bucket[/prefix]", "gs": "gs://bucket[/prefix]", "file": "file:///abs/dir", "path": "a local path"}
BUCKET_SCHEMES = ("s3", "gs")  # cloud buckets: what a cloud stack may name
URL_SCHEMES = ("s3", "gs", "file")  # URLs only: what an SSH stack may name
ALL_SCHEMES = ("s3", "gs", "file", "path")  # everything the payload accepts ("path": a bare local path)
# Spellings users reach for, and the scheme they mean.
_ALIASES = {"s3a": "s3", "s3n": "s3", "aws": "s3", "gcs": "gs", "gcp": "gs", "google": "gs", "local": "file"}
_IPV4 = re.compile(r"\d{1,3}(\.\d{1,3}){3}")


class ResultsLocationError(ValueError):
    """A results location that cannot be used; the message names the value and the fix."""


@dataclass(frozen=True)
class ResultsLocation:
    """A parsed results location: a bucket (s3/gs) and prefix, or a file path."""

    scheme: str  # "s3", "gs" or "file" (a bare local path is scheme "file" with given_as_path)
    bucket: str  # bucket name; "" for files
    prefix: str  # key prefix inside the bucket: "" or "team/runs/" (always ending in "/")
    path: str  # files: the directory as written (relative for a bare path); "" for buckets
    text: str  # the value as given
    given_as_path: bool = False

    @property
    def is_bucket(self) -> bool:
        return self.scheme in BUCKET_SCHEMES

    @property
    def url(self) -> str:
        """`s3://bucket/prefix` (no trailing slash), or the file URL or path as given."""
        if not self.is_bucket:
            return self.text
        return f"{self.scheme}://{self.bucket}" + (f"/{self.prefix.rstrip('/')}" if self.prefix else "")


def _forms(schemes: Sequence[str], other_forms: Sequence[str], neither: bool = True) -> str:
    """For a message: "neither a bucket URL (s3://..., gs://...) nor a local path"."""
    buckets = [FORMS[s] for s in schemes if s in BUCKET_SCHEMES]
    others = [FORMS[s] for s in schemes if s not in BUCKET_SCHEMES] + list(other_forms)
    forms = ([f"a bucket URL ({', '.join(buckets)})"] if buckets else []) + others
    if not neither:
        return " or ".join(forms)
    return f"neither {forms[0]} nor {' or '.join(forms[1:])}" if len(forms) > 1 else f"not {forms[0]}"


def _fail(text: str, problem: str, fix: str) -> ResultsLocationError:
    return ResultsLocationError(f"{text!r} {problem}; {fix}")


def _scheme_of(text: str) -> tuple[str, str]:
    """(scheme, rest) of `text`; scheme "" for a bare path (a Windows drive letter counts as a path)."""
    match = re.match(r"([A-Za-z][A-Za-z0-9+.-]*):(.*)", text, re.S)
    if not match or (len(match[1]) == 1 and os.name == "nt"):
        return "", text
    return match[1], match[2]


def _check_scheme(text: str, scheme: str, rest: str, schemes: Sequence[str], other_forms: Sequence[str]) -> None:
    """Refuse a scheme the caller does not take, suggesting the one meant (S3://, gcs://, s3:/bucket)."""
    urls = [s for s in schemes if s in URL_SCHEMES]
    meant = _ALIASES.get(scheme.lower(), scheme.lower())
    if meant not in urls:
        close = difflib.get_close_matches(meant, urls, 1, 0.6)
        if not close:
            raise _fail(text, f"is {_forms(schemes, other_forms)}", f"use e.g. {FORMS[(urls or ['path'])[0]]}")
        meant = close[0]
    body = rest[2:] if rest.startswith("//") else rest.lstrip("/")
    fixed = f"{meant}://{body}" if meant != "file" else f"file:///{body.lstrip('/')}"
    if meant != scheme:
        raise _fail(
            text, f"has the scheme {scheme + '://'!r}, which gpubench does not read", f"did you mean {fixed!r}?"
        )
    if meant != "file" and not rest.startswith("//"):
        raise _fail(text, "is missing the '//' after the scheme", f"write {fixed!r}")


def _bucket(text: str, scheme: str, rest: str, bucket_rules: bool) -> ResultsLocation:
    bucket, _, key = rest[2:].partition("/")
    if not bucket:
        raise _fail(text, "names no bucket", f"use e.g. {scheme}://my-results-bucket")
    problem = bucket_name_problem(scheme, bucket) if bucket_rules else None
    if problem:
        raise ResultsLocationError(f"bucket name {bucket!r} in {text!r} is not valid: {problem}")
    key = key.strip("/")
    return ResultsLocation(scheme, bucket, key + "/" if key else "", "", text)


def _file(text: str, rest: str) -> ResultsLocation:
    if rest.startswith("//"):
        host, slash, path = rest[2:].partition("/")
        if host not in ("", "localhost"):
            raise _fail(text, f"names the host {host!r}", "a file URL must be file:///absolute/path")
        rest = slash + path
    if not rest.startswith("/"):
        raise _fail(text, "is not an absolute file URL", "a file URL must be file:///absolute/path")
    if not rest.strip("/"):
        raise _fail(text, "names no directory", "use e.g. file:///srv/gpubench-results")
    return ResultsLocation("file", "", "", rest, text)


def parse_results_location(
    text: str, *, schemes: Sequence[str] = ALL_SCHEMES, other_forms: Sequence[str] = (), bucket_rules: bool = True
) -> ResultsLocation:
    """Parse and check a results location without opening it; ResultsLocationError names the value and the fix.
    `schemes`: the forms the caller takes; `other_forms`: those it handled itself, so the error lists all that
    would have worked; `bucket_rules=False` leaves the bucket naming rules to the store."""
    if not isinstance(text, str) or not text.strip():
        raise ResultsLocationError(f"results location must be a non-empty URL or path, got {text!r}")
    bad = next((c for c in text if ord(c) < 32 or ord(c) == 127), None)
    if bad is not None:
        raise _fail(text, f"contains the control character {bad!r} (a newline?)", "write the location on one line")
    if text != text.strip():
        raise _fail(text, "starts or ends with whitespace", f"write {text.strip()!r}")
    scheme, rest = _scheme_of(text)
    if not scheme:
        if "path" not in schemes:
            fix = f"write it as a URL, e.g. file://{os.path.abspath(os.path.expanduser(text))}"
            fix = fix if "file" in schemes else f"use e.g. {FORMS[schemes[0]]}"
            raise _fail(text, f"is a bare path; it must be {_forms(schemes, other_forms, neither=False)}", fix)
        return ResultsLocation("file", "", "", text, text, given_as_path=True)
    _check_scheme(text, scheme, rest, schemes, other_forms)
    if scheme == "file":
        return _file(text, rest)
    if any(c.isspace() for c in text):
        raise _fail(text, "contains whitespace, which bucket names and keys here cannot", "remove the spaces")
    return _bucket(text, scheme, rest, bucket_rules)


def bucket_name_problem(scheme: str, name: str) -> str | None:
    """Why ``name`` is not a valid bucket name for ``scheme``, or None. The rules:
    https://docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html (S3),
    https://cloud.google.com/storage/docs/buckets#naming (GCS)."""
    return (_s3_bucket_problem if scheme == "s3" else _gcs_bucket_problem)(name)


def _s3_bucket_problem(name: str) -> str | None:
    if not 3 <= len(name) <= 63:
        return "S3 bucket names are 3 to 63 characters long"
    if not re.fullmatch(r"[a-z0-9][a-z0-9.-]*[a-z0-9]", name):
        return "S3 bucket names use lowercase letters, digits, '.' and '-', and start and end with a letter or digit"
    if ".." in name or _IPV4.fullmatch(name):
        return "S3 bucket names have no '..' and are not IP addresses"
    if name.startswith(("xn--", "sthree-")) or name.endswith(("-s3alias", "--ol-s3", "--x-s3")):
        return "S3 reserves the prefixes xn--, sthree- and the suffixes -s3alias, --ol-s3, --x-s3"
    return None


def _gcs_bucket_problem(name: str) -> str | None:
    if not re.fullmatch(r"[a-z0-9][a-z0-9._-]*[a-z0-9]", name):
        return (
            "GCS bucket names use lowercase letters, digits, '-', '_' and '.', and start and end with a letter or digit"
        )
    parts = name.split(".")
    if len(name) > (222 if len(parts) > 1 else 63) or len(name) < 3 or any(len(p) > 63 for p in parts):
        return "GCS bucket names are 3 to 63 characters (up to 222 with dots, 63 per dot-separated part)"
    if ".." in name or _IPV4.fullmatch(name):
        return "GCS bucket names have no '..' and are not IP addresses"
    if name.startswith("goog") or "google" in name or "g00gle" in name:
        return "GCS bucket names cannot begin with 'goog' or contain 'google'"
    return None
