"""Terminal and JSON output shared by the commands, and their confirmation prompt. Everything printed passes
`terminal_text` (analysis.cli runs each command in safe_terminal); a table cell is also kept on one line, so it
cannot forge a row."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterable, Sequence
from datetime import date
from typing import Any

from analysis.options import NUMBER_BOUNDS
from payload.exitcodes import Declined
from payload.money import USD, USD_SIGN, fmt_usd, usd_amount  # noqa: F401  (one definition, re-exported)
from payload.terminal import terminal_text  # noqa: F401  (one definition, re-exported)


def parse_date(text: str) -> date:
    """argparse type for --as-of: YYYY-MM-DD, with an error that shows the form."""
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a date; use YYYY-MM-DD, e.g. 2018-02-08") from None


MIN_POLL_SECONDS = 1.0  # a bucket read more often only spends requests: the payload uploads every ~30 s


def poll_problem(seconds: float, flag: str = "--poll") -> str | None:
    """Why `seconds` between reads of a bucket is refused (zero, negative, NaN: a busy loop; infinite or
    over the --poll bound: a wait that never reads again, or a sleep the clock cannot hold), or None."""
    most = NUMBER_BOUNDS["poll"].maximum
    if MIN_POLL_SECONDS <= seconds <= most:
        return None
    if seconds > most:
        return (
            f"{flag} {seconds:g}: longer between reads than the most that follows anything ({flag} {most:,.0f} at most)"
        )
    return f"{flag} {seconds:g}: read at most once a second ({flag} {MIN_POLL_SECONDS:g} or more)"


def emit_json(obj: Any) -> None:
    json.dump(obj, sys.stdout, indent=2, default=str)
    sys.stdout.write("\n")


def print_table(rows: Iterable[Sequence[Any]], headers: Sequence[str], out=None) -> None:
    out = out or sys.stdout
    cells = [[("-" if c is None else terminal_text(c, multiline=False)) for c in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths))
    print(line.rstrip(), file=out)
    print("  ".join("-" * w for w in widths), file=out)
    for r in cells:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip(), file=out)


def confirm(what: Sequence[str], question: str, yes: bool, stdin=None, out=None) -> None:
    """Show what will happen (and its most cost), then ask; `--yes` skips it; no terminal: refused."""
    stdin = stdin or sys.stdin
    out = out or sys.stderr
    for line in what:
        print(line, file=out)
    if yes:
        return
    if not stdin.isatty():
        raise Declined(f"{question} Not confirmed: no terminal to ask on; pass --yes to go ahead")
    print(f"{question} [y/N] ", end="", file=out, flush=True)
    answer = stdin.readline().strip().lower()
    if answer not in ("y", "yes"):
        raise Declined("not confirmed; nothing was done")


def planned_then_run(
    run: Callable[[bool], list[Any]],
    *,
    acts: Callable[[Any], bool],
    describe: Callable[[Any], str],
    question: str,
    yes: bool,
    dry_run: bool,
    nothing: str,
) -> list[Any]:
    """The outcomes of `run(dry_run)`, asking first without --yes or --dry-run: the dry run's actions are shown
    and asked about (`question`, with {n}); when it would act on nothing the dry run is the answer, its
    failures included, so no mode hides what it could not check behind "nothing to do"."""
    if dry_run or yes:
        return run(dry_run)
    plan = run(True)
    acting = [o for o in plan if acts(o)]
    if not acting:
        print(nothing, file=sys.stderr)
        return plan
    confirm([describe(o) for o in acting], question.format(n=len(acting)), yes)
    return run(False)
