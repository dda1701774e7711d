"""The one error boundary of every gpubench entry point (``gpubench``, ``python -m analysis|infra|payload``):
whatever a command raises ends as a message on stderr and an exit code, never a traceback (GPUBENCH_DEBUG=1
adds it). Our errors carry their code; a few of Python's and libraries' are mapped in `classify`; anything
else is a bug, named with where to report it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import traceback
from collections.abc import Callable

from payload import exitcodes
from payload.extras import MissingExtra, extra_of
from payload.terminal import terminal_text

DEBUG_ENV = "GPUBENCH_DEBUG"
REPORT_TO = "the gpubench issue tracker (the repository's Issues page)"

# Paths the user gave that cannot be used as asked: a usage error naming the path.
_BAD_PATH_ERRORS = (FileExistsError, NotADirectoryError, IsADirectoryError, PermissionError)

# Errors of Python and of libraries that mean "bad input", not a bug: (module, class, exit code, advice).
# Most specific first; looked up in sys.modules, so a module never imported cannot have raised one.
_TABLE_ADVICE = "; it is not a readable results table: run `gpubench collect --table DIR` to write it again"
FOREIGN_ERRORS = (
    ("pyarrow.lib", "ArrowInvalid", exitcodes.INVALID, _TABLE_ADVICE),
    ("pandas.errors", "ParserError", exitcodes.INVALID, _TABLE_ADVICE),
    ("pandas.errors", "EmptyDataError", exitcodes.INVALID, _TABLE_ADVICE),
    ("builtins", "OverflowError", exitcodes.USAGE, ": a number is too large; give a smaller value"),
    ("builtins", "ValueError", exitcodes.USAGE, ""),  # CatalogError, ConfigError, SelectionError, ...
)


def debug_requested() -> bool:
    return os.environ.get(DEBUG_ENV, "").strip() not in ("", "0")


def say(line: str) -> None:
    """Text on stderr, safe for a terminal; a closed stderr is not worth a second error."""
    with contextlib.suppress(OSError, ValueError):
        print(terminal_text(line), file=sys.stderr, flush=True)


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def classify(exc: BaseException, prog: str) -> tuple[int, str] | None:
    """The exit code and message of an error the user can act on, or None for a bug."""
    if isinstance(exc, exitcodes.GpubenchError):
        return exc.exit_code, str(exc)
    if isinstance(exc, ModuleNotFoundError):  # a library of an extra the install left out
        return (
            None if extra_of(exc.name or "") is None else (exitcodes.MISSING, str(MissingExtra(exc.name, f"`{prog}`")))
        )
    for module, name, code, advice in FOREIGN_ERRORS:
        cls = getattr(sys.modules.get(module), name, None)
        if isinstance(cls, type) and isinstance(exc, cls):
            return code, (first_line(exc).rstrip(".") if advice else first_line(exc)) + advice
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


def guarded(call: Callable[[], int | None], *, prog: str, debug: Callable[[], bool] = debug_requested) -> int:
    """`call` (parsing included), whatever it raises a message and an exit code (SystemExit passes: argparse's
    usage errors already exit 2 with a message)."""
    try:
        code = int(call() or 0)
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's exit
        return code
    except SystemExit:
        raise
    except BrokenPipeError:  # `gpubench offers | head`: stdout to /dev/null, so the final flush stays silent
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return exitcodes.OK
    except KeyboardInterrupt as exc:  # Ctrl-C, or a stop signal the command handles as one (it has `signum`)
        signum = getattr(exc, "signum", None)
        say(f"{prog}: cancelled ({signal.Signals(signum).name if signum else 'Ctrl-C'})")
        return exitcodes.CANCELLED
    except Exception as exc:
        if debug():  # asked when it is needed: by then the command line may have been parsed
            traceback.print_exc()
        code, message = classify(exc, prog) or (exitcodes.FAILED, unexpected(exc, prog))
        say(f"error: {message}")
        return code
