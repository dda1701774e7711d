"""Instance metadata clients: AWS IMDSv2 and the GCE metadata server.

Both are tiny urllib clients with short timeouts: off-cloud they must fail
in about a second, not hang the boot. Endpoints follow the SDK conventions:
``AWS_EC2_METADATA_SERVICE_ENDPOINT`` (default http://169.254.169.254/;
``AWS_EC2_METADATA_DISABLED=true`` turns it off, as in botocore) and
``GCE_METADATA_HOST`` (default metadata.google.internal).

IMDSv2: ``PUT /latest/api/token`` with ``X-aws-ec2-metadata-token-ttl-seconds``
returns a token that every ``GET /latest/meta-data/...`` sends back in
``X-aws-ec2-metadata-token``. GCE: ``GET /computeMetadata/v1/...`` with
``Metadata-Flavor: Google``. A 404 means "no such value" (for
``spot/instance-action``: no interruption scheduled) and returns None.
"""

from __future__ import annotations

import os
import time
import urllib.error
import urllib.request


class MetadataUnavailable(RuntimeError):
    """The metadata service cannot be reached (not on this cloud, or down)."""


def _request(method: str, url: str, headers: dict, timeout: float) -> str | None:
    req = urllib.request.Request(url, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return None
        raise MetadataUnavailable(f"{method} {url}: HTTP {exc.code}") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise MetadataUnavailable(f"{method} {url}: {exc}") from None


class AwsImds:
    """AWS instance metadata, IMDSv2 (session token) only."""

    name = "aws"
    TTL = 21600

    def __init__(self, endpoint: str | None = None, timeout: float = 1.0):
        self.endpoint = (
            endpoint or os.environ.get("AWS_EC2_METADATA_SERVICE_ENDPOINT") or "http://169.254.169.254/"
        ).rstrip("/")
        self.disabled = os.environ.get("AWS_EC2_METADATA_DISABLED", "").lower() in ("1", "true", "yes")
        self.timeout = timeout
        self._token: str | None = None
        self._token_expiry = 0.0

    def _get_token(self) -> str:
        if self._token and time.monotonic() < self._token_expiry:
            return self._token
        token = _request(
            "PUT",
            f"{self.endpoint}/latest/api/token",
            {"X-aws-ec2-metadata-token-ttl-seconds": str(self.TTL)},
            self.timeout,
        )
        if not token:
            raise MetadataUnavailable(f"{self.endpoint}: no IMDSv2 token")
        self._token, self._token_expiry = token, time.monotonic() + self.TTL - 60
        return token

    def get(self, path: str) -> str | None:
        """GET /latest/meta-data/<path>; None on 404."""
        if self.disabled:
            raise MetadataUnavailable("AWS_EC2_METADATA_DISABLED is set")
        url = f"{self.endpoint}/latest/meta-data/{path.lstrip('/')}"
        try:
            return _request("GET", url, {"X-aws-ec2-metadata-token": self._get_token()}, self.timeout)
        except MetadataUnavailable as exc:
            if "HTTP 401" not in str(exc):
                raise
            self._token = None  # token expired or rotated: fetch a new one once
            return _request("GET", url, {"X-aws-ec2-metadata-token": self._get_token()}, self.timeout)


class GceMetadata:
    """GCE metadata server (computeMetadata/v1)."""

    name = "gce"

    def __init__(self, host: str | None = None, timeout: float = 1.0):
        host = host or os.environ.get("GCE_METADATA_HOST") or "metadata.google.internal"
        self.base = (host if host.startswith("http") else f"http://{host}").rstrip("/") + "/computeMetadata/v1"
        self.timeout = timeout

    def get(self, path: str) -> str | None:
        """GET /computeMetadata/v1/<path>; None on 404."""
        return _request("GET", f"{self.base}/{path.lstrip('/')}", {"Metadata-Flavor": "Google"}, self.timeout)
