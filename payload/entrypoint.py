"""The one error boundary of every gpubench entry point (``gpubench``, ``python -m analysis|infra|payload``).

Whatever a command raises ends here as one line on stderr and an exit code from
payload.exitcodes, never a traceback: a known error (the entry point's
`classify` recognises it) prints its message; a closed stdout (``| head``) ends
quietly with OK; Ctrl-C prints one line and exits CANCELLED; anything else is a
bug, named by its type with where to report it. ``GPUBENCH_DEBUG=1`` (or
``gpubench --debug``, read from the parsed arguments) prints the traceback as well.

It lives in payload, the bottom layer, so that all three entry points share it.
"""

from __future__ import annotations

import os
import signal
import sys
import traceback
from collections.abc import Callable

from payload import exitcodes

DEBUG_ENV = "GPUBENCH_DEBUG"
REPORT_TO = "the gpubench issue tracker (the repository's Issues page)"

# A classifier maps an exception to (exit code, one-line message), or None when it does not know it.
Classifier = Callable[[BaseException], "tuple[int, str] | None"]

# Paths the user gave that cannot be used as asked: a usage error naming the path.
_BAD_PATH_ERRORS = (FileExistsError, NotADirectoryError, IsADirectoryError, PermissionError)


def debug_requested() -> bool:
    """Tracebacks are shown only when asked: GPUBENCH_DEBUG=1 (a command line may add its own flag)."""
    return os.environ.get(DEBUG_ENV, "").strip() not in ("", "0")


def say(line: str) -> None:
    """One line on stderr; a closed stderr is not worth a second error."""
    try:
        print(line, file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass


def quiet_stdout() -> None:
    """After a closed pipe, point stdout at /dev/null so the interpreter's final flush stays silent."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def classify_os_error(exc: BaseException) -> tuple[int, str] | None:
    """File-system errors every command can meet: a bad path is USAGE, a failing disk is FAILED."""
    if isinstance(exc, FileNotFoundError):
        return exitcodes.USAGE, first_line(exc)
    if isinstance(exc, _BAD_PATH_ERRORS):
        return exitcodes.USAGE, f"{exc.strerror or exc}: {exc.filename!s}; pass a path that can be used"
    if isinstance(exc, OSError) and not isinstance(exc, BrokenPipeError):
        return exitcodes.FAILED, first_line(exc)
    return None


def unexpected(exc: BaseException, prog: str) -> str:
    return (
        f"unexpected {type(exc).__name__} in `{prog}`: {first_line(exc)}. This is a bug: please report it to "
        f"{REPORT_TO} with the output of the same command run with {DEBUG_ENV}=1"
    )


def guarded(
    call: Callable[[], int | None],
    *,
    prog: str,
    classify: Classifier | None = None,
    debug: Callable[[], bool] = debug_requested,
) -> int:
    """Run `call` (parsing included) and turn whatever it raises into a line and a documented exit code.

    SystemExit passes through: argparse's own usage errors already exit 2 with a message."""
    try:
        code = int(call() or 0)
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's exit
        return code
    except SystemExit:
        raise
    except BrokenPipeError:  # `gpubench offers | head`
        quiet_stdout()
        return exitcodes.OK
    except KeyboardInterrupt as exc:  # Ctrl-C, or a stop signal the command handles as one (it has `signum`)
        signum = getattr(exc, "signum", None)
        say(f"{prog}: cancelled ({signal.Signals(signum).name if signum else 'Ctrl-C'})")
        return exitcodes.CANCELLED
    except Exception as exc:
        if debug():  # asked when it is needed: by then the command line may have been parsed
            traceback.print_exc()
        known = (classify(exc) if classify else None) or classify_os_error(exc)
        if known is None:
            say(f"error: {unexpected(exc, prog)}")
            return exitcodes.FAILED
        code, message = known
        say(f"error: {message}")
        return code
