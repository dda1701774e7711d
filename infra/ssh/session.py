"""One SSH stack run as a library (`run_ssh_stack`): `python -m infra ssh` is this call plus printing
(the command's --help says what a run does); a caller probing a host passes `check=True` or extra options."""

from __future__ import annotations

import datetime as _dt
import threading
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from types import SimpleNamespace
from typing import IO, Any

from infra import stacks as stackfiles
from infra.catalog import load_catalog
from infra.config import ConfigError
from infra.ssh import checks as host_checks
from infra.ssh import remote
from infra.ssh.config import SshStack, parse_ssh_config
from infra.ssh.connection import SshError, connect
from infra.ssh.layout import RunLayout, new_run_id
from infra.ssh.runtimes import plan_for
from infra.ssh.transfer import fetch_and_upload
from infra.stacks import load_config
from payload.config import OPTIONS
from payload.layout import stack_prefix
from payload.storage import StorageError, open_store
from payload.timestamps import iso

# outcome -> process exit code (docs/ssh.md)
EXIT_CODES = {
    "completed": 0,
    "running": 0,
    "checked": 0,
    "failed": 1,
    "lost": 1,
    "config": 2,
    "host": 3,
    "connection-lost": 4,
    "upload-failed": 5,
    "interrupted": 75,
    "stopped-by-user": 130,
}

# Payload run options the stack itself sets (or the runner owns): extra options may not change them.
# Those with a stack key name it, so the caller overrides the stack instead.
STACK_OPTIONS = {
    **{name: name for name in ("benchmark", "epochs", "steps", "batch_size", "precision", "gpus", "data")},
    **{name: name for name in ("expect_gpu", "workload", "results")},
    "param": "params",
    "deadline": "max_hours",
    **dict.fromkeys(("stack", "spool", "host_events")),
}


class Outcome(Exception):
    """Ends the run with a status (see EXIT_CODES) and a message."""

    def __init__(self, status: str, message: str):
        super().__init__(message)
        self.status = status


def load_stack(name: str, stacks_dir: Path | None = None) -> SshStack:
    raw = load_config(name, stacks_dir or stackfiles.STACKS_DIR)
    return parse_ssh_config(raw, name, load_catalog())


def with_extra_options(cfg: SshStack, extra_options: Mapping[str, str] | None) -> SshStack:
    """The stack with more payload run options (e.g. {"seed": "7"}); ValueError names an unknown option
    or one the stack sets itself."""
    if not extra_options:
        return cfg
    known = {o.name for o in OPTIONS}
    for name in extra_options:
        if name not in known:
            raise ValueError(f"extra option {name!r} is not a payload run option; known: {', '.join(sorted(known))}")
        if name in STACK_OPTIONS:
            field = STACK_OPTIONS[name]
            fix = f"override the stack's {field!r} instead" if field else "the SSH runner sets it for every run"
            raise ValueError(f"extra option {name!r} is set by the stack: {fix}")
    base = dict(cfg.offering_options) or {"offering": cfg.offering, "market": "on-demand"}
    return cfg.with_overrides(offering_options={**base, **{k: str(v) for k, v in extra_options.items()}})


class Session:
    """One invocation: connection, progress output and the report it builds."""

    def __init__(self, cfg: SshStack, progress: IO[str], **options: Any):
        """`options`: run_ssh_stack's check, detach, poll, stop_timeout and stop."""
        self.cfg, self.opts, self.progress = cfg, SimpleNamespace(**options), progress
        self.report: dict = {
            **{"stack": cfg.stack, "host": cfg.target, "offering": cfg.offering, "runtime": cfg.runtime},
            **{"run_id": None, "status": None, "exit_code": None, "attached": False, "results": None},
            **{"payload_runs": [], "files": [], "checks": [], "message": ""},
        }
        self.conn = self.sftp = None
        self.current: remote.RemoteRun | None = None
        self.launching: RunLayout | None = None  # set just before a launch, for Ctrl-C in the middle of it

    def say(self, text: str) -> None:
        print(f"[ssh {self.cfg.stack}] {text}", file=self.progress, flush=True)

    # --- steps

    def check_host(self) -> list[host_checks.Check]:
        found = host_checks.run_checks(self.conn, self.cfg)
        self.report["checks"] = [asdict(c) for c in found]
        self.say(f"host checks on {self.cfg.target} ({self.cfg.runtime} runtime):")
        for c in found:
            print(c.line(), file=self.progress, flush=True)
        missing = [c for c in found if c.required and not c.ok]
        if missing:
            names = ", ".join(c.name for c in missing)
            raise Outcome(
                "host",
                f"{self.cfg.target} is missing what the {self.cfg.runtime} runtime needs: {names}. "
                + " ".join(f"[{c.name}] {c.fix}" for c in missing),
            )
        return found

    def start(self, root: str) -> remote.RemoteRun:
        found = self.check_host()
        has_gpu = any(c.name == "gpu" and c.found for c in found)
        layout = self.launching = RunLayout(root, self.cfg.stack, new_run_id())
        plan = plan_for(self.cfg, layout, has_gpu)
        record = {
            **{"stack": self.cfg.stack, "run_id": layout.run_id, "offering": self.cfg.offering},
            **{"runtime": self.cfg.runtime, "host": self.cfg.target, "image": plan.image, "started_at": iso()},
            "payload": [str(a) for a in plan.payload],
        }
        r = self.current = remote.launch(self.conn, self.sftp, layout, plan, record)
        self.say(f"started run {layout.run_id} (pid {r.pid}) in {layout.dir}")
        return r

    def stopping(self) -> bool:
        """The caller's stop event is set (a bench being cancelled, say)."""
        return self.opts.stop is not None and self.opts.stop.is_set()

    def interrupt(self, r: remote.RemoteRun) -> remote.RemoteRun:
        """Ctrl-C (or the caller's stop event): SIGTERM the run's process group so the payload checkpoints,
        KILL after the grace time."""
        why = "stop requested" if self.stopping() else "Ctrl-C"
        self.say(
            f"{why}: stopping run {r.layout.run_id} (SIGTERM, up to {self.opts.stop_timeout:g}s to checkpoint; "
            "Ctrl-C again leaves it stopping on its own)..."
        )
        docker = r.record.get("runtime") == "docker"  # the container goes too
        plan_stop = plan_for(self.cfg.with_overrides(runtime="docker"), r.layout, False).stop if docker else None
        r = remote.stop(self.conn, self.sftp, r, plan_stop, grace=self.opts.stop_timeout)
        self.report["stopped_by_user"] = True
        return r

    def collect(self, r: remote.RemoteRun) -> remote.RemoteRun:
        if r.state is None and not r.alive:  # the wrapper vanished without a state file (reboot, OOM killer)
            why = "the wrapper process is gone and left no state (host rebooted or process killed)"
            remote.write_state(self.sftp, r, "lost", 1, why)
        store = open_store(self.cfg.results)
        up = fetch_and_upload(self.sftp, r.layout, store)
        fetched_at = _dt.datetime.now(_dt.timezone.utc).isoformat()
        info = {"results": self.cfg.results, "keys": up.keys, "status": r.status, "fetched_at": fetched_at}
        remote.mark_fetched(self.sftp, r, info)
        self.report["files"] += up.keys
        self.report["payload_runs"] += [{"url": store.url_for(p), **up.statuses.get(p, {})} for p in up.payload_runs]
        self.report["results"] = store.url_for(stack_prefix(self.cfg.stack))
        self.say(
            f"run {r.layout.run_id}: {r.status}; uploaded {len(up.keys)} files ({up.bytes} bytes) to {self.report['results']}"
        )
        for message in up.unannounced:
            self.say(message)
        return r

    def pick(self, pending: list[remote.RemoteRun]) -> remote.RemoteRun:
        """Never a second run while one is open: follow the running one, collect finished leftovers."""
        running = [r for r in pending if r.alive]
        current = running[-1] if running else pending[-1]
        self.report["attached"] = True
        self.report["runtime"] = current.record.get("runtime", self.cfg.runtime)
        for r in pending:
            if r is not current and not r.alive:
                self.say(f"found finished run {r.layout.run_id} ({r.status}), not uploaded yet: collecting it")
                self.collect(r)
                self.report.setdefault("also_collected", []).append(r.layout.run_id)
        verb = (
            f"is still going on the host (pid {current.pid}): following it"
            if current.alive
            else f"finished ({current.status}) while no one watched: collecting it"
        )
        self.say(f"run {current.layout.run_id} {verb}")
        return current

    def locate_or_start(self, root: str) -> remote.RemoteRun:
        """The open run of this stack, or a new one; sets `self.current` as soon as it is known."""
        pending = remote.open_runs(self.conn, self.sftp, root, self.cfg.stack)
        # Picking up a run that has a pid or a state needs no lock. One with neither may be another
        # invocation's launch in progress: only under the launch lock is it known to be abandoned.
        if pending and all(r.pid is not None or r.state is not None for r in pending):
            self.current = self.pick(pending)
        else:
            with remote.stack_lock(self.conn, root, self.cfg.stack):
                pending = remote.open_runs(self.conn, self.sftp, root, self.cfg.stack)
                if not pending and self.stopping():
                    raise Outcome("stopped-by-user", "stop requested before the run started; nothing was started")
                self.current = self.pick(pending) if pending else self.start(root)
        self.report["run_id"] = self.current.layout.run_id
        self.report["remote_dir"] = self.current.layout.dir
        return self.current

    def main(self) -> str:
        self.conn = connect(self.cfg)
        try:
            self.sftp = self.conn.sftp()
            if self.opts.check:
                self.check_host()
                return "checked"
            root = remote.secure_root(self.conn, self.sftp, remote.resolve_root(self.conn, self.cfg.remote_dir))
            try:
                current = self.locate_or_start(root)
                if self.opts.detach and current.alive:
                    self.say(f"detached; run `python -m infra ssh {self.cfg.stack}` again to follow and collect it")
                    return "running"
                if current.alive:
                    offset = remote.start_offset(self.sftp, current) if self.report["attached"] else 0
                    opts = {"out": self.progress, "poll": self.opts.poll, "offset": offset, "stop": self.opts.stop}
                    current = remote.follow(self.conn, self.sftp, current, **opts)
            except (KeyboardInterrupt, remote.StopRequested):
                if self.current is None and self.launching is not None:
                    started = remote.load_run(self.conn, self.sftp, self.launching)
                    self.current = started if started.pid is not None else None
                if self.current is None:
                    raise Outcome(
                        "stopped-by-user",
                        "Ctrl-C before the run had started; if it did start, "
                        f"`python -m infra ssh {self.cfg.stack}` picks it up",
                    ) from None
                current = self.interrupt(self.current)
            current = self.collect(current)
            self.report["exit_code"] = (current.state or {}).get("exit_code")
            return "stopped-by-user" if self.report.get("stopped_by_user") else current.status
        except (FileNotFoundError, PermissionError):
            raise
        except (OSError, EOFError) as exc:
            raise Outcome(
                "connection-lost",
                f"lost the connection to {self.cfg.target} ({exc or type(exc).__name__}); "
                f"the run goes on on the host: run `python -m infra ssh {self.cfg.stack}` again to pick it up",
            ) from None
        finally:
            self.conn.close()


def _failure(session: Session, exc: Exception) -> tuple[str, dict]:
    """An expected failure as (status, report), its message saying what to do next; others are raised."""
    import paramiko  # heavy: the infra extra; `gpubench` lists the ssh command without it

    cfg = session.cfg
    if isinstance(exc, Outcome):
        status, message = exc.status, str(exc)
    elif isinstance(exc, SshError):
        status, message = "host", str(exc)
    elif isinstance(exc, paramiko.SSHException):
        status = "connection-lost"
        message = (
            f"SSH error talking to {cfg.target}: {exc}; the run (if started) goes on on the host: "
            f"run `python -m infra ssh {cfg.stack}` again to pick it up"
        )
    elif isinstance(exc, StorageError):
        status = "upload-failed"
        message = (
            f"uploading to {cfg.results} failed: {exc}; the files stay on the host and the run "
            f"is not marked fetched: fix the bucket/credentials and run again"
        )
    else:
        raise exc
    session.report["message"] = message
    return status, session.report


def run_ssh_stack(
    cfg: SshStack,
    *,
    check: bool = False,
    detach: bool = False,
    poll: float = 2.0,
    stop_timeout: float = 120.0,
    extra_options: Mapping[str, str] | None = None,
    progress: IO[str],
    stop: threading.Event | None = None,
) -> tuple[str, dict]:
    """Run (or pick up, or with `check` only check) one SSH stack: (status, report), the status a key of
    EXIT_CODES, an expected failure's text in the report's `message`. `stop`, set from another thread,
    starts no run or stops a followed one as Ctrl-C does; KeyboardInterrupt outside the run propagates."""
    try:
        cfg = with_extra_options(cfg, extra_options)
    except ValueError as exc:
        return "config", {"stack": cfg.stack, "message": f"{cfg.stack}: {exc}"}
    session = Session(cfg, progress, check=check, detach=detach, poll=poll, stop_timeout=stop_timeout, stop=stop)
    try:
        return session.main(), session.report
    except Exception as exc:  # noqa: BLE001 - _failure raises what it does not expect
        return _failure(session, exc)


def run_named_stack(
    name: str,
    *,
    stacks_dir: Path | None = None,
    runtime: str | None = None,
    remote_python: str | None = None,
    expect_gpu: bool | None = None,
    **options: Any,
) -> tuple[str, dict]:
    """run_ssh_stack on stacks/Pulumi.<name>.yaml with these overrides; a bad or missing file is "config"."""
    try:
        cfg = load_stack(name, stacks_dir).with_overrides(
            runtime=runtime, remote_python=remote_python, expect_gpu=expect_gpu
        )
    except (ConfigError, FileNotFoundError) as exc:
        return "config", {"stack": name, "message": f"{name}: {exc}"}
    return run_ssh_stack(cfg, **options)
