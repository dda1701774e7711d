"""Exit codes: one table for every gpubench command (``gpubench``, ``python -m payload|infra|analysis``).

=====  ===========  ==========================================================
code   name         meaning
=====  ===========  ==========================================================
0      OK           done; everything it was asked to do succeeded
1      FAILED       it ran, but something failed: a benchmark (a ``failed``
                    result was written), a resource the sweep or teardown could
                    not delete, an object collect could not read
2      USAGE        bad argument, option, config or input value; nothing was done
3      MISSING      something needed is not installed or not set up: the Pulumi
                    CLI, a pip extra, cloud credentials, or (payload
                    ``--expect-gpu``) a GPU; a ``failed`` result is written then
4      REMOTE       a cloud API or bucket failed or could not be reached
                    (payload: completed, but some files are only in the local
                    spool; run ``python -m payload flush``)
5      INVALID      data was refused: a price snapshot that would not load, or
                    (collect --strict) results that were set aside
6      STRANDED     payload: neither the bucket nor the local spool took some
                    files; they are in the fallback directory
                    ``$TMPDIR/gpubench-fallback/`` (else
                    ``./gpubench-fallback/``), or, if no directory could be
                    written, printed to stderr between ``LOST-FILE`` markers;
                    deliver them with ``python -m payload flush --spool DIR``
10     DECLINED     a launch or a deletion was not confirmed (answer ``y``, or
                    pass ``--yes`` where no one can answer)
75     INTERRUPTED  spot/preemption notice (or SIGTERM, or the deadline): a
                    checkpoint and an ``interrupted`` result were written; run
                    the same command again to resume (75 = EX_TEMPFAIL)
130    CANCELLED    Ctrl-C (or SIGTERM or SIGHUP to a gpubench command, handled
                    as Ctrl-C)
=====  ===========  ==========================================================

Within one payload suite the most urgent outcome wins, in the order
INTERRUPTED, STRANDED, NO_GPU, FAILED, SPOOLED, OK.
"""

OK = 0
FAILED = 1
USAGE = 2
MISSING = 3
REMOTE = 4
INVALID = 5
STRANDED = 6
DECLINED = 10
INTERRUPTED = 75
CANCELLED = 130
NO_GPU = MISSING  # the payload's name for it
SPOOLED = REMOTE  # the payload's name for it

TABLE = {
    OK: "done",
    FAILED: "ran, but something failed (see the output)",
    USAGE: "bad argument, option, config or input; nothing was done",
    MISSING: "a tool, pip extra, credential or GPU it needs is missing",
    REMOTE: "a cloud API or bucket failed or is unreachable (payload: results spooled locally)",
    INVALID: "data refused (a price snapshot that would not load; collect --strict: results set aside)",
    STRANDED: "payload: files are only in the fallback directory (or stderr); flush them with --spool DIR",
    DECLINED: "not confirmed: answer y, or pass --yes",
    INTERRUPTED: "interrupted by the cloud or the deadline; run again to resume",
    CANCELLED: "cancelled with Ctrl-C",
}

_PRECEDENCE = (INTERRUPTED, STRANDED, NO_GPU, FAILED, USAGE, SPOOLED, OK)


def worst(codes) -> int:
    codes = set(codes) or {OK}
    return next(c for c in _PRECEDENCE if c in codes)


class GpubenchError(Exception):
    """An error the user can act on, carrying its exit code (the click model): its message names the bad
    value and the fix and is shown whole; payload.entrypoint.guarded is the one place that prints it and
    exits. Subclasses set `exit_code`; one raise site may give its own."""

    exit_code = FAILED

    def __init__(self, message: str, *, exit_code: int | None = None):
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code
