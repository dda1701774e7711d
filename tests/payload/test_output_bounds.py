"""Whatever a job prints, reading it stays bounded and goes on: long lines are cut and counted, a
carriage return ends a line, numbers are bounded to what the result stores, warnings and reported
values are capped, and a reader that fails stops the job instead of leaving it blocked on its pipe."""

from __future__ import annotations

import json
import sys
import threading
import time

from test_payload_probe import only_result, payload_run

from payload.workloads.conventions import INT_MAX
from payload.workloads.metrics import MAX_REPORTED_KEYS, MAX_WARNINGS, MetricsReader, Progress
from payload.workloads.process import LOG_TAIL_LINE_CHARS, MAX_LINE_BYTES, LineSplitter, LogTail, Redrawn, ShellProcess


def split(data: bytes, chunk: int) -> tuple[list[str], LineSplitter]:
    s, out = LineSplitter(), []
    for i in range(0, len(data), chunk):
        out += s.feed(data[i : i + chunk])
    return out + s.close(), s


def test_a_100_mb_line_is_cut_never_held_and_counted():
    s, block, lines, peak = LineSplitter(), b"x" * 65536, [], 0
    for _ in range(1600):  # 100 MB without a line end
        lines += s.feed(block)
        peak = max(peak, len(s._buf))
    lines += s.feed(b"\nnext\n")
    assert peak <= MAX_LINE_BYTES and s.cut == 1 and lines[1] == "next"
    assert lines[0].startswith("x" * 100) and len(lines[0]) < MAX_LINE_BYTES + 100
    assert f"{1600 * 65536 - MAX_LINE_BYTES} more bytes cut" in lines[0]


def test_carriage_returns_end_lines_in_every_chunking():
    data = b"\rep 1/3\rep 2/3\r\nGPUBENCH_METRICS {}\n\x08\x08\x08\rlast"
    for chunk in (1, 2, 3, 7, len(data)):
        lines, _ = split(data, chunk)
        assert lines == ["ep 1/3", "ep 2/3", "GPUBENCH_METRICS {}", "last"], chunk
        assert [isinstance(x, Redrawn) for x in lines] == [True, False, False, False]


def test_a_metrics_line_after_carriage_return_progress_is_read():
    lines, _ = split(
        b"\r 10%|#  | 1/10 [00:01<00:09]\r 20%|## | 2/10 [00:02<00:08]\n" * 3
        + b'GPUBENCH_METRICS {"samples": 640, "seconds": 2.5}\n',
        16,
    )
    reader = MetricsReader(("json",))
    assert [p for line in lines if (p := reader.feed(line))] == [Progress(640, 2.5, "json")]
    assert reader.warnings.all() == []


def test_numbers_beyond_what_the_result_stores_are_ignored_with_a_warning():
    reader = MetricsReader(("json", "mllog"))
    for line in (
        'GPUBENCH_METRICS {"samples": ' + "9" * 400 + "}",
        'GPUBENCH_METRICS {"samples": 1e300, "epochs": 1e19, "steps": -1}',
        'GPUBENCH_METRICS {"samples_per_second": 1e999, "seconds": 2e308}',
        ':::MLLOG {"key": "train_samples", "value": ' + "9" * 400 + ', "time_ms": 1}',
        ':::MLLOG {"key": "epoch_stop", "time_ms": ' + "9" * 30 + ', "metadata": {"samples_count": 1e300}}',
    ):
        found = reader.feed(line)  # no count, and above all no exception (an epoch's end may still be marked)
        assert found is None or found.samples is None, line
    assert reader.feed(f'GPUBENCH_METRICS {{"samples": {INT_MAX}}}') == Progress(float(INT_MAX), None, None)
    summary = reader.summary(1.0)
    assert summary["samples_trained"] == INT_MAX and summary["epochs_completed"] is None
    assert reader.train_samples is None and summary["steps_completed"] is None
    assert any("samples=" in w and "2**63-1" in w for w in reader.warnings)
    json.dumps(summary, allow_nan=False)


def test_warnings_are_said_once_and_capped():
    reader = MetricsReader(("json",))
    for i in range(60000):
        reader.feed(f'GPUBENCH_METRICS {{"samples": "x{i}", "k{i % 50}": 1, "accuracy": "v{i}"}}')
        reader.feed(f"GPUBENCH_METRICS not json {i}")
    warnings = reader.warnings.all()
    assert len(warnings) == 3  # samples, accuracy, unreadable: each once
    for i in range(60000):
        reader.feed(f'GPUBENCH_METRICS {{"samples_per_second": "v", "loss": "{i}", "u{i}": null}}')
    assert len(reader.warnings.all()) <= MAX_WARNINGS + 1


def test_reported_values_are_bounded_in_count_and_size():
    reader = MetricsReader(("json",))
    for i in range(20 * MAX_REPORTED_KEYS):  # twenty times the keys kept, each value 1 KB and more
        reader.feed(f'GPUBENCH_METRICS {{"note{i}": "{"y" * 1000}", "deep": {json.dumps([[i] * 100] * 10)}}}')
    reported = reader.reported()["json"]
    assert len(reported) <= MAX_REPORTED_KEYS + 8 and len(json.dumps(reported)) < 100_000


def test_the_log_tail_is_bounded_and_a_redrawn_bar_keeps_its_newest_state():
    tail = LogTail()
    for _ in range(3):
        tail.append("z" * 1_000_000)
    assert len(tail.text()) < 3 * (LOG_TAIL_LINE_CHARS + 10)
    tail = LogTail()
    tail.append("start")
    for i in range(1000):
        tail.append(Redrawn(f"{i}/1000"))
    tail.append("after")
    assert tail.lines() == ["start", "999/1000", "after"]


def test_a_reader_that_fails_stops_the_job_instead_of_blocking_it():
    """The job floods its pipe; the line reader raises on the tenth line. Without the stop, the job
    blocks on the full pipe forever (the notice below ends the test after 20 s)."""
    seen = []

    def on_line(line):
        seen.append(line)
        if len(seen) == 10:
            raise OverflowError("int too large to convert to float")

    proc = ShellProcess(
        f"{sys.executable} -c \"while True: print('x' * 1000)\"", "/tmp", {"PATH": "/usr/bin:/bin"}, on_line
    )
    notice = threading.Event()
    threading.Timer(20, notice.set).start()
    t0 = time.monotonic()
    code, stopped = proc.wait(notice, poll=0.05)
    notice.set()
    assert not stopped and time.monotonic() - t0 < 15 and code != 0
    assert isinstance(proc.reader_error, OverflowError) and len(seen) == 10


def test_a_job_printing_a_400_digit_metric_completes_with_its_other_lines_read(tmp_path):
    job = tmp_path / "job"
    job.mkdir()
    (job / "train.py").write_text(
        "import json\n"
        "print('GPUBENCH_METRICS {\"samples\": ' + '9' * 400 + '}', flush=True)\n"
        "for i in range(5000):\n    print('filler', i)\n"
        "print('x' * 200000)\n"
        "print('GPUBENCH_METRICS ' + json.dumps({'samples': 6400, 'seconds': 2.0}), flush=True)\n"
    )
    (tmp_path / "task.yaml").write_text(
        json.dumps({"name": "big", "workdir": "job", "run": "python3 train.py", "metrics": ["json"]})
    )
    code, wall = payload_run(tmp_path / "task.yaml", tmp_path / "b", timeout=120)
    result, _ = only_result(tmp_path / "b")
    assert code == 0 and result["status"] == "completed" and wall < 60
    assert result["metrics"]["samples_trained"] == 6400 and result["metrics"]["samples_per_second"] == 3200
    assert any("1 output lines longer than" in w for w in result["warnings"])
    assert any("is not a count" in w for w in result["warnings"])


def test_deeply_nested_json_is_an_unreadable_line_not_a_broken_reader():
    reader = MetricsReader(("json", "mllog"))
    assert reader.feed("GPUBENCH_METRICS " + '{"a":' * 5000 + "1" + "}" * 5000) is None
    assert reader.feed(":::MLLOG " + '{"a":' * 5000 + "1" + "}" * 5000) is None
    assert reader.warnings.all()[0].startswith("unreadable GPUBENCH_METRICS line")


def test_a_pump_that_breaks_stops_the_job(monkeypatch):
    from payload.workloads import process

    class Broken(LineSplitter):
        def feed(self, chunk: bytes) -> list[str]:
            raise MemoryError("the splitter broke")

    monkeypatch.setattr(process, "LineSplitter", Broken)
    proc = ShellProcess(
        f"{sys.executable} -c \"while True: print('x' * 1000)\"", "/tmp", {"PATH": "/usr/bin:/bin"}, print
    )
    notice = threading.Event()
    threading.Timer(20, notice.set).start()
    t0 = time.monotonic()
    code, stopped = proc.wait(notice, poll=0.05)
    notice.set()
    assert not stopped and time.monotonic() - t0 < 15 and code != 0 and isinstance(proc.reader_error, MemoryError)


def test_a_negative_or_impossible_clock_or_rate_is_warned_and_not_used():
    """A job's `seconds` must be a time a run can last, its rate not negative: else it is warned once and the
    run keeps the wall clock (a forged 1e300 s would make every estimate of the job absurd)."""
    reader = MetricsReader(("json",))
    for line in (
        'GPUBENCH_METRICS {"samples": 100, "seconds": -5}',
        'GPUBENCH_METRICS {"samples": 200, "seconds": 1e300, "samples_per_second": -3}',
    ):
        found = reader.feed(line)
        assert found is not None and found.seconds is None and found.clock is None, line  # no job clock
    summary = reader.summary(12.5)
    assert summary["train_seconds"] == 12.5 and summary["_time_source"] == "wall time of `run`"
    assert summary["samples_per_second"] == 200 / 12.5
    said = " ".join(reader.warnings.all())
    assert "seconds=-5 is not a number from 0 to 1e+08" in said and "samples_per_second=-3" in said
