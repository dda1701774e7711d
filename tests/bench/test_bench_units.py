"""`gpubench bench` pieces without a payload run: generated probe stacks, reading a probe's result, the
answer rows, the budget refusal and the confirmation before anything launches, and Ctrl-C, which stops
launching and destroys every stack it launched (through a recording stack backend)."""

from __future__ import annotations

import io
import json
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from bench_fakes import project as make_project
from bench_fakes import write_task

from analysis.bench import runners as cloud_probe
from analysis.bench.answer import ROW_FIELDS, candidate_row
from analysis.bench.candidates import cloud_candidates
from analysis.bench.plan import BudgetExceeded
from analysis.bench.probes import ProbeReport, judge, probe_cost
from analysis.bench.run import bench
from analysis.price.billed import billed_seconds
from infra.catalog import load_catalog
from infra.config import MIN_HOURS, parse_config
from infra.launch import resolve
from payload import exitcodes
from payload.exitcodes import Declined
from payload.workloads.spec import load_spec


def project(tmp_path: Path, stacks: dict[str, dict] | None = None) -> Path:
    return make_project(tmp_path / "project", stacks)


def candidates_for(task_path: Path):
    found, _ = cloud_candidates(load_spec(task_path))
    return found


# --- generated stacks ----------------------------------------------------------------------------


def test_probe_stack_names_are_unique_per_bench_and_valid(tmp_path):
    (cand,) = candidates_for(write_task(tmp_path / "t"))
    a = cloud_probe.probe_stack_name(cand, "20260101T000000Z-1a2b")
    b = cloud_probe.probe_stack_name(cand, "20260101T000000Z-3c4d")
    assert a.startswith(cand.name) and a != b
    long = SimpleNamespace(name="x" * 120)
    assert len(cloud_probe.probe_stack_name(long, "20260101T000000Z-1a2b")) <= 100


@pytest.mark.parametrize("probe,boot", [(60, 0), (600, 600), (3600, 600)])
def test_max_hours_covers_probe_boot_and_teardown(probe, boot):
    hours = cloud_probe.max_hours(probe, boot)
    assert hours >= MIN_HOURS
    assert hours * 3600 >= probe + boot + cloud_probe.TEARDOWN_SLACK_SECONDS
    assert hours * 3600 < probe + boot + cloud_probe.TEARDOWN_SLACK_SECONDS + 180 or hours == MIN_HOURS


def test_stack_config_keeps_your_settings_and_replaces_the_job(tmp_path):
    task = write_task(tmp_path / "t")
    (cand,) = candidates_for(task)
    root = project(
        tmp_path,
        {
            cand.name: {
                "gpubench:offering": cand.offering,
                "gpubench:suite": ["mnist-mlp"],
                "gpubench:epochs": 3,
                "gpubench:sshCidr": "203.0.113.7/32",
                "gpubench:maxHours": 6,
            }
        },
    )
    hours = cloud_probe.max_hours(90, 600)
    config = cloud_probe.stack_config(
        cand,
        task=task,
        probe_seconds=90,
        hours=hours,
        results="s3://bench-results",
        stacks_dir=root / "stacks",
        catalog=load_catalog(),
    )
    assert config["gpubench:sshCidr"] == "203.0.113.7/32"  # yours, kept
    assert "gpubench:suite" not in config and "gpubench:epochs" not in config
    assert config["gpubench:workload"] == str(task.resolve())
    assert config["gpubench:probeSeconds"] == 90 and config["gpubench:maxHours"] == hours
    cfg = parse_config(config, "probe-stack")
    assert cfg.probe_seconds == 90 and cfg.workload == str(task.resolve()) and cfg.suite == ()
    resolve(cfg, load_catalog())  # the probe's own check before launch


def test_probe_seconds_reach_the_payload_env_only_when_set(tmp_path):
    from infra.launch import payload_env, resolve

    task = write_task(tmp_path / "t")
    base = {"gpubench:offering": "aws/g4dn.xlarge", "gpubench:workload": str(task)}
    probe = resolve(parse_config({**base, "gpubench:probeSeconds": 45}, "s"), load_catalog())
    full = resolve(parse_config(base, "s"), load_catalog())
    assert payload_env(probe, "s3://bench-results", "2030-01-01T00:00:00Z")["GPUBENCH_PROBE_SECONDS"] == "45"
    assert "GPUBENCH_PROBE_SECONDS" not in payload_env(full, "s3://bench-results", "2030-01-01T00:00:00Z")


def test_workspace_pulumi_yaml_reaches_the_project_program(tmp_path):
    root = project(tmp_path)
    bench_dir = root / ".gpubench" / "bench" / "x"
    bench_dir.mkdir(parents=True)
    cloud_probe.write_project(bench_dir, root)
    doc = yaml.safe_load((bench_dir / "Pulumi.yaml").read_text())
    assert (bench_dir / doc["main"]).resolve() == (root / "infra").resolve()
    assert (bench_dir / doc["runtime"]["options"]["virtualenv"]).resolve() == (root / ".venv").resolve()
    assert doc["stackConfigDir"] == "stacks" and (bench_dir / "stacks").is_dir()


# --- reading a probe back ------------------------------------------------------------------------

STEADY = {
    "samples_per_second": 1000.0,
    "low": 980.0,
    "high": 1020.0,
    "rel_halfwidth": 0.02,
    "warmup_seconds": 1.0,
    "windows": 8,
    "steady": True,
}


def result_doc(steady=STEADY, status="completed", overhead=120.0):
    probe = {"limit_seconds": 60, "stopped_by": "steady", "overhead_seconds": overhead, "steady": steady}
    return {"status": status, "probe": probe, "error": None if status == "completed" else "exit 2"}


@pytest.mark.parametrize(
    "doc,status,fragment",
    [
        (None, "no-result", "no probe result"),
        (result_doc(), "measured", None),
        ({**result_doc(), "probe": None}, "no-rate", "probe mode"),
        (result_doc(steady=None), "no-rate", "too few metrics lines"),
        (result_doc(steady={**STEADY, "steady": False, "rel_halfwidth": 0.11}), "not-steady", "+/-11.0 %"),
        (result_doc(steady=None, status="failed"), "failed", "exit 2"),
        (result_doc(steady=None, status="interrupted"), "interrupted", "reclaimed"),
        (result_doc(status="interrupted"), "measured", None),  # steady before the notice: the rate stands
    ],
)
def test_judge_says_what_a_probe_result_means(doc, status, fragment):
    got, reason = judge(doc)
    assert got == status
    assert (reason is None) if fragment is None else (fragment in reason)


def test_rows_extrapolate_the_whole_job_from_the_measured_rate(tmp_path):
    (cand,) = candidates_for(write_task(tmp_path / "t"))
    work = 3.6e6
    row = candidate_row(ProbeReport(cand, "s", "measured", None, result_doc(), 0.01), work)
    assert set(ROW_FIELDS) <= set(row)
    hours = (120.0 + work / 1000.0) / 3600  # overhead + work / rate
    assert row["est_hours"] == pytest.approx(hours, rel=1e-6)
    assert row["est_hours_low"] <= row["est_hours"] <= row["est_hours_high"]
    billed = billed_seconds(cand.terms, hours * 3600)
    assert row["est_usd"] == pytest.approx(billed / 3600 * cand.hourly_usd, rel=1e-6)
    assert row["samples_per_second"] == 1000.0 and row["overhead_seconds"] == 120.0
    assert set(row["basis"].values()) <= {"measured", "extrapolated"}
    failed = candidate_row(ProbeReport(cand, "s", "launch-failed", "quota: limit"), work)
    assert failed["est_hours"] is None and failed["reason"] == "quota: limit"


@pytest.mark.parametrize("ratio", [1.25, 0.9, None])
def test_rows_are_per_wall_second_when_the_jobs_clock_leaves_time_out(tmp_path, ratio):
    (cand,) = candidates_for(write_task(tmp_path / "t"))
    doc = result_doc(steady={**STEADY, "warmup_samples": 1000.0})
    doc["probe"]["wall_per_job_second"] = ratio
    row = candidate_row(ProbeReport(cand, "s", "measured", None, doc, 0.01, finish_seconds=5.0), 3.6e6)
    per_wall = max(1.0, ratio or 1.0)  # a job's clock cannot outrun the wall: below 1 is ignored
    assert row["samples_per_second"] == pytest.approx(1000.0 / per_wall)
    assert row["samples_per_second_low"] == pytest.approx(980.0 / per_wall)
    # overhead + finish + the warm-up (1 s of the job's clock, in wall seconds) + the rest per wall second
    seconds = 120.0 + 5.0 + 1.0 * per_wall + (3.6e6 - 1000.0) / (1000.0 / per_wall)
    assert row["est_hours"] == pytest.approx(seconds / 3600, rel=1e-9)
    assert row["finish_seconds"] == 5.0
    assert any("rates are per wall second" in n for n in row["notes"]) == (per_wall > 1)
    assert not any("not timed by this probe" in n for n in row["notes"])


def test_probe_cost_bills_under_the_offering_rule(tmp_path):
    (cand,) = candidates_for(write_task(tmp_path / "t"))
    billed = billed_seconds(cand.terms, 30.0)  # under AWS's 60 s minimum
    assert billed == cand.terms.minimum_seconds
    assert probe_cost(cand, 30.0) == pytest.approx(billed / 3600 * cand.hourly_usd, abs=1e-6)


# --- refusals and Ctrl-C with a recording backend ------------------------------------------------


class Recorder:
    """A stack backend that records up/destroy; `up` returns a deployed stack with a deadline."""

    def __init__(self, up_hook=None):
        self.calls: list[tuple[str, str]] = []
        self.up_hook = up_hook
        self.lock = threading.Lock()

    def __call__(self, work_dir):
        self.work_dir = Path(work_dir)
        return self

    def select_stack(self, name):
        rec = self

        class Handle:
            def up(self, on_output=None):
                with rec.lock:
                    rec.calls.append(("up", name))
                if rec.up_hook:
                    rec.up_hook(name)
                return SimpleNamespace(outputs={"deadline": "2030-01-01T00:00:00Z"})

            def destroy(self, on_output=None):
                with rec.lock:
                    rec.calls.append(("destroy", name))

            def outputs(self):
                return {}

        return Handle()

    def list_stacks(self):
        return []

    def remove_stack(self, name):
        with self.lock:
            self.calls.append(("remove", name))

    def names(self, what):
        return sorted(n for c, n in self.calls if c == what)


class InterruptOn(io.StringIO):
    """A progress stream that raises KeyboardInterrupt (Ctrl-C) once, on the first line containing `text`."""

    def __init__(self, text):
        super().__init__()
        self.text, self.fired = text, False

    def write(self, s):
        if not self.fired and self.text in s:
            self.fired = True
            raise KeyboardInterrupt
        return super().write(s)


def three_gpu_task(tmp_path):
    return write_task(tmp_path / "t", accelerators=("T4:1", "L4:1", "A10G:1"))


def test_budget_refuses_before_anything_launches(tmp_path, s3_bucket):
    rec = Recorder()
    with pytest.raises(BudgetExceeded, match="--budget"):
        bench(
            three_gpu_task(tmp_path),
            budget_usd=0.01,
            yes=True,
            results=f"s3://{s3_bucket}",
            backend=rec,
            work_dir=project(tmp_path),
            progress=io.StringIO(),
        )
    assert rec.calls == []
    assert not (tmp_path / "project" / ".gpubench").exists()


def test_not_confirmed_launches_nothing(tmp_path, s3_bucket):
    rec, asked = Recorder(), []
    out = io.StringIO()
    with pytest.raises(Declined):
        bench(
            three_gpu_task(tmp_path),
            results=f"s3://{s3_bucket}",
            backend=rec,
            work_dir=project(tmp_path),
            progress=out,
            confirm=lambda what, question, default: asked.append((question, default)) or False,
        )
    assert rec.calls == [] and asked == [("Start the probes?", False)]
    assert "probe at most" in out.getvalue()  # the plan table came first


def test_ctrl_c_in_the_progress_hook_destroys_every_launched_stack(tmp_path, s3_bucket):
    rec = Recorder()
    out = InterruptOn("waiting for the probe result")
    outcome = bench(
        three_gpu_task(tmp_path),
        yes=True,
        results=f"s3://{s3_bucket}",
        backend=rec,
        work_dir=project(tmp_path),
        progress=out,
        poll_seconds=0.05,
    )
    assert out.fired and outcome.exit_code == exitcodes.CANCELLED
    assert rec.names("up") and rec.names("destroy") == rec.names("up")
    assert rec.names("remove") == rec.names("up")  # emptied stacks are removed, not left in the backend
    assert all(
        rec.calls.index(("destroy", n)) < rec.calls.index(("remove", n)) for n in rec.names("up")
    )  # removed only once destroyed
    assert outcome.left == [] and "nothing left running" in out.getvalue()
    record = json.loads(next((tmp_path / "project" / ".gpubench" / "bench").glob("*/bench.json")).read_text())
    ended = [e["teardown"] for e in record["stacks"].values() if e["state"] != "pending"]
    assert ended and all(t["action"] == "destroyed" and t["removed"] is True for t in ended)


def test_a_stack_that_cannot_be_removed_is_named_with_the_command(tmp_path, s3_bucket):
    class NoRemove(Recorder):
        def remove_stack(self, name):
            raise RuntimeError(f"error: stack {name} is locked")

    rec, out = NoRemove(), InterruptOn("waiting for the probe result")
    outcome = bench(
        three_gpu_task(tmp_path),
        yes=True,
        results=f"s3://{s3_bucket}",
        backend=rec,
        work_dir=project(tmp_path),
        progress=out,
        poll_seconds=0.05,
    )
    assert outcome.exit_code == exitcodes.CANCELLED and outcome.left == []  # destroyed: nothing bills
    text = out.getvalue()
    for name in rec.names("up"):
        assert f"removing the empty stack failed (error: stack {name} is locked); `pulumi stack rm {name}`" in text
    record = json.loads(next((tmp_path / "project" / ".gpubench" / "bench").glob("*/bench.json")).read_text())
    ended = [e["teardown"] for e in record["stacks"].values() if e["state"] != "pending"]
    assert ended and all(t["action"] == "destroyed" and t["removed"] is False for t in ended)


def test_finish_seconds_run_from_the_jobs_end_to_the_payloads_exit():
    from analysis.bench.runners import finish_seconds
    from payload.timestamps import parse_iso

    timeline = [
        {"event": "run_start", "time": "2026-01-01T00:00:00.000Z"},
        {"event": "train_end", "time": "2026-01-01T00:01:00.250Z"},
    ]
    exited = parse_iso("2026-01-01T00:01:03.000Z")
    assert finish_seconds({"timeline": timeline}, exited) == pytest.approx(2.75)
    assert finish_seconds({"timeline": timeline[:1]}, exited) is None  # the job never ended: not timed
    assert finish_seconds(None, exited) is None


def test_ctrl_c_during_up_and_declined_teardown_says_what_is_left_until_when(tmp_path, s3_bucket):
    def slow_then_interrupt(name):
        if name.startswith("aws-g5"):
            raise KeyboardInterrupt

    rec, out = Recorder(up_hook=slow_then_interrupt), io.StringIO()
    outcome = bench(
        three_gpu_task(tmp_path),
        results=f"s3://{s3_bucket}",
        backend=rec,
        work_dir=project(tmp_path),
        progress=out,
        poll_seconds=0.05,
        confirm=lambda what, question, default: question == "Start the probes?",
    )
    assert outcome.exit_code == exitcodes.CANCELLED
    assert rec.names("destroy") == []  # the user said no to the teardown
    left = {item["name"] for item in outcome.left}
    assert left == set(rec.names("up"))
    text = out.getvalue()
    for name in left:
        assert f"left running: {name}" in text and f"gpubench teardown {name}" in text
    assert "cloud-side deadline 2030-01-01T00:00:00Z" in text


# --- the command ---------------------------------------------------------------------------------


def test_bench_help_explains_and_has_examples(capsys):
    from analysis.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(["bench", "--help"])
    out = capsys.readouterr().out
    assert exit_info.value.code == 0
    for text in (
        "examples:",
        "--budget",
        "--local",
        "--hosts",
        "Ctrl-C",
        "gpubench status",
        "--json",
        "--throughput-only",
    ):
        assert text in out


def test_command_budget_refusal_is_a_usage_error_before_any_launch(tmp_path, capsys, monkeypatch):
    from analysis.cli import main

    monkeypatch.delenv("GPUBENCH_RESULTS", raising=False)
    task = three_gpu_task(tmp_path)
    root = project(tmp_path)
    code = main(["bench", str(task), "--budget", "0.01", "--yes", "--project-dir", str(root)])
    err = capsys.readouterr().err
    assert code == exitcodes.USAGE and "--budget" in err and "Traceback" not in err
    assert not (root / ".gpubench").exists()
    code = main(["bench", str(task), "--yes", "--project-dir", str(root)])  # cloud probes need a bucket
    err = capsys.readouterr().err
    assert code == exitcodes.USAGE and "--results is required" in err
    assert not (root / ".gpubench").exists()


def test_a_result_without_times_never_hides_the_genuine_probe(tmp_path):
    """A `{"status": "completed"}` with no times beside a probe's result: the probe's result is the newest."""
    from analysis.bench.probes import newest_result
    from payload.storage import open_store

    store = open_store(str(tmp_path / "results"))
    store.put_bytes("runs/local-x/r0-bare/result.json", json.dumps({"status": "completed"}).encode())
    genuine = {
        "status": "completed",
        "benchmark": "workload:job@abc",
        "started_at": "2026-01-01T00:00:00Z",
        "finished_at": "2026-01-01T00:01:00Z",
        "probe": {"stopped_by": "steady"},
    }
    store.put_bytes("runs/local-x/r1-probe/result.json", json.dumps(genuine).encode())
    url, doc = newest_result(store, "local-x", None)
    assert doc == genuine and url.endswith("r1-probe/result.json")


def test_a_failed_probes_output_tail_is_printed_once_and_the_table_stays_whole(tmp_path, capsys):
    """The tail of a failed job's output goes with the probe's progress, once; the reason in the table and
    in the answer is one line."""
    from analysis.bench.answer import answer_doc
    from analysis.bench.probes import verdict_lines
    from analysis.commands.bench import _print_answer

    (cand,) = candidates_for(write_task(tmp_path / "t"))
    tail = ["Traceback (most recent call last):", '  File "train.py", line 3', "ValueError: boom"]
    result = {
        "status": "failed",
        "error": "the job exited with 1\n--- last lines of its output ---\n" + "\n".join(tail),
    }
    status, reason = judge(result)
    assert status == "failed" and "\n" not in reason and "ValueError" not in reason
    progress = "\n".join(verdict_lines(status, reason, result))
    doc = answer_doc(
        "t.yaml",
        [ProbeReport(cand, "s", status, reason, result, 0.01)],
        [],
        work_samples=1e6,
        deadline_hours=None,
        budget_usd=None,
    )
    _print_answer(doc | {"page": "index.html"})
    out = capsys.readouterr().out
    assert (progress + out).count("ValueError: boom") == 1 and progress.count("  | ") == 3
    header, rule, row = out.splitlines()[:3]
    assert len(row) <= len(rule) + len(reason)  # one line: the row did not break into the tail


def test_the_answer_table_shows_every_cost_with_its_distinguishing_digits(capsys):
    from analysis.commands.bench import _print_answer

    row = dict.fromkeys(ROW_FIELDS) | {"offering": "local/this-machine", "status": "measured"}
    row |= {"samples_per_second": 469.0, "est_hours": 0.012, "est_usd": 0.0034, "probe_usd": 0.00083}
    _print_answer({"candidates": [row], "answer": {"sentence": "s"}, "probe_total_usd": 0.00083, "page": "p"})
    out = capsys.readouterr().out
    assert "$0.0034" in out and "$0.00083" in out and "$0.00 " not in out and "43.2 s" in out


def test_throughput_only_ranks_the_rates_and_estimates_no_whole_job(tmp_path):
    from analysis.bench.answer import answer_doc
    from analysis.bench.page import write_page

    found = candidates_for(write_task(tmp_path / "t", accelerators=("T4:1", "L4:1")))
    fast = {**STEADY, "samples_per_second": 2000.0, "low": 1900.0, "high": 2100.0}
    reports = [
        ProbeReport(found[0], "a", "measured", None, result_doc(), 0.01),
        ProbeReport(found[1], "b", "measured", None, result_doc(steady=fast), 0.02),
    ]
    doc = answer_doc(
        "t.yaml", reports, [], work_samples=None, deadline_hours=None, budget_usd=None, throughput_only=True
    )
    assert doc["throughput_only"] and all(r["est_hours"] is None and not r["reason"] for r in doc["candidates"])
    assert [r["name"] for r in doc["answer"]["ranked"]] == ["b", "a"]  # fastest first
    sentence = doc["answer"]["sentence"]
    assert sentence.startswith("Throughput only (--throughput-only: no whole-job estimate): ")
    assert "2,000.0 samples/s" in sentence and "Not measured" not in sentence
    assert write_page(doc, tmp_path / "page").is_file()


def test_a_failed_probes_reason_cut_to_one_line_says_it_was_cut():
    """A reason longer than a table cell can hold ends in '...', never mid-word as if it were whole."""
    from analysis.bench.probes import MAX_REASON_CHARS

    long = "missing metric: " + "tried json (expects e.g. GPUBENCH_METRICS ...); " * 20
    status, reason = judge({"status": "failed", "error": long + "\n--- last lines of its output ---\nx"})
    why = reason.removeprefix("the job failed during the probe: ").split("; the last 1 lines")[0]
    assert status == "failed" and len(why) <= MAX_REASON_CHARS and why.endswith("...")
