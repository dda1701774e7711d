"""Process exit codes of ``python -m payload run`` (the host unit acts on them).

=====  ===========  ==========================================================
code   name         meaning
=====  ===========  ==========================================================
0      OK           every benchmark completed and every file reached the bucket
1      FAILED       a benchmark failed; a ``failed`` result was written
2      USAGE        bad option or environment value (nothing was run)
3      NO_GPU       ``--expect-gpu`` but TensorFlow sees no GPU; ``failed`` result written
4      SPOOLED      completed, but some files are only in the local spool
                    (bucket unreachable); run ``python -m payload flush``
75     INTERRUPTED  spot/preemption notice (or SIGTERM, or the deadline): a
                    checkpoint and an ``interrupted`` result were written; run
                    the same command again to resume (75 = EX_TEMPFAIL)
=====  ===========  ==========================================================

With several outcomes in one suite the most urgent wins, in the order
INTERRUPTED, NO_GPU, FAILED, SPOOLED, OK.
"""

OK = 0
FAILED = 1
USAGE = 2
NO_GPU = 3
SPOOLED = 4
INTERRUPTED = 75

_PRECEDENCE = (INTERRUPTED, NO_GPU, FAILED, USAGE, SPOOLED, OK)


def worst(codes) -> int:
    codes = set(codes) or {OK}
    return next(c for c in _PRECEDENCE if c in codes)
