"""The progress conventions against the real output of each framework (tests/payload/data/progress,
captured by running the examples/ jobs here; versions in its README), piped and on a terminal;
counters that reset at epoch boundaries; the task file's pattern with each kind of named group; a
job no convention reads, named quickly; and the whole job's work filled in from what the job printed."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from test_payload_probe import REPO, only_result, payload_run

from payload import exitcodes
from payload.workloads.conventions import PARSERS, Counter, ProgressReader, pattern_parser, progress_of, whole_job
from payload.workloads.metrics import MetricsReader
from payload.workloads.process import LineSplitter
from payload.workloads.spec import BUILTIN_FORMATS, Work

DATA = Path(__file__).parent / "data" / "progress"


def lines_of(name: str, chunk: int = 4096) -> list[str]:
    """The captured bytes as the payload's pump splits them, fed in pipe-sized chunks."""
    raw, split, out = (DATA / name).read_bytes(), LineSplitter(), []
    for i in range(0, len(raw), chunk):
        out += split.feed(raw[i : i + chunk])
    return out + split.close()


def read_all(name: str, formats=BUILTIN_FORMATS, **kw):
    reader = MetricsReader(formats, **kw)
    progress = [p for line in lines_of(name) if (p := reader.feed(line)) is not None]
    return reader, progress


def counters(name: str, rx: str) -> list[tuple[int, int]]:
    """The (n, total) pairs the capture really holds, found independently of the parsers."""
    text = re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", (DATA / name).read_bytes().decode("utf-8", "replace"))
    return [(int(a), int(b)) for a, b in re.findall(rx, text)]


# (capture, convention, the counter in the raw text: steps per epoch and epochs follow from it)
CAPTURES = [
    ("keras.pipe", "keras", r"(\d+)/(\d+) \S*━"),
    ("keras.tty", "keras", r"(\d+)/(\d+) \S*━"),
    ("tqdm.pipe", "tqdm", r"\| *(\d+)/(\d+) \["),
    ("tqdm.tty", "tqdm", r"\| *(\d+)/(\d+) \["),
    ("lightning-tqdm.pipe", "tqdm", r"\| *(\d+)/(\d+) \["),
    ("lightning-rich.pipe", "tqdm", r"━ (\d+)/(\d+) \d"),
    ("lightning-tqdm-val.pipe", "tqdm", r"Epoch \d+: +\d+%\|[^|]*\| *(\d+)/(\d+) \["),  # training bar only
]


@pytest.mark.parametrize("name, convention, counter", CAPTURES, ids=[c[0] for c in CAPTURES])
def test_each_framework_is_read_as_printed(name, convention, counter):
    pairs = counters(name, counter)
    per_epoch = pairs[0][1]
    epochs = sum(1 for (a, _), (b, _) in zip(pairs, pairs[1:]) if b < a) + 1  # resets in the raw text
    reader, progress = read_all(name)
    counts = [p.samples for p in progress if p.samples is not None]
    assert reader.matched == convention and reader.found()[-1] == convention
    assert all(a <= b for a, b in zip(counts, counts[1:]))  # cumulative, never back
    assert counts[-1] == epochs * per_epoch  # every epoch's steps, counted across resets
    assert sum(1 for p in progress if p.boundary == "epoch") == epochs - 1
    record = reader.progress_record()
    assert record["unit"] == "steps" and record["steps_per_epoch"]["value"] == per_epoch
    assert convention in record["steps_per_epoch"]["from"]


def test_evaluation_bars_are_not_training_steps():
    """Lightning's `Sanity Checking` and `Validation DataLoader 0` bars: one "eval" boundary after each
    epoch's training, none before training starts, and their steps never counted."""
    _, with_val = read_all("lightning-tqdm-val.pipe")
    validations = len(re.findall(rb"Validation DataLoader 0: 100%", (DATA / "lightning-tqdm-val.pipe").read_bytes()))
    assert validations >= 2
    assert [p.boundary for p in with_val if p.boundary] == ["eval", "epoch", "eval"]


def test_steps_become_samples_with_the_declared_batch():
    _, steps = read_all("tqdm.pipe")
    reader, samples = read_all("tqdm.pipe", samples_per_step=64)
    assert [p.samples for p in samples] == [p.samples * 64 for p in steps]
    assert reader.progress_record()["unit"] == "samples" and reader.summary(1.0)["samples_trained"] == 20 * 64


def test_keras_epoch_lines_name_the_jobs_epochs():
    reader, _ = read_all("keras.pipe")
    epochs = [int(m) for m in re.findall(rb"Epoch \d+/(\d+)", (DATA / "keras.pipe").read_bytes())]
    assert reader.progress_record()["epochs"]["value"] == epochs[0] == 2
    assert reader.summary(1.0)["epochs_completed"] == 2


def test_piped_and_terminal_output_read_the_same():
    for pipe, tty in (("keras.pipe", "keras.tty"), ("tqdm.pipe", "tqdm.tty")):
        a, b = read_all(pipe)[0], read_all(tty)[0]
        assert a.progress_record() == b.progress_record() and a.last_count.value == b.last_count.value


def test_the_hf_trainer_bar_is_the_whole_jobs_steps_and_its_dicts_are_epochs():
    total = counters("hf.pipe", r"\| *(\d+)/(\d+) \[")[-1][1]
    reader, _ = read_all("hf.pipe")  # by default the bar, printed first, is read: it never resets
    assert reader.matched == "tqdm" and reader.progress_record()["job_steps"]["value"] == total
    assert reader.progress_record()["steps_per_epoch"] is None
    assert whole_job(None, reader.progress_record())["value"] == total  # no `work:` needed
    hf, progress = read_all("hf.pipe", ("hf",))
    text = (DATA / "hf.pipe").read_text(errors="replace")
    done = [float(e) for e in re.findall(r"'epoch': '?([0-9.]+)", text)]
    assert hf.matched == "hf" and [p.samples for p in progress] == done
    assert sum(1 for p in progress if p.boundary == "epoch") == math.floor(done[-1])
    rate = float(re.search(r"'train_samples_per_second': '?([0-9.]+)", text)[1])
    summary = hf.summary(99.0)
    assert summary["samples_per_second"] == rate and summary["_time_source"] == "hf train_runtime"


def test_a_bar_drawn_only_at_the_end_gives_one_reading():
    """Rich on a pipe, without TTY_COMPATIBLE (which the payload sets), draws once, at the end."""
    _, progress = read_all("lightning-rich-plain.pipe")
    assert len([p for p in progress if p.samples is not None]) == 1


# --- the task file's pattern ---------------------------------------------------------------------------

# The format of pytorch/examples word_language_model/main.py's progress and end-of-epoch lines.
WLM = "| epoch {:3d} | {:5d}/{:5d} batches | lr {:02.2f} | ms/batch {:5.2f} | loss {:5.2f} | ppl {:8.2f}"
WLM_END = "| end of epoch {:3d} | time: {:5.2f}s | valid loss {:5.2f} | valid ppl {:8.2f}"
WLM_PATTERN = r"\| epoch +(?P<epoch>\d+) \| +(?P<step>\d+)/ *(?P<steps_per_epoch>\d+) batches"


def wlm_output(epochs: int, batches: int = 180, every: int = 20) -> list[str]:
    out = []
    for epoch in range(1, epochs + 1):
        out += [WLM.format(epoch, b, batches, 5.0, 19.31, 5.1, 164.2) for b in range(every, batches + 1, every)]
        out.append(WLM_END.format(epoch, 10.58, 5.61, 273.57))
    return out


def test_a_pattern_with_step_total_and_epoch_counts_across_epochs():
    reader = MetricsReader(("pattern",), pattern=WLM_PATTERN, samples_per_step=20)
    progress = [p for line in wlm_output(3) if (p := reader.feed(line)) is not None]
    counts = [p.samples for p in progress if p.samples is not None]
    assert counts[-1] == 3 * 180 * 20 and all(a < b for a, b in zip(counts, counts[1:]))
    ends = [p for p in progress if p.samples is None]
    assert [p.boundary for p in ends] == ["epoch"] * 3  # each `end of epoch` line
    assert reader.progress_record()["steps_per_epoch"] == {"value": 180.0, "from": "the job's output (pattern)"}


@pytest.mark.parametrize(
    "pattern, lines, counts",
    [
        (r"step (?P<step>\d+)", ["step 1", "step 2", "step 3"], [1, 2, 3]),  # a step of the whole job
        (r"(?P<step>\d+)/(?P<steps_per_epoch>\d+)", ["1/2", "2/2", "1/2", "2/2"], [1, 2, 3, 4]),  # resets
        (r"ep (?P<epoch>\d+) it (?P<step>\d+)", ["ep 1 it 5", "ep 2 it 3", "ep 2 it 4"], [5, 8, 9]),
        (r"seen (?P<samples>\d+) images", ["seen 128 images", "seen 256 images"], [128, 256]),
    ],
    ids=["step", "steps_per_epoch", "epoch", "samples"],
)
def test_each_kind_of_named_group(pattern, lines, counts):
    reader = ProgressReader(("pattern",), pattern=pattern)
    assert [c.value for line in lines if (c := reader.feed(line)) is not None] == counts


def test_a_pattern_that_never_matches_is_named_after_a_few_lines():
    wrong = r"iteration (?P<step>\d+) of (?P<steps_per_epoch>\d+)"
    reader = MetricsReader(("pattern", *BUILTIN_FORMATS), pattern=wrong)
    lines, fed = wlm_output(3), 0
    while reader.unreadable() is None and fed < len(lines):
        reader.feed(lines[fed])
        fed += 1
    assert fed < len(lines) and reader.progress.progress_like == 10
    assert f"pattern (expects e.g. a line matching {wrong!r})" in reader.unreadable()


def test_a_pattern_needs_a_counter_group():
    with pytest.raises(ValueError, match="no named group `step` or `samples`"):
        pattern_parser(r"epoch (?P<epoch>\d+)")


def test_a_job_no_convention_reads_is_named_after_a_few_lines():
    reader = MetricsReader(BUILTIN_FORMATS)
    lines = wlm_output(3)
    fed = 0
    while reader.unreadable() is None and fed < len(lines):
        reader.feed(lines[fed])
        fed += 1
    assert fed == 10  # ten lines that look like progress, none read: named then, not at the end
    message = reader.unreadable()
    for name, parser in PARSERS.items():
        assert f"{name} (expects e.g. {parser.expects})" in message
    assert "progress.pattern" in message and "GPUBENCH_METRICS" in message


def test_a_job_whose_progress_nothing_reads_ends_the_probe_at_once_named_once(tmp_path):
    """End to end: the probe stops within seconds of a 60 s limit, its error names what was tried."""
    job = tmp_path / "job"
    job.mkdir()
    (job / "train.py").write_text(
        "import time\n"
        f"for b in range(20, 100000, 20):\n    print({WLM!r}.format(1, b, 180, 5.0, 19.3, 5.1, 164.2), flush=True)\n"
        "    time.sleep(0.05)\n"
    )
    (tmp_path / "task.yaml").write_text(yaml.safe_dump({"name": "wlm", "workdir": "job", "run": "python3 train.py"}))
    t0 = time.monotonic()
    code, _ = payload_run(tmp_path / "task.yaml", tmp_path / "b", "--probe-seconds", "60")
    result, _ = only_result(tmp_path / "b")
    assert code == exitcodes.FAILED and time.monotonic() - t0 < 30
    assert result["error"].startswith("missing metric: no progress convention reads this job's output")
    assert result["error"].count("--- last lines of its output ---") == 1 and "end of epoch" not in result["error"]
    assert result["probe"]["elapsed_seconds"] < 15


def test_the_same_job_with_its_pattern_is_measured_and_its_work_filled_in(tmp_path):
    job = tmp_path / "job"
    job.mkdir()
    (job / "train.py").write_text(
        "import time\n"
        "for epoch in range(1, 100):\n    for b in range(10, 181, 10):\n"
        f"        print({WLM!r}.format(epoch, b, 180, 5.0, 19.3, 5.1, 164.2), flush=True)\n"
        "        time.sleep(0.02)\n"
        f"    print({WLM_END!r}.format(epoch, 1.0, 5.6, 273.5), flush=True)\n"
    )
    task = {
        "name": "wlm",
        "workdir": "job",
        "run": "python3 train.py",
        "progress": {"pattern": WLM_PATTERN, "samples_per_step": 20},
        "work": {"epochs": 60},
    }
    (tmp_path / "task.yaml").write_text(yaml.safe_dump(task))
    code, _ = payload_run(tmp_path / "task.yaml", tmp_path / "b", "--probe-seconds", "30")
    result, _ = only_result(tmp_path / "b")
    assert code == 0 and result["status"] == "completed", result.get("error")
    assert result["benchmark"]["workload"]["metrics_found"] == ["pattern"]
    progress = progress_of(result)
    assert progress["convention"] == "pattern" and progress["unit"] == "samples"
    work = whole_job(Work(epochs=60), progress)
    assert work["value"] == 60 * 180 * 20 and work["figures"]["steps_per_epoch"]["from"] == "the job's output (pattern)"
    assert work["figures"]["epochs"]["from"] == "the task file"
    rate = result["probe"]["steady"]["samples_per_second"]
    assert 0.5 * 10 * 20 / 0.02 / 10 < rate  # about 10 steps of 20 samples per 0.2 s, less print overhead


# --- counting and the whole job's work -----------------------------------------------------------------


def test_a_counter_that_resets_is_an_epoch_and_its_total_the_steps_per_epoch():
    from payload.workloads.conventions import Reading

    c = Counter()
    values = [c.feed(Reading(step=s, steps_per_epoch=3)) for s in (1, 2, 3, 1, 2)]
    assert [v.value for v in values] == [1, 2, 3, 4, 5] and [v.boundary for v in values].count("epoch") == 1
    assert c.steps_per_epoch() == 3 and c.job_steps() is None


@pytest.mark.parametrize(
    "work, progress, value",
    [
        (Work(epochs=60), {"unit": "steps", "steps_per_epoch": {"value": 180}}, 60 * 180),
        (Work(steps=1000), {"unit": "samples", "samples_per_step": {"value": 32}}, 32000),
        (Work(samples=6400), {"unit": "steps", "samples_per_step": {"value": 64}}, 100),
        (Work(samples=6400), {"unit": "epochs", "samples_per_epoch": {"value": 3200}}, 2),
        (Work(samples=6400), None, 6400),
    ],
)
def test_the_whole_job_in_the_unit_progress_was_counted_in(work, progress, value):
    assert whole_job(work, progress)["value"] == value


def test_a_task_figure_that_does_not_convert_is_named_unused():
    out = whole_job(Work(epochs=3), {"unit": "steps", "job_steps": {"value": 400, "from": "the job's output (tqdm)"}})
    assert out["value"] == 400 and out["unused"] == {"epochs": {"value": 3, "from": "the task file"}}


def test_work_that_does_not_follow_says_what_is_missing():
    out = whole_job(Work(samples=6400), {"unit": "steps"})
    assert out["value"] is None and "samples_per_step" in out["reason"]


# --- gpubench bench --check-metrics ---------------------------------------------------------------------


def check(task: Path) -> tuple[int, dict]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    argv = [sys.executable, "-m", "analysis", "bench", str(task), "--check-metrics", "--json"]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    return done.returncode, json.loads(done.stdout)


def wlm_task(tmp_path: Path, **extra) -> Path:
    job = tmp_path / "job"
    job.mkdir(exist_ok=True)
    (job / "train.py").write_text(
        "import time\n"
        f"for b in range(20, 100000, 20):\n    print({WLM!r}.format(1, b % 180 or 180, 180, 5.0, 19.3, 5.1, 164.2), flush=True)\n"
        "    time.sleep(0.05)\n"
    )
    (tmp_path / "task.yaml").write_text(
        yaml.safe_dump({"name": "wlm", "workdir": "job", "run": "python3 train.py", **extra})
    )
    return tmp_path / "task.yaml"


def test_check_metrics_names_what_was_tried_and_the_last_lines(tmp_path):
    t0 = time.monotonic()
    code, doc = check(wlm_task(tmp_path, work={"epochs": 60}))
    assert code == exitcodes.FAILED and not doc["readable"] and time.monotonic() - t0 < 20
    assert doc["tried"] == list(BUILTIN_FORMATS) and set(doc["expects"]) == set(BUILTIN_FORMATS)
    assert doc["last_lines"][-1].startswith("| epoch   1 |") and "no progress convention" in doc["error"]


def test_check_metrics_reads_the_pattern_and_fills_in_the_work(tmp_path):
    task = wlm_task(tmp_path, work={"epochs": 60}, progress={"pattern": WLM_PATTERN, "samples_per_step": 20})
    code, doc = check(task)
    assert code == 0 and doc["readable"] and doc["convention"] == "pattern" and doc["unit"] == "samples"
    assert doc["work"]["value"] == 60 * 180 * 20 and doc["readings"] >= 10


def test_readings_arriving_in_one_millisecond_make_one_point():
    """A bar's last step and the next epoch's first arrive together: the probe keeps one point per
    millisecond, so the steady-rate estimate never sees two points at one time."""
    from payload.workloads.metrics import Progress
    from payload.workloads.probe import ProbeMonitor

    now = [0.0]
    monitor = ProbeMonitor(600, clock=lambda: now[0])
    monitor.start()
    for i in range(200):
        now[0] = 1 + i // 2 * 0.05 + (i % 2) * 0.0003  # pairs 0.3 ms apart
        monitor.observe(Progress(float(i), None, None))
    monitor.finish()
    times = [p[0] for p in monitor.points]
    assert all(a < b for a, b in zip(times, times[1:])) and len(times) >= 10
    assert monitor.warnings == [] and monitor.steady is not None


def test_a_failed_probe_names_its_reason_apart_from_the_last_lines_shown_once():
    from analysis.bench.probes import judge, verdict_lines
    from payload.workloads.process import TAIL_MARK

    result = {"status": "failed", "error": "missing metric: nothing read" + TAIL_MARK + "a\n\x1b]52;c;eA==\x07b"}
    status, reason = judge(result)
    assert status == "failed" and reason == (
        "the job failed during the probe: missing metric: nothing read; "
        "the last 2 lines of its output were printed with the probe's progress"
    )
    assert verdict_lines(status, reason, result)[1:] == ["  | a", "  | b"]  # shown once; control sequences removed


def test_check_metrics_reports_the_seconds_it_read_not_the_jobs_stop(tmp_path):
    """A job that ignores SIGTERM takes the stop grace to end; the seconds reported are those read."""
    job = tmp_path / "job"
    job.mkdir()
    (job / "train.py").write_text(
        "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "for i in range(1, 40):\n"
        "    print('GPUBENCH_METRICS {\"samples\": %d}' % (i * 32), flush=True)\n    time.sleep(0.1)\n"
        "time.sleep(60)\n"
    )
    (tmp_path / "task.yaml").write_text(
        yaml.safe_dump({"name": "slow-stop", "workdir": "job", "run": "python3 train.py"})
    )
    env = {**os.environ, "PYTHONPATH": str(REPO), "GPUBENCH_STOP_GRACE_SECONDS": "3"}
    argv = [sys.executable, "-m", "analysis", "bench", str(tmp_path / "task.yaml"), "--check-metrics", "--json"]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    doc = json.loads(done.stdout)
    assert doc["readable"] and doc["seconds"] < 2.0 + 2.5  # read for ~2 s; the 3 s grace not counted
