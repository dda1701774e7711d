"""Write-once results: the payload never replaces an object (the instance's role may only create),
every rewrite of a run file gets a new versioned name, and every reader takes the newest version.
Run against a local directory, moto_server (S3 If-None-Match) and the GCS emulator."""

from __future__ import annotations

import json

import pytest

from payload import layout
from payload.identity import launch_prefix, make_run_id
from payload.result import RunWriter
from payload.run import find_completed, find_resumable
from payload.spool import Spool, SpoolingStore
from payload.storage import AlreadyExists, FileStore, open_store

# -- names -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, generation, part",
    [("result.json", 1, 0), ("log-tail.txt", 0, 12), ("checkpoints/state.json", 2, 3), ("events.jsonl", 7, 0)],
)
def test_a_versioned_name_reads_back_as_its_file_and_version(name, generation, part):
    versioned = layout.versioned(name, generation, part)
    assert versioned != name and versioned.rsplit(".", 1)[1] == name.rsplit(".", 1)[1]
    assert layout.version_of(versioned) == (name, (generation, part))
    assert layout.parse_key(f"runs/s/r/{versioned}").name == name


def test_version_zero_is_the_plain_name_every_reader_always_knew():
    assert layout.versioned("result.json", 0) == "result.json"
    assert layout.version_of("result.json") == ("result.json", (0, 0))


def test_the_newest_version_wins_by_number_not_by_spelling():
    keys = [
        "runs/s/r/log-tail.txt",
        "runs/s/r/log-tail.v0.9.txt",
        "runs/s/r/log-tail.v0.12.txt",
        "runs/s/r/result.json",
        "runs/s/r/result.v1.json",
        "runs/s/r/epochs.csv",
    ]
    assert layout.newest_versions(keys) == {
        "runs/s/r/log-tail.txt": "runs/s/r/log-tail.v0.12.txt",
        "runs/s/r/result.json": "runs/s/r/result.v1.json",
        "runs/s/r/epochs.csv": "runs/s/r/epochs.csv",
    }
    listing = {k: object() for k in keys}
    assert sorted(layout.current_only(listing)) == sorted(layout.newest_versions(keys).values())
    assert layout.next_generation(["result.json", "result.v1.json", "log-tail.v0.4.txt"]) == 2
    assert layout.next_generation([]) == 0


# -- stores: create, never replace ----------------------------------------------------------------


def _stores(kind, tmp_path, request):
    if kind == "file":
        return f"file://{tmp_path}/bucket"
    bucket = request.getfixturevalue("s3_bucket" if kind == "s3" else "gcs_bucket")
    return f"{kind}://{bucket}/prefix"


@pytest.mark.parametrize("kind", ["file", "s3"])
def test_a_write_once_store_refuses_to_replace_an_object(kind, tmp_path, request):
    url = _stores(kind, tmp_path, request)
    store = open_store(url, write_once=True, retries=1)
    store.put_bytes("runs/s/r/result.json", b"genuine")
    with pytest.raises(AlreadyExists, match="result.json exists"):
        store.put_bytes("runs/s/r/result.json", b"forged")
    assert store.get_bytes("runs/s/r/result.json") == b"genuine"
    open_store(url).put_bytes("runs/s/r/other.json", b"1")  # an ordinary store still replaces
    open_store(url).put_bytes("runs/s/r/other.json", b"2")
    assert store.get_bytes("runs/s/r/other.json") == b"2"


def test_s3_write_once_sends_if_none_match(s3_bucket):
    store = open_store(f"s3://{s3_bucket}", write_once=True)
    sent = []
    store._client.meta.events.register("before-send.s3.PutObject", lambda request, **kw: sent.append(request))
    store.put_bytes("runs/s/r/result.json", b"{}")
    (request,) = sent
    assert request.headers.get("If-None-Match") in (b"*", "*")


def test_gcs_write_once_asks_for_generation_zero_and_maps_the_412(gcs_bucket, monkeypatch):
    """The emulator ignores ifGenerationMatch, so the request is checked here and the 412 simulated;
    the write itself goes to the emulator."""
    from google.api_core.exceptions import PreconditionFailed
    from google.cloud.storage import Blob

    store = open_store(f"gs://{gcs_bucket}/p", write_once=True, retries=1)
    calls = []
    real = Blob.upload_from_string

    def spy(self, data, **kw):
        calls.append(kw.get("if_generation_match"))
        if len(calls) > 1:
            raise PreconditionFailed("At least one of the pre-conditions you specified did not hold.")
        return real(self, data, **kw)

    monkeypatch.setattr(Blob, "upload_from_string", spy)
    store.put_bytes("runs/s/r/result.json", b"genuine")
    with pytest.raises(AlreadyExists):
        store.put_bytes("runs/s/r/result.json", b"forged")
    assert calls == [0, 0]
    assert store.get_bytes("runs/s/r/result.json") == b"genuine"


def test_a_key_taken_on_a_retry_is_the_lost_answer_of_the_first_try(tmp_path):
    class LostAnswer(FileStore):
        tries = 0

        def _put(self, key, data, content_type, tags=None):
            self.tries += 1
            super()._put(key, data, content_type, tags)
            if self.tries == 1:
                raise ConnectionResetError("the answer was lost")

    store = LostAnswer((tmp_path / "b").as_uri(), tmp_path / "b", retries=3, backoff=0, write_once=True)
    store.put_bytes("runs/s/r/result.json", b"once")
    assert store.tries == 2 and store.get_bytes("runs/s/r/result.json") == b"once"


def test_the_spool_never_keeps_a_write_once_conflict(tmp_path, capsys):
    store = SpoolingStore(open_store(str(tmp_path / "b"), write_once=True), Spool(str(tmp_path / "spool")))
    assert store.put_bytes("runs/s/r/result.json", b"1") is True
    assert store.put_bytes("runs/s/r/result.json", b"2") is False
    assert store.spooled == [] and "not uploaded" in capsys.readouterr().err


# -- the payload's writers ------------------------------------------------------------------------


def test_a_resumed_attempt_writes_the_next_generation_and_rewrites_take_new_parts(tmp_path):
    store = open_store(str(tmp_path / "b"), write_once=True)
    first = RunWriter(store, "s", "r")
    store.put_bytes(first.key("result.json"), b"attempt 1")
    assert [first.next_key("log-tail.txt") for _ in range(3)] == [
        "runs/s/r/log-tail.txt",
        "runs/s/r/log-tail.v0.1.txt",
        "runs/s/r/log-tail.v0.2.txt",
    ]
    second = RunWriter.resuming(store, "s", "r", attempts_before=1)
    assert second.key("result.json") == "runs/s/r/result.v1.json"
    store.put_bytes(second.key("result.json"), b"attempt 2")
    third = RunWriter.resuming(store, "s", "r", attempts_before=1)  # the listing knows better
    assert third.generation == 2


def test_resume_reads_the_newest_state_and_only_of_its_own_launch(tmp_path):
    store = open_store(str(tmp_path / "b"), write_once=True)
    mine = make_run_id(0, "i-1", "mnist", launch="L20300101T000000Z")
    other = make_run_id(0, "i-2", "mnist", launch="L20290101T000000Z")
    assert mine.startswith(launch_prefix("L20300101T000000Z")) and not other.startswith("L2030")
    for run_id in (mine, other):
        writer = RunWriter(store, "s", run_id)
        store.put_bytes(f"{writer.prefix}checkpoints/model.npz", b"m")
        for epochs in (1, 2):
            state = {"fingerprint": "f", "run_id": run_id, "epochs": epochs, "saved_at": str(epochs)}
            state["model_key"] = f"{writer.prefix}checkpoints/model.npz"
            store.put_bytes(writer.next_key("checkpoints/state.json"), json.dumps(state).encode())
    found = find_resumable(store, "s", "f", launch_prefix("L20300101T000000Z"))
    assert found["run_id"] == mine and found["epochs"] == 2
    done = RunWriter(store, "s", mine, generation=1)
    store.put_bytes(
        done.next_key("checkpoints/state.json"),
        json.dumps({"fingerprint": "f", "complete": True, "deployment": 1.0}).encode(),
    )
    assert find_resumable(store, "s", "f", launch_prefix("L20300101T000000Z")) is None  # its newest state: complete
    assert find_completed(store, "s", "f", 1.0) is not None
