"""Collect's warm path and edges around the results dataset: file:// lists a
settled stack by its run directories only; a collect with nothing new reads
no row; the payload's log-tail.txt is a known file; an empty location is
never success."""

from __future__ import annotations

import json

from synthetic_results import make_result, result_bytes, result_key

from analysis.cli import main
from analysis.collect import collect, survey
from analysis.collect.validation import KNOWN_RUN_FILES
from analysis.dataset.store import StoredRows
from payload import exitcodes


def _write(src, results) -> None:
    for r in results:
        path = src / result_key(r)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(result_bytes(r))


def _results(n: int, first: int = 0, status: str = "completed") -> list[dict]:
    offerings = ["aws/p2.xlarge", "aws/p3.2xlarge"]
    return [
        make_result(offerings[i % 2], "resnet50", repeat=i, hourly_usd=1.0, status=status)
        for i in range(first, first + n)
    ]


def _listed_stacks(monkeypatch) -> list[str]:
    """The stacks collect lists file by file on file://, as it lists them."""
    listed: list[str] = []
    real = survey._FileStacks.objects

    def objects(self, prefix):
        listed.append(prefix)
        return real(self, prefix)

    monkeypatch.setattr(survey._FileStacks, "objects", objects)
    return listed


def test_file_sources_check_settled_stacks_by_run_directory_only(tmp_path, monkeypatch):
    src, table = tmp_path / "results", tmp_path / "table"
    _write(src, _results(6))
    listed = _listed_stacks(monkeypatch)
    cold, cold_rows = collect([str(src)], table)
    assert sorted(listed) == ["runs/aws-p2-1x/", "runs/aws-p3-2x/"] and cold.settled_stacks == 0
    listed.clear()
    warm, warm_rows = collect([str(src)], table)  # every run final, none added: no file listed, no row read
    assert listed == [] and warm.settled_stacks == 2 and (warm.new, warm.cached, warm.valid) == (0, 6, 6)
    assert isinstance(warm_rows, StoredRows) and warm_rows._rows is None and not warm.table_written
    assert warm_rows == cold_rows  # read when used: the same rows
    added = make_result("aws/p3.2xlarge", "resnet50", repeat=99, hourly_usd=1.0)
    _write(src, [added])
    summary, rows = collect([str(src)], table)  # a run added to one stack: only the new run's directory is listed
    assert listed == [f"runs/aws-p3-2x/{added['run_id']}/"]
    assert (summary.new, summary.valid, summary.settled_stacks) == (1, 7, 1)
    listed.clear()
    full, full_rows = collect([str(src)], table, full=True)
    assert sorted(listed) == ["runs/aws-p2-1x/", "runs/aws-p3-2x/"] and list(full_rows) == list(rows)


def test_a_stack_with_an_unfinished_run_is_listed_every_time(tmp_path, monkeypatch):
    src, table = tmp_path / "results", tmp_path / "table"
    _write(src, _results(2) + [make_result("aws/p2.xlarge", "resnet50", repeat=7, status="interrupted")])
    listed = _listed_stacks(monkeypatch)
    collect([str(src)], table)
    listed.clear()
    collect([str(src)], table)
    assert listed == ["runs/aws-p2-1x/"]  # the settled one is not listed


def test_the_payloads_log_tail_is_a_known_run_file(tmp_path, capsys):
    from payload.workloads.job import LOG_TAIL_NAME

    assert LOG_TAIL_NAME in KNOWN_RUN_FILES
    src = tmp_path / "results"
    (result,) = _results(1)
    _write(src, [result])
    (src / result_key(result)).with_name(LOG_TAIL_NAME).write_text("step 10/10\n")
    (src / result_key(result)).with_name("notes.txt").write_text("?")
    argv = ["collect", "--results", str(src), "--table", str(tmp_path / "table"), "--json", "--strict"]
    assert main(argv) == exitcodes.INVALID  # notes.txt is unknown; log-tail.txt is not
    got = json.loads(capsys.readouterr().out)
    assert [s["key"].rsplit("/", 1)[-1] for s in got["skipped"]] == ["notes.txt"]
    (src / result_key(result)).with_name("notes.txt").unlink()  # a settled stack's notes stand until --full
    assert main([*argv, "--full"]) == exitcodes.OK


def test_a_first_collect_from_an_empty_directory_is_not_success(tmp_path, capsys):
    (tmp_path / "results").mkdir()
    table = tmp_path / "table"
    assert main(["collect", "--results", str(tmp_path / "results"), "--table", str(table), "--json"]) == 1
    got = json.loads(capsys.readouterr().out)
    assert got["complete"] is False and "no runs found" in got["incomplete"][0]
    assert not (table / "_delta_log").exists()  # no table made of nothing
