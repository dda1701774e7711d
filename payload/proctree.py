"""Every process a job started, found and ended, even one that left its group (``setsid``, a daemon).

On Linux the payload becomes a child subreaper (``prctl(PR_SET_CHILD_SUBREAPER)``, man 2 prctl), so every
process the job started stays its descendant; the tree is read from ``/proc/<pid>/stat`` (field 4 is the
parent: man 5 proc). Without ``/proc`` only the process group is reached.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import signal
import time
from collections.abc import Callable, Iterable
from pathlib import Path

PROC = Path("/proc")
PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h
PR_GET_CHILD_SUBREAPER = 37


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, parent pid) of a process, or None when it is gone. The name may hold spaces and ')'."""
    try:
        text = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    fields = text.rsplit(")", 1)[-1].split()
    try:
        return fields[0], int(fields[1])
    except (IndexError, ValueError):
        return None


def processes() -> dict[int, tuple[str, int]]:
    """{pid: (state, parent pid)} of every process, zombies included; empty without /proc."""
    try:
        entries = [int(p.name) for p in PROC.iterdir() if p.name.isdigit()]
    except OSError:
        return {}
    return {pid: found for pid in entries if (found := _stat(pid)) is not None}


def parents(table: dict[int, tuple[str, int]] | None = None) -> dict[int, int]:
    """{pid: parent pid} of every process now running (zombies left out); empty without /proc."""
    table = processes() if table is None else table
    return {pid: ppid for pid, (state, ppid) in table.items() if state != "Z"}


def alive(pid: int) -> bool:
    """Neither gone nor a zombie. One /proc does not show is asked by signal 0 (hidepid hides others' processes)."""
    found = _stat(pid)
    if found is None:
        if pid <= 0:  # 0 and below name process groups to os.kill, never one process
            return False
        try:
            os.kill(pid, 0)
        except (ProcessLookupError, OverflowError):  # gone, or a number no process has
            return False
        except PermissionError:
            return True
        return True
    return found[0] != "Z"


def descendants(roots: Iterable[int], table: dict[int, int] | None = None) -> set[int]:
    """`roots` (those running) and every process below them."""
    table = parents() if table is None else table
    children: dict[int, list[int]] = {}
    for pid, ppid in table.items():
        children.setdefault(ppid, []).append(pid)
    found, todo = set(), [r for r in roots if r in table]
    while todo:
        pid = todo.pop()
        if pid in found:
            continue
        found.add(pid)
        todo.extend(children.get(pid, ()))
    return found


def pids_with_environ(name: str, value: str) -> set[int]:
    """Running processes of this user whose environment holds `name=value` (what a process inherited)."""
    return {pid for pid in parents() if environ_value(pid, name) == value}


def environ_value(pid: int, name: str) -> str | None:
    """The value of `name` in a process's environment as it started (None: unset, or unreadable)."""
    try:
        env = (PROC / str(pid) / "environ").read_bytes()
    except OSError:
        return None
    prefix = f"{name}=".encode()
    found = next((item for item in env.split(b"\0") if item.startswith(prefix)), None)
    return None if found is None else found[len(prefix) :].decode("utf-8", "replace")


def set_child_subreaper(on: bool = True) -> bool | None:
    """Make this process the reaper of its orphaned descendants (Linux); the previous setting, None if unsupported."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        previous = ctypes.c_int(0)
        got = libc.prctl(PR_GET_CHILD_SUBREAPER, ctypes.byref(previous), 0, 0, 0) == 0  # 0: success
        return bool(previous.value) if got and libc.prctl(PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0) == 0 else None
    except (OSError, AttributeError):
        return None


def reap(pids: Iterable[int]) -> None:
    """Reap those `pids` that are our exited children (adopted orphans): no zombies left."""
    for pid in pids:
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)


def _signal(pids: Iterable[int], sig: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def terminate(
    members: Callable[[], set[int]],
    grace: float,
    kill_wait: float = 10.0,
    poll: float = 0.05,
    on_signal: Callable[[int], None] | None = None,
) -> set[int]:
    """SIGTERM to every member, SIGKILL to those left after `grace` s; the pids still running `kill_wait` s later.
    `members()` is asked at every step, so a process started while the others stop is signalled too."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, kill_wait)):
        if on_signal is not None:
            on_signal(sig)
        signalled = members()
        _signal(signalled, sig)
        end = time.monotonic() + max(0.0, wait)
        while True:
            left = members()
            if not left:
                return set()
            if time.monotonic() >= end:
                break
            _signal(left - signalled, sig)  # started since (a fork between the listing and the signal)
            signalled |= left
            time.sleep(poll)
    return members()
