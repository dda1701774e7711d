"""Storage backends against real protocols: file://, moto S3 server, gcp-storage-emulator."""

from __future__ import annotations

import enum
import json
import subprocess
import sys

import pytest

from payload.spool import Spool, SpoolingStore
from payload.storage import (
    AlreadyExists,
    ObjectNotFound,
    StorageError,
    _BucketStore,
    is_permanent,
    open_store,
    with_retries,
)


def _roundtrip(store):
    store.put_bytes("runs/s/r1/result.json", b'{"a": 1}', "application/json")
    store.put_bytes("runs/s/r1/events.jsonl", b"{}\n")
    store.put_bytes("runs/s/r2/result.json", b"{}")
    assert store.get_bytes("runs/s/r1/result.json") == b'{"a": 1}'
    assert store.exists("runs/s/r1/events.jsonl")
    assert not store.exists("runs/s/r1/missing.json")
    with pytest.raises(ObjectNotFound):
        store.get_bytes("runs/s/nope")
    keys = sorted(o.key for o in store.list("runs/s/r1/"))
    assert keys == ["runs/s/r1/events.jsonl", "runs/s/r1/result.json"]
    infos = {o.key: o for o in store.list()}
    assert set(infos) == {"runs/s/r1/events.jsonl", "runs/s/r1/result.json", "runs/s/r2/result.json"}
    assert infos["runs/s/r1/result.json"].size == 8
    assert infos["runs/s/r1/result.json"].updated is not None
    store.delete("runs/s/r2/result.json")
    assert not store.exists("runs/s/r2/result.json")


@pytest.mark.parametrize(
    "error, permanent",
    [("Forbidden", True), ("BadRequest", True), ("ServiceUnavailable", False), ("TooManyRequests", False)],
)
def test_gcs_errors_are_retried_by_their_http_status(error, permanent):
    """google.api_core's errors carry the HTTP status: a 4xx of access or shape fails at once."""
    from google.api_core import exceptions

    from payload.storage import PermanentStorageError

    calls = []

    def fail():
        calls.append(1)
        raise getattr(exceptions, error)("no")

    with pytest.raises(PermanentStorageError if permanent else StorageError):
        with_retries("upload", fail, attempts=3, backoff=0, sleep=lambda s: None)
    assert len(calls) == (1 if permanent else 3)


def test_file_store_roundtrip(tmp_path):
    store = open_store((tmp_path / "bucket").as_uri())
    _roundtrip(store)
    assert store.url_for("runs/x").startswith("file://")
    assert (tmp_path / "bucket/runs/s/r1/result.json").read_bytes() == b'{"a": 1}'


def test_bare_path_is_a_local_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    store = open_store("results")
    store.put_bytes("k/v.txt", b"x")
    assert (tmp_path / "results/k/v.txt").read_bytes() == b"x"


def test_s3_store_roundtrip_on_moto_server(s3_bucket):
    store = open_store(f"s3://{s3_bucket}/prefix/")
    _roundtrip(store)
    assert store.url_for("runs/a") == f"s3://{s3_bucket}/prefix/runs/a"
    # keys really live under the prefix in the bucket
    import boto3

    raw = boto3.client("s3").list_objects_v2(Bucket=s3_bucket)["Contents"]
    assert all(o["Key"].startswith("prefix/runs/") for o in raw)


def test_s3_honours_endpoint_url_s3_over_generic(s3_bucket, moto_server, monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # would fail
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", moto_server.endpoint)
    store = open_store(f"s3://{s3_bucket}", retries=1)
    store.put_bytes("a", b"1")
    assert store.get_bytes("a") == b"1"


def test_gcs_store_roundtrip_on_emulator(gcs_bucket):
    store = open_store(f"gs://{gcs_bucket}/some/prefix")
    _roundtrip(store)
    assert store.url_for("runs/a") == f"gs://{gcs_bucket}/some/prefix/runs/a"


@pytest.mark.parametrize(
    "url, words",
    [
        ("ftp://x/y", ["ftp", "s3://"]),
        ("s3:///nobucket", ["no bucket"]),
        ("gs://", ["no bucket"]),
        ("", ["non-empty"]),
    ],
)
def test_bad_urls_name_the_problem(url, words):
    with pytest.raises(StorageError) as err:
        open_store(url)
    for w in words:
        assert w in str(err.value)


def test_retries_then_succeeds_and_wraps_last_error():
    calls = []

    def flaky():
        calls.append(1)
        if len(calls) < 3:
            raise ConnectionError("boom")
        return "ok"

    assert with_retries("x", flaky, attempts=3, backoff=0, sleep=lambda s: None) == "ok"
    delays = []
    with pytest.raises(StorageError, match="after 4 attempt"):
        with_retries(
            "upload thing",
            lambda: (_ for _ in ()).throw(ConnectionError("down")),
            attempts=4,
            backoff=1.0,
            sleep=delays.append,
        )
    assert len(delays) == 3 and delays[0] < delays[2]  # exponential backoff


def test_bucket_down_spools_and_flush_delivers(tmp_path, moto_server, monkeypatch):
    """A bucket that is down at upload time: spooled, nothing lost, flush delivers later."""
    from servers import ServerProcess, create_s3_bucket, find_tool

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    exe = find_tool("moto_server")
    outage = ServerProcess("moto", lambda p: [exe, "-H", "127.0.0.1", "-p", str(p)])
    monkeypatch.setenv("AWS_ENDPOINT_URL", outage.endpoint)  # nothing listens yet: down
    spool = Spool(tmp_path / "spool")
    store = SpoolingStore(open_store("s3://later/pfx", retries=2, backoff=0.01), spool)
    assert store.put_bytes("runs/s/r/result.json", b'{"v": 1}', "application/json") is False
    assert store.put_bytes("runs/s/r/result.json", b'{"v": 2}', "application/json") is False  # newer wins
    assert store.put_bytes("runs/s/r/epochs.csv", b"epoch\n") is False
    assert store.spooled == ["runs/s/r/result.json", "runs/s/r/result.json", "runs/s/r/epochs.csv"]
    assert len(spool.pending()) == 2
    # still down: flush keeps everything
    report = spool.flush(retries=1, backoff=0)
    assert not report.ok and len(spool.pending()) == 2
    # bucket comes back
    with outage:
        create_s3_bucket(outage.endpoint, "later")
        report = spool.flush(retries=2, backoff=0.01)
        assert report.ok, report.failed
        assert sorted(report.delivered) == ["s3://later/pfx/runs/s/r/epochs.csv", "s3://later/pfx/runs/s/r/result.json"]
        assert spool.pending() == []
        back = open_store("s3://later/pfx", retries=1)
        assert json.loads(back.get_bytes("runs/s/r/result.json")) == {"v": 2}


def test_flush_cli_delivers_spooled_gcs_objects(tmp_path, gcs_bucket, monkeypatch):
    spool_dir = tmp_path / "spool"
    Spool(spool_dir).add(f"gs://{gcs_bucket}/p", "runs/x/y/result.json", b"{}", "application/json")
    monkeypatch.setenv("GPUBENCH_SPOOL", str(spool_dir))
    out = subprocess.run([sys.executable, "-m", "payload", "flush"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "delivered 1" in out.stdout
    assert open_store(f"gs://{gcs_bucket}/p").get_bytes("runs/x/y/result.json") == b"{}"
    assert Spool(spool_dir).pending() == []


def test_storage_and_schema_import_without_tensorflow():
    code = (
        "import sys, payload.storage, payload.schema, payload.spool, payload.result;"
        "assert 'tensorflow' not in sys.modules and 'keras' not in sys.modules, 'TF imported'"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr


def test_checkpoint_models_are_tagged_for_lifecycle_expiry_on_s3(s3_bucket):
    """The results bucket expires objects tagged gpubench:kind=checkpoint (infra/aws/component.py);
    model files must carry the tag, results and state must not."""
    import boto3
    import keras
    import numpy as np

    from payload.builtin import CHECKPOINT_TAGS, Checkpointer
    from payload.result import RunWriter

    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    model.compile(optimizer="adam", loss="mse")
    model.fit(np.zeros((4, 3)), np.zeros((4, 2)), verbose=0)
    store = open_store(f"s3://{s3_bucket}", write_once=True)
    ckpt = Checkpointer(store, RunWriter(store, "s", "r"))
    ckpt.save(model, {"fingerprint": "f", "epoch": 1}, tag=1, sync=True)
    ckpt.save(model, {"fingerprint": "f", "epoch": 2}, tag=2, sync=True)  # new names: nothing replaced
    ckpt.close()
    assert ckpt.errors == []
    s3 = boto3.client("s3")
    keys = sorted(o["Key"] for o in s3.list_objects_v2(Bucket=s3_bucket)["Contents"])
    models = ["runs/s/r/checkpoints/model-000000001.npz", "runs/s/r/checkpoints/model-000000002.v0.1.npz"]
    states = ["runs/s/r/checkpoints/state.json", "runs/s/r/checkpoints/state.v0.1.json"]
    assert keys == sorted(models + states)
    for key in models:  # the lifecycle rule expires them: nothing is deleted by the run
        tags = {t["Key"]: t["Value"] for t in s3.get_object_tagging(Bucket=s3_bucket, Key=key)["TagSet"]}
        assert tags == CHECKPOINT_TAGS
    for key in states:
        assert s3.get_object_tagging(Bucket=s3_bucket, Key=key)["TagSet"] == []
    newest = json.loads(s3.get_object(Bucket=s3_bucket, Key=states[1])["Body"].read())
    assert newest["epoch"] == 2 and newest["model_key"] == models[1]


class _StatusAsNamed(enum.IntEnum):
    """http.HTTPStatus as Python 3.8 to 3.10 print it (str() gives "HTTPStatus.NOT_FOUND", not "404"):
    google.api_core's errors carry these as `code`, and the legacy image runs the payload on Python 3.8."""

    FORBIDDEN = 403
    NOT_FOUND = 404
    PRECONDITION_FAILED = 412
    TOO_MANY_REQUESTS = 429

    __str__ = enum.Enum.__str__


class _StatusError(Exception):
    def __init__(self, status):
        super().__init__(f"status {int(status)}")
        self.code = status


class _FailingBucket(_BucketStore):
    """A bucket whose every SDK call fails with one HTTP status, given as an enum member."""

    def __init__(self, status, write_once=False):
        super().__init__("gs://b/p", "b", "p", write_once=write_once)
        self.status = status

    def _fail(self, *args):
        raise _StatusError(self.status)

    _write = _read = _listing = _remove = _fail


def test_http_statuses_are_read_by_number_whatever_their_enum_prints():
    assert str(_StatusAsNamed.NOT_FOUND) == "_StatusAsNamed.NOT_FOUND"  # what the test stands for
    assert is_permanent(_StatusError(_StatusAsNamed.FORBIDDEN))
    assert not is_permanent(_StatusError(_StatusAsNamed.TOO_MANY_REQUESTS))
    with pytest.raises(ObjectNotFound):
        _FailingBucket(_StatusAsNamed.NOT_FOUND).get_bytes("k")
    _FailingBucket(_StatusAsNamed.NOT_FOUND).delete("k")  # already gone: nothing to do
    with pytest.raises(AlreadyExists):
        _FailingBucket(_StatusAsNamed.PRECONDITION_FAILED, write_once=True).put_bytes("k", b"x")
