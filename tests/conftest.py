"""Shared pytest fixtures: loopback emulators for S3, GCS and instance metadata.

Fixtures (all bind 127.0.0.1 only; the helpers themselves are in
``tests/servers.py`` so non-fixture code can start/stop servers too):

- ``moto_server`` (session): a moto server subprocess; ``.endpoint`` is its URL.
- ``s3_bucket``: a fresh bucket on it; sets ``AWS_ENDPOINT_URL`` and dummy
  credentials for the test; returns the bucket name. ``module_s3_bucket``: the
  same for a module's tests (a module-scoped fixture's bucket).
- ``gcs_emulator`` (session): gcp-storage-emulator subprocess, in memory.
- ``gcs_bucket``: a fresh bucket on it; sets ``STORAGE_EMULATOR_HOST`` and
  ``GOOGLE_CLOUD_PROJECT``; returns the bucket name.
- ``metadata_server``: AWS IMDSv2 + GCE metadata server; sets
  ``AWS_EC2_METADATA_SERVICE_ENDPOINT`` and ``GCE_METADATA_HOST``.
- ``no_metadata``: points both metadata endpoints at a closed loopback port,
  so code under test never waits on 169.254.169.254 off-cloud.
- ``charts_described``: the report's charts are described, not drawn, for
  the test (``tests/chart_content.py``: the page keeps a digest of what each
  chart shows; tests about tables and text use it, chart tests do not).

Under ``CI=true`` a missing emulator binary fails the test instead of skipping.
Files run longest first (``tests/suite_order.py``), so the workers of ``make test`` end together.
With ``GPUBENCH_SUITE_CPU=FILE`` each test's CPU seconds are recorded there (``tests/suite_order.py``).
The per-user state home (``$GPUBENCH_HOME``, else ``~/.gpubench``: bench workspaces, campaign
reports) points at a temporary folder of this test process unless set, and each test gets its own
collect cache, SSH known_hosts and spool (``own_user_state``), so no test writes into the home
directory of whoever runs the suite.
"""

from __future__ import annotations

import os
import signal
import sys
import tempfile
import uuid
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("GPUBENCH_HOME", tempfile.mkdtemp(prefix="gpubench-home-"))
from user_state import USER_STATE_VARIABLES  # noqa: E402

# gpubench's per-user places: a temporary folder of this test process for what module- and
# session-scoped fixtures start, and one of each test's own (own_user_state) for everything else.
_PROCESS_USER_STATE = tempfile.mkdtemp(prefix="gpubench-user-state-")
for _name, _leaf in USER_STATE_VARIABLES.items():
    os.environ.setdefault(_name, os.path.join(_PROCESS_USER_STATE, _leaf))

from servers import (  # noqa: E402
    MetadataServer,
    closed_port_url,
    create_gcs_bucket,
    create_s3_bucket,
    start_gcs_emulator,
    start_moto_server,
)
from suite_order import cpu_seconds, longest_files_first, record_cpu  # noqa: E402


def pytest_configure(config):
    """Ctrl-C reaches the processes the tests start, as it does a command run from a
    terminal. A suite started in the background by a shell without job control
    (`make test &`, nohup) inherits SIGINT ignored, and its children would too:
    the tests that send SIGINT to a command would then wait for it in vain. A
    Python handler, unlike an ignored signal, is reset to the default at exec."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_collection_modifyitems(config, items):
    """The longest files first (tests/suite_order.py)."""
    longest_files_first(items)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """With GPUBENCH_SUITE_CPU=FILE, each test's CPU seconds (set-up, call, tear-down; its process and the
    children it waited for) are appended to FILE: on a shared machine they rank files where wall times
    mislead (`python tests/suite_order.py FILE` sums them per file). A child never waited for counts
    where it is reaped (subprocess reaps finished ones at the next start), so read one test's figure
    with its neighbours; per file the sums hold."""
    record = os.environ.get("GPUBENCH_SUITE_CPU")
    before = cpu_seconds() if record else 0.0
    yield
    if record:
        record_cpu(record, item.nodeid, cpu_seconds() - before)


@pytest.fixture(autouse=True)
def own_user_state(tmp_path_factory, monkeypatch):
    """Every test, and every process it starts, keeps gpubench's per-user files in a folder of its
    own: the suite writes nothing into the home directory of whoever runs it, and two tests never
    share a manifest or a host key by accident. A test that sets one of these itself wins."""
    base = tmp_path_factory.mktemp("user-state")
    for name, leaf in USER_STATE_VARIABLES.items():
        monkeypatch.setenv(name, str(base / leaf))
    return base


@pytest.fixture(scope="session")
def moto_server():
    """A moto server on a free loopback port for the whole session (per xdist worker)."""
    server = start_moto_server()
    yield server
    server.stop()


def _new_s3_bucket(moto_server, monkeypatch) -> str:
    """A unique bucket on the moto server, boto3 pointed at it through `monkeypatch`; its name."""
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_server.endpoint)
    monkeypatch.delenv("AWS_ENDPOINT_URL_S3", raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    bucket = f"gpubench-{uuid.uuid4().hex[:12]}"
    create_s3_bucket(moto_server.endpoint, bucket)
    return bucket


@pytest.fixture
def s3_bucket(moto_server, monkeypatch):
    """Create a unique S3 bucket on the moto server and point boto3 at it."""
    return _new_s3_bucket(moto_server, monkeypatch)


@pytest.fixture(scope="module")
def module_s3_bucket(moto_server):
    """s3_bucket for a module-scoped fixture: one bucket, boto3 pointed at it until the module's tests end."""
    with pytest.MonkeyPatch.context() as mp:
        yield _new_s3_bucket(moto_server, mp)


@pytest.fixture(scope="session")
def gcs_emulator():
    """gcp-storage-emulator (in memory) on a free loopback port for the session."""
    server = start_gcs_emulator()
    yield server
    server.stop()


@pytest.fixture
def gcs_bucket(gcs_emulator, monkeypatch):
    """Create a unique GCS bucket on the emulator and point google-cloud-storage at it."""
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", gcs_emulator.endpoint)
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "gpubench-test")
    bucket = f"gpubench-{uuid.uuid4().hex[:12]}"
    create_gcs_bucket(gcs_emulator.endpoint, bucket)
    return bucket


@pytest.fixture
def metadata_server(monkeypatch):
    """AWS IMDSv2 + GCE metadata on loopback, with env pointing at it."""
    with MetadataServer() as server:
        for k, v in {**server.aws_env(), **server.gce_env()}.items():
            monkeypatch.setenv(k, v)
        monkeypatch.delenv("AWS_EC2_METADATA_DISABLED", raising=False)
        yield server


@pytest.fixture
def no_metadata(monkeypatch):
    """No metadata service: both endpoints refuse connections immediately."""
    url = closed_port_url()
    monkeypatch.setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", url + "/")
    monkeypatch.setenv("GCE_METADATA_HOST", url.removeprefix("http://"))


@pytest.fixture
def charts_described():
    """The report's charts reduced to a digest of what they show instead of drawn (tests/chart_content.py)."""
    from chart_content import charts_described as described

    with described():
        yield
