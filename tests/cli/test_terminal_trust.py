"""Nothing a bucket, a job or a manifest wrote reaches the terminal raw: each place such text is printed
(`logs`, `logs --follow`, `status`, `campaign status`, `report`, `bench`) is fed escape sequences that
would clear the screen, retitle the window, set the clipboard (OSC 52) and reverse the text, and the
printed characters hold no ESC, BEL, C1 control, DEL or bidi override, while the text is still shown
(as visible escapes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from analysis.bench.record import BenchRecord, bench_root
from analysis.cli import main
from payload.storage import open_store
from payload.terminal import BIDI, SafeStream, safe_terminal, terminal_text
from payload.timestamps import iso

ROOT = Path(__file__).resolve().parents[2]
# clear screen, window title (OSC 0, BEL-ended), clipboard (OSC 52), a C1 CSI, a right-to-left override, DEL
HOSTILE = "\x1b[2J\x1b]0;pwned\x07\x1b]52;c;ZWNobyBvd25lZA==\x07\x9b31m\u202eevil\x7f"
SHOWN = "\\x1b]52;c;ZWNobyBvd25lZA=="  # what the clipboard sequence looks like once escaped
STACK, RUN = "aws-g4dn-1x-b3f2a", "20261125T095100Z-i-1-workload-fakejob"
NOW = datetime.now(timezone.utc)


def forbidden(text: str) -> list[str]:
    """Every character of `text` a terminal would act on."""
    return sorted(
        {
            f"U+{ord(c):04X}"
            for c in text
            if (ord(c) < 0x20 and c not in "\n\t") or 0x7F <= ord(c) < 0xA0 or c in BIDI or c == "\r"
        }
    )


def put(store, key: str, text: str) -> None:
    store.put_bytes(key, text.encode())


def _run_dir(bucket: Path) -> tuple[object, str]:
    store = open_store(str(bucket))
    return store, f"runs/{STACK}/{RUN}"


def _logs(tmp_path, follow: bool) -> list[str]:
    store, run = _run_dir(tmp_path / "bucket")
    put(store, f"{run}/log-tail.txt", f"step 1\n{HOSTILE}\r\nstep 2\n")
    if follow:
        put(store, f"{run}/result.json", json.dumps({"status": "failed", "benchmark": {"name": "workload-fakejob"}}))
        return ["logs", STACK, "--results", str(tmp_path / "bucket"), "--follow", "--poll", "1"]
    return ["logs", STACK, "--results", str(tmp_path / "bucket")]


def _status(tmp_path) -> list[str]:
    bucket = tmp_path / "bucket"
    store, run = _run_dir(bucket)
    record = BenchRecord.create(bench_root(tmp_path) / "20261125T094000Z-00aa", "b", "task.yaml", str(bucket))
    record.update(
        STACK,
        kind="cloud",
        state="launched",
        offering="aws/g4dn.xlarge",
        suite=["workload-fakejob"],
        up_started_at=iso(NOW - timedelta(minutes=5)),
        launched_at=iso(NOW - timedelta(minutes=4)),
        deadline=iso(NOW + timedelta(hours=1)),
    )
    put(store, f"{run}/events.jsonl", json.dumps({"event": HOSTILE, "time": iso(NOW - timedelta(minutes=1))}) + "\n")
    return ["status", "--project-dir", str(tmp_path)]


def _campaign_status(tmp_path) -> list[str]:
    bucket = tmp_path / "bucket"
    store, run = _run_dir(bucket)
    started = iso(NOW - timedelta(minutes=5))
    manifest = {
        "schema_version": 1,
        "campaign_id": "c1",
        "results": str(bucket),
        "stacks": {
            STACK: {"state": "launched", "up_started_at": started, "launched_at": started, "suite": ["x"]},
            "aws-g5-1x": {"state": "launch-failed", "failure": {"kind": "other", "message": HOSTILE}},
        },
    }
    put(store, "campaigns/c1/manifest.json", json.dumps(manifest))
    put(store, f"{run}/events.jsonl", json.dumps({"event": HOSTILE, "time": iso(NOW - timedelta(minutes=1))}) + "\n")
    return ["campaign", "status", "c1", "--results", str(bucket)]


SOURCES = {
    "logs": lambda tmp_path: _logs(tmp_path, follow=False),
    "logs --follow": lambda tmp_path: _logs(tmp_path, follow=True),
    "status": _status,
    "campaign status": _campaign_status,
}


@pytest.mark.parametrize("source", sorted(SOURCES))
def test_forged_text_reaches_the_terminal_escaped(source, tmp_path, capsys):
    argv = SOURCES[source](tmp_path)
    main(argv)
    out, err = capsys.readouterr()
    assert forbidden(out + err) == [], out + err
    assert SHOWN in out + err  # shown, not dropped


def test_the_real_streams_carry_no_escape_bytes(tmp_path):
    """Through a real process: the bytes on its stdout, not a captured string."""
    argv = _logs(tmp_path, follow=False)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "analysis", *argv], capture_output=True, env=env, timeout=60)
    text = (done.stdout + done.stderr).decode("utf-8")
    assert done.returncode == 0 and forbidden(text) == [] and SHOWN in text


@pytest.mark.usefixtures("charts_described")
def test_report_prints_a_forged_price_source_escaped(tmp_path, capsys):
    from synthetic_results import demo_like_results, result_bytes, result_key

    from analysis.collect import read_table

    src, out = tmp_path / "results", tmp_path / "report"
    store = open_store(str(src))
    for r in demo_like_results():
        store.put_bytes(result_key(r), result_bytes(r))
    assert main(["collect", "--results", str(src), "--table", str(out), "--json"]) == 0
    runs = read_table(out)
    runs["price_source"] = "catalog " + HOSTILE
    runs.to_parquet(out / "results.parquet")
    capsys.readouterr()
    assert main(["report", "--table", str(out), "--out", str(out)]) == 0
    printed, err = capsys.readouterr()
    assert forbidden(printed + err) == [] and "\\x1b]52" in printed


FAILING_JOB = f"""\
import sys
print({HOSTILE!r}, flush=True)
sys.exit(3)
"""


def test_bench_quotes_a_failed_jobs_output_escaped(tmp_path, capsys, no_metadata):
    task = tmp_path / "task"
    task.mkdir()
    (task / "job.py").write_text(FAILING_JOB)
    (task / "task.yaml").write_text(
        json.dumps(
            {
                "name": "failjob",
                "workdir": ".",
                "run": f"{sys.executable} job.py",
                "metrics": ["json"],
                "resources": {"accelerators": ["T4:1"], "providers": ["aws"]},
                "work": {"samples": 1000},
            }
        )
    )
    argv = ["bench", str(task / "task.yaml"), "--local", "--yes", "--probe-minutes", "0.2", "--hourly-usd", "0.5"]
    main([*argv, "--results", str(tmp_path / "results"), "--project-dir", str(tmp_path)])
    out, err = capsys.readouterr()
    assert forbidden(out + err) == [], out + err
    assert "failed" in out  # the answer's table: the reason is one line, without the job's output
    # the probe's line then its output's last lines, once, its control sequences taken out
    assert err.count("evil") == 1 and "pwned" not in out + err


# --- the sanitiser itself ------------------------------------------------------------------------


def test_terminal_text_escapes_every_control_and_keeps_lines_where_asked():
    every = "".join(chr(c) for c in [*range(0x20), 0x7F, *range(0x80, 0xA0)]) + BIDI + "\u2028\ud800"
    assert forbidden(terminal_text(every)) == [] and forbidden(terminal_text(every, multiline=False)) == []
    assert terminal_text("a\tb\r\nc\rd") == "a\tb\nc\nd"  # a carriage return cannot overwrite a line
    assert terminal_text("a\tb\nc", multiline=False) == "a\\tb\\nc"  # one cell stays one line
    assert terminal_text("\x1b]52;c;x\x07 caf\u00e9 \u4e2d") == "\\x1b]52;c;x\\x07 caf\u00e9 \u4e2d"
    assert terminal_text("\u202e") == "\\u202e" and terminal_text(None) == "None"


def test_safe_terminal_wraps_both_streams_and_restores_them(capsys):
    before = sys.stdout, sys.stderr
    with safe_terminal():
        assert isinstance(sys.stdout, SafeStream) and isinstance(sys.stderr, SafeStream)
        print("x\x1by")
        print("\x07", file=sys.stderr)
    assert (sys.stdout, sys.stderr) == before
    out, err = capsys.readouterr()
    assert out == "x\\x1by\n" and err == "\\x07\n"


# --- a campaign manifest of the wrong shape is named, never "This is a bug" ------------------------


@pytest.mark.parametrize(
    "doc, part",
    [
        ([], "the document"),
        ({"campaign_id": "c1", "stacks": {}}, "results"),
        ({"campaign_id": "c1", "results": "r", "stacks": {STACK: "launched"}}, f"stacks.{STACK}"),
        ({"campaign_id": "c1", "results": "r", "stacks": []}, "stacks"),
        ({"campaign_id": "c1", "results": "r", "stacks": {STACK: {"state": "gone"}}}, f"stacks.{STACK}.state"),
        ({"campaign_id": "c1", "results": "r", "stacks": {STACK: {"failure": "quota"}}}, f"stacks.{STACK}.failure"),
        ({"campaign_id": "c1", "results": "r", "stacks": {STACK: {"deadline": "soon"}}}, f"stacks.{STACK}.deadline"),
        ({"campaign_id": "c1", "results": "r", "stacks": {"bad<x\x1b": {}}}, "stacks"),
    ],
)
def test_a_manifest_of_the_wrong_shape_is_refused_naming_the_file_and_the_part(doc, part, tmp_path, capsys):
    from payload import exitcodes

    bucket = tmp_path / "bucket"
    put(open_store(str(bucket)), "campaigns/c1/manifest.json", json.dumps(doc))
    code = main(["campaign", "status", "c1", "--results", str(bucket)])
    err = capsys.readouterr().err
    (line,) = [line for line in err.splitlines() if line.startswith("error:")]
    assert code == exitcodes.INVALID and "This is a bug" not in err and forbidden(err) == []
    assert "campaigns/c1/manifest.json is not a campaign manifest" in line and f": {part}:" in line


def test_the_progress_bar_redraws_underneath_and_its_note_is_made_safe():
    """The bar's own carriage returns go to the stream underneath; the note it shows (a key from a
    bucket, say) passes the sanitiser, and a line printed above the bar passes it too."""
    import io

    from analysis.progress import Progress

    raw = io.StringIO()
    with Progress(3, "runs", enabled=True, stream=SafeStream(raw)) as bar:
        bar.note(f"runs/{HOSTILE}/result.json")
        bar.write(f"set aside: {HOSTILE}")
        bar.advance()
    text = raw.getvalue()
    assert "\r" in text  # the bar redrew itself
    assert forbidden(text.replace("\r", "")) == [] and text.count(SHOWN) >= 2
