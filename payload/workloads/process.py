"""One shell command of a workload (``setup`` or ``run``), contained: the shell leads its own process group and
the payload is a child subreaper (payload.proctree), so a deadline, a notice, a stop signal, a finished probe
or the shell's own end ends the job's whole tree. The job ends when its shell exits, not when its pipe closes."""

from __future__ import annotations

import collections
import contextlib
import os
import re
import shutil
import subprocess
import threading
import time
import uuid
from collections.abc import Callable

from payload import proctree
from payload.events import note

# The output cut into lines: at `\n`, `\r\n` or a lone `\r` (a redrawn progress bar); a line longer than
# MAX_LINE_BYTES keeps its start and says how much was cut, the rest skipped as it arrives.
MAX_LINE_BYTES = 16 * 1024  # a metrics line is a few hundred bytes; a progress bar a few hundred
_END = re.compile(rb"\r\n|\r|\n")
_BLANK = re.compile(r"^[\s\x08]*$")  # what a terminal redraw leaves between two carriage returns


class Redrawn(str):
    """A line the job ended with a carriage return: on a terminal the next line overwrites it."""


class LineSplitter:
    """Bytes in, lines (str) out; `cut` counts the lines that were truncated."""

    def __init__(self, limit: int = MAX_LINE_BYTES):
        self.limit = limit
        self.cut = 0
        self._buf = bytearray()
        self._dropped = 0  # bytes of the current line beyond the limit
        self._carry = b""  # a trailing \r: a line end, or the first half of \r\n

    def feed(self, chunk: bytes) -> list[str]:
        data = self._carry + chunk
        self._carry = b""
        if data.endswith(b"\r"):
            data, self._carry = data[:-1], b"\r"
        out: list[str] = []
        pos = 0
        for end in _END.finditer(data):
            self._add(data[pos : end.start()])
            out += self._emit(redrawn=end.group() == b"\r")
            pos = end.end()
        self._add(data[pos:])
        return out

    def close(self) -> list[str]:
        """The last line, when the output ended without a line end."""
        out = self._emit(redrawn=True) if self._carry else []
        self._carry = b""
        if self._buf or self._dropped:
            out += self._emit(redrawn=False)
        return out

    def _add(self, part: bytes) -> None:
        room = self.limit - len(self._buf)
        self._buf += part[: max(room, 0)]
        self._dropped += max(len(part) - max(room, 0), 0)

    def _emit(self, *, redrawn: bool) -> list[str]:
        text = self._buf.decode("utf-8", errors="replace")
        if self._dropped:
            self.cut += 1
            text += f" [... {self._dropped} more bytes cut: lines are read up to {self.limit} bytes]"
        self._buf, self._dropped = bytearray(), 0
        if redrawn and _BLANK.match(text):
            return []  # the empty stretch before a redraw (a bar's backspaces), not a line of output
        text = text.replace("\x08", "")
        return [Redrawn(text) if redrawn else text]


# The last lines of the output, uploaded as ``log-tail.txt`` while the job runs (for `gpubench logs`): rolling
# uploads straight to the bucket (a failed one is replaced by the next), the final one through the spooling
# store; a redrawn progress bar keeps only its newest state, as a terminal shows it.
LOG_TAIL_LINES = 200
LOG_TAIL_LINE_CHARS = 2000  # longer lines are cut: the tail stays under 200 x 2000 characters
UPLOAD_EVERY_SECONDS = 30.0  # rolling uploads while the job runs
TAIL_MARK = "\n--- last lines of its output ---\n"  # a failed run's error: the reason, this, its last lines


class LogTail:
    """A bounded, thread-safe line buffer with a background uploader."""

    def __init__(self, maxlen: int = LOG_TAIL_LINES):
        self._lines: collections.deque[str] = collections.deque(maxlen=maxlen)
        self._lock = threading.Lock()
        self._version = 0  # lines appended so far: a change since the last upload
        self._uploaded = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def append(self, line: str) -> None:
        """Add a line; a redrawn line replaces the redrawn line before it (one progress bar, its newest state)."""
        text = line if len(line) <= LOG_TAIL_LINE_CHARS else line[:LOG_TAIL_LINE_CHARS] + " [...]"
        with self._lock:
            if isinstance(line, Redrawn) and self._lines and isinstance(self._lines[-1], Redrawn):
                self._lines.pop()
            self._lines.append(Redrawn(text) if isinstance(line, Redrawn) else text)
            self._version += 1

    def lines(self) -> list[str]:
        with self._lock:
            return list(self._lines)

    def __len__(self) -> int:
        with self._lock:
            return len(self._lines)

    def text(self) -> bytes:
        lines = self.lines()
        return ("\n".join(lines) + "\n").encode() if lines else b""

    def upload_if_changed(self, put: Callable[[bytes], object]) -> bool:
        """Upload the tail when lines arrived since the last upload; a failed upload is retried next time."""
        with self._lock:
            version = self._version
        if version == self._uploaded:
            return False
        try:
            put(self.text())
        except Exception:  # noqa: BLE001 - a rolling copy; the final upload is the one that counts
            return False
        self._uploaded = version
        return True

    def start_uploads(self, put: Callable[[bytes], object]) -> None:
        """Upload every UPLOAD_EVERY_SECONDS until `stop_uploads`."""

        def loop() -> None:
            while not self._stop.wait(UPLOAD_EVERY_SECONDS):
                self.upload_if_changed(put)

        self._thread = threading.Thread(target=loop, name="gpubench-log-tail", daemon=True)
        self._thread.start()

    def stop_uploads(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)


STOP_GRACE_ENV = "GPUBENCH_STOP_GRACE_SECONDS"
DEFAULT_STOP_GRACE_SECONDS = 30.0  # SIGTERM, then SIGKILL: time for a job to save its work
MAX_STOP_GRACE_SECONDS = 3600.0
KILL_WAIT_SECONDS = 10.0  # after SIGKILL: the kernel ends the processes; anything left is reported
# Once the job's whole tree is ended no process writes to its pipe, so the reader drains what is left
# and ends; this bound only matters when a process outlived SIGKILL and still holds the pipe.
READER_JOIN_SECONDS = 60.0
READ_CHUNK = 64 * 1024  # bytes read from the pipe at a time


def stop_grace_seconds(environ: dict | None = None) -> float:
    """The grace between SIGTERM and SIGKILL: $GPUBENCH_STOP_GRACE_SECONDS (0..3600), else 30 s."""
    try:
        value = float((environ if environ is not None else os.environ).get(STOP_GRACE_ENV, ""))
    except ValueError:  # unset or not a number
        value = -1.0
    return value if 0.0 <= value <= MAX_STOP_GRACE_SECONDS else DEFAULT_STOP_GRACE_SECONDS  # nan falls back too


def shell_argv() -> list[str]:
    """The shell a job's command runs in, up to its ``-c``: bash without its startup files.

    Bash reads ~/.bashrc even non-interactively when SSH_CLIENT is set (Debian and most distributions build
    it so), and a .bashrc running ``pyenv init`` or ``conda activate`` would put the user's Python before the
    task's own environment (payload.workloads.jobvenv): ``--norc --noprofile`` keeps the run's PATH."""
    bash = shutil.which("bash")
    return [bash, "--norc", "--noprofile", "-c"] if bash else ["/bin/sh", "-c"]


JOB_MARK_ENV = "GPUBENCH_JOB_MARK"  # in the environment of a job's shell, and so of all it starts


class JobTree:
    """The processes of one job: the shell, every process below it, and the orphans this process adopted
    as subreaper that carry this job's mark in their environment. Any other child of ours is never this
    job's to end or reap; an orphan that replaced its whole environment carries no mark and is not found."""

    def __init__(self, shell: int, before: set[int], mark: str):
        self.shell, self.before, self.me, self.mark = shell, before, os.getpid(), mark
        self.seen: set[int] = set()  # every process found running as this job's

    def _adopted(self, pid: int) -> bool:
        return pid in self.seen or proctree.environ_value(pid, JOB_MARK_ENV) == self.mark

    def members(self) -> set[int]:
        table = proctree.processes()
        if not table:  # no /proc: the process group is all we can reach
            return {self.shell} if proctree.alive(self.shell) else set()
        ours = {
            pid
            for pid, (_, ppid) in table.items()
            if ppid == self.me and pid not in self.before and pid != self.shell and self._adopted(pid)
        }
        running = proctree.parents(table)
        found = proctree.descendants((ours | {self.shell}) & running.keys(), running)
        # adopted orphans of this job that exited (seen running as its own) are reaped; any other zombie is
        # left to whoever started it (the shell to its Popen: reaping it here would lose its exit code)
        proctree.reap(pid for pid in ours if table[pid][0] == "Z" and pid in self.seen)
        self.seen |= found
        return found

    def signal_group(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.shell, sig)

    def end(self, grace: float) -> set[int]:
        """SIGTERM to the whole tree, SIGKILL after `grace`; the pids that survived (normally none)."""
        left = proctree.terminate(self.members, grace, KILL_WAIT_SECONDS, on_signal=self.signal_group)
        self.members()  # reaps what the last signal ended
        return left


class ShellProcess:
    """``bash -c script`` (shell_argv) in `cwd` with `env`, every output line handed to `on_line`."""

    def __init__(self, script: str, cwd: str, env: dict, on_line: Callable[[str], None]):
        self.grace = stop_grace_seconds()  # the payload's setting, never the job's own env
        before = {pid for pid, ppid in proctree.parents().items() if ppid == os.getpid()}  # not the job's
        self._subreaper = proctree.set_child_subreaper(True)  # orphans of the job come to us, not init
        mark = uuid.uuid4().hex
        self.proc = subprocess.Popen(
            [*shell_argv(), script],
            cwd=cwd,
            env={**env, JOB_MARK_ENV: mark},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        self.tree = JobTree(self.proc.pid, before, mark)
        self.ended_at: float | None = None  # time.time() when the shell exited: the job's end
        self.ended_clock: float | None = None  # the same moment on time.perf_counter()
        self.survivors: set[int] = set()  # pids that outlived even SIGKILL (reported, never expected)
        self._pump = threading.Thread(target=self._read, args=(on_line,), daemon=True)
        self._pump.start()

    reader_error: BaseException | None = None  # what broke the reader of the output; the job was stopped
    unread = False  # the output past this point is not handed on (the reader outlived wait())
    lines_cut = 0  # output lines longer than MAX_LINE_BYTES, truncated

    def _read(self, on_line) -> None:
        """Pump the output to `on_line` in bounded lines (LineSplitter) until the job closes it.

        A reader that raises is recorded in `reader_error`, the job is stopped and its output is
        drained unread: a job blocked on a full pipe would otherwise run on until its deadline."""
        split, stream = LineSplitter(), self.proc.stdout
        try:
            while chunk := stream.read1(READ_CHUNK):
                lines = split.feed(chunk)
                self.lines_cut = split.cut
                for line in lines:
                    self._deliver(on_line, line)
            for line in split.close():
                self._deliver(on_line, line)
            self.lines_cut = split.cut
        except Exception as exc:  # noqa: BLE001 - the pump itself broke: the job cannot be read, stop it
            self.reader_error = self.reader_error or exc
            self.stop()
        finally:
            stream.close()

    def _deliver(self, on_line, line: str) -> None:
        if self.reader_error is not None or self.unread:
            return
        try:
            on_line(line)
        except Exception as exc:  # noqa: BLE001 - any bug in reading must end the job, not block it
            self.reader_error = exc
            threading.Thread(target=self.stop, name="gpubench-reader-failed", daemon=True).start()

    def stop(self) -> None:
        """End the job's whole tree: SIGTERM, SIGKILL after the grace."""
        self.survivors |= self.tree.end(self.grace)

    def wait(self, notice: threading.Event, poll: float = 0.2, should_stop=None) -> tuple[int, bool]:
        """(exit code, stopped by a notice). `should_stop()` true (a probe done) stops it too, not as a notice.
        When the shell has ended, whatever it left running is ended too, before the output is read to its end."""
        stopped = ended = False
        while self.proc.poll() is None:
            if notice.is_set() and not (stopped or ended):
                stopped = True
                self.stop()
            elif should_stop is not None and not (stopped or ended) and should_stop():
                ended = True
                self.stop()
            else:
                time.sleep(poll)
        self.ended_at, self.ended_clock = time.time(), time.perf_counter()
        self.stop()  # what the job left in the background: nothing outlives the job
        if self.survivors:
            note(
                f"{len(self.survivors)} process(es) of the job survived SIGKILL: "
                + ", ".join(map(str, sorted(self.survivors)))
            )
        if self._subreaper is False:
            proctree.set_child_subreaper(False)
        self._pump.join(timeout=READER_JOIN_SECONDS)
        # a reader still held by a survivor hands nothing more on: the job's results are read from here on
        self.unread = self._pump.is_alive()
        return self.proc.returncode, stopped
