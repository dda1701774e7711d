"""SIGTERM and SIGHUP end a bench as Ctrl-C does, so a closed terminal or `kill` does not leave probes
billing; after SIGHUP output goes to /dev/null instead of failing the clean-up with EIO."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator

STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class StopSignal(KeyboardInterrupt):
    """SIGTERM or SIGHUP, handled as Ctrl-C."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _raise(signum, frame) -> None:
    if signum == signal.SIGHUP:  # the terminal is gone: stdout and stderr that were it point at /dev/null
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError, AttributeError):
                if stream.isatty():
                    devnull = os.open(os.devnull, os.O_WRONLY)
                    os.dup2(devnull, stream.fileno())
                    os.close(devnull)
    raise StopSignal(signum)


@contextlib.contextmanager
def stop_signals_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM and SIGHUP raise StopSignal in the main thread (elsewhere: no change)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {sig: signal.signal(sig, _raise) for sig in STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
