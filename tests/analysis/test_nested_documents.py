"""A JSON document nested thousands of levels deep (a job's event line, a forged result or manifest,
a damaged lock or bench record) is an unreadable document to every reader, never a crash: the json
module runs out of stack on it, and `analysis.fastjson` turns that into a ValueError."""

from __future__ import annotations

import pytest

from analysis import fastjson

DEEP = "[" * 100_000 + "]" * 100_000


def test_fastjson_reads_a_too_deep_document_as_a_value_error():
    with pytest.raises(ValueError, match="nested too deeply"):
        fastjson.loads(DEEP)
    with pytest.raises(ValueError, match="nested too deeply"):
        fastjson.loads(DEEP.encode())


def test_a_job_event_line_nested_too_deeply_leaves_the_stack_observable(tmp_path):
    from analysis.observe import observe
    from payload.storage import open_store

    run = tmp_path / "runs" / "local-x" / "20261127T120000Z-vm-workload-a"
    run.mkdir(parents=True)
    (run / "events.jsonl").write_text(
        '{"time": "2026-11-27T12:00:01Z", "event": "run_start"}\n' + DEEP + "\n", encoding="utf-8"
    )
    other = run.parent / "20261127T120000Z-vm-workload-b"
    other.mkdir()
    (other / "result.json").write_text(DEEP, encoding="utf-8")

    obs = observe(open_store(str(tmp_path)), "local-x", None)

    assert obs.last_event is not None and obs.last_event["event"] == "run_start"
    assert any("nested too deeply" in p for p in obs.problems)


def test_a_manifest_nested_too_deeply_is_refused_as_not_a_manifest(tmp_path):
    from analysis.campaign.manifest import Manifest, ManifestInvalid
    from payload.storage import open_store

    key = tmp_path / "campaigns" / "c1" / "manifest.json"
    key.parent.mkdir(parents=True)
    key.write_text(DEEP, encoding="utf-8")
    with pytest.raises(ManifestInvalid, match="nested too deeply"):
        Manifest.load(open_store(str(tmp_path)), "c1")


def test_a_lock_or_bench_record_nested_too_deeply_is_unreadable(tmp_path):
    from analysis.bench.record import RECORD, BenchRecord
    from analysis.collect.lock import _parse

    assert _parse(DEEP.encode()) == {}
    (tmp_path / RECORD).write_text(DEEP, encoding="utf-8")
    with pytest.raises(ValueError, match="unreadable bench record"):
        BenchRecord.load(tmp_path)


def test_a_manifest_larger_than_any_campaign_writes_is_refused_unread(tmp_path, monkeypatch):
    from analysis.campaign import manifest
    from payload.storage import FileStore, open_store

    monkeypatch.setattr(manifest, "MAX_MANIFEST_BYTES", 1000)
    monkeypatch.setattr(FileStore, "get_bytes", lambda *a: pytest.fail("the manifest was downloaded whole"))
    key = tmp_path / "campaigns" / "c1" / "manifest.json"
    key.parent.mkdir(parents=True)
    key.write_text('{"campaign_id": "c1", "pad": "' + "x" * 2000 + '"}', encoding="utf-8")
    with pytest.raises(manifest.ManifestInvalid, match="larger than 1,000 bytes"):
        manifest.Manifest.load(open_store(str(tmp_path)), "c1")
