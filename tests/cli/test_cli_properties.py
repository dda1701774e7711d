"""Property: no `gpubench` subcommand, given any arguments, shows a traceback, exits with a code outside
payload/exitcodes.py, or changes the results table when it fails.

Every subcommand is found by walking the argparse tree (and `payload` through the payload's own
parser); arguments are drawn from each parser's own options with odd values: empty, unicode, huge and
negative numbers, paths that do not exist, globs. Commands run in-process through analysis.cli.main
in a temporary working directory holding a small collected results table. The network is shut
(every socket connect fails), PATH holds no tools (no Pulumi CLI, no ssh) and the payload's trainer
and the demo are stubbed, so nothing is launched, trained or fetched.
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import socket
import sys
import tempfile
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from parser_walk import leaves
from synthetic_results import make_result, result_bytes, result_key

from analysis.cli import build_parser, main
from payload import exitcodes

ODD_VALUES = [
    "",
    " ",
    "é✓漢字",
    "0",
    "-1",
    "1e308",
    "-1e308",
    "nan",
    "inf",
    "99999999999999999999999",
    "/proc/no/such/dir/x",  # under /proc: nothing can create it, not even root
    "no-such-file.parquet",
    "*",
    "aws-*",
    "[",
    "?",
    "aws-g4dn-1x",
    "aws/g4dn.xlarge",
    "local/this-machine",
    "T4:1",
    "us-east-1",
    "aws",
    "report",
    "table",
    "garbage",
    "results",
    "2020-13-01",
    "x" * 300,
    "a\nb",
]
VALUES = st.one_of(
    st.sampled_from(ODD_VALUES),
    st.text(max_size=10),
    st.integers(-(10**30), 10**30).map(str),
    st.floats().map(repr),
)

NUMBERS = st.one_of(
    st.sampled_from(["0", "-1", "1", "1e9", "1e308", "-1e308", "nan", "inf", "-inf", "99999999999999999999999"]),
    st.floats().map(repr),
    st.integers(-(10**30), 10**30).map(str),
)

# Options left out for time only: `preview --all` renders every stack (~40 s); tests/cli covers it.
SKIPPED_OPTIONS = {("preview",): ("--all",)}

# Names that exist, so that commands get past their first check and meet the odd options.
REAL_NAMES = ["aws-g4dn-1x", "aws-g4dn-1x-spot", "aws/g4dn.xlarge", "local/this-machine", "aws-results", "aws-g4dn-*"]
POSITIONAL_VALUES = st.one_of(st.sampled_from(REAL_NAMES), VALUES)


def _commands():
    from payload.cli import build_parser as payload_parser

    found = [(p, parser) for p, parser in leaves(build_parser("gpubench")) if p != ("payload",)]
    found += [(("payload", *p), parser) for p, parser in leaves(payload_parser()) if p]
    return found


COMMANDS = _commands()


def _value_for(action: argparse.Action):
    """Numbers for numeric options (mostly: a stray word too), the choices or odd words for the rest."""
    if action.type in (int, float):
        return st.one_of(NUMBERS, NUMBERS, VALUES)
    if action.choices:
        return st.one_of(st.sampled_from(sorted(map(str, action.choices))), VALUES)
    return VALUES


def _words(action: argparse.Action, values):
    """As many values as the argument takes (0-2 for the open-ended ones)."""
    low, high = {None: (1, 1), "?": (0, 1), "*": (0, 2), "+": (1, 2)}.get(action.nargs, (1, 1))
    if action.nargs == argparse.REMAINDER:
        low, high = 0, 3
    return st.lists(values, min_size=low, max_size=high)


def _option(action: argparse.Action):
    """One option's words: the flag, then its values."""
    flag = st.sampled_from(action.option_strings)
    if action.nargs == 0:
        return flag.map(lambda f: [f])
    return st.tuples(flag, _words(action, _value_for(action))).map(lambda t: [t[0], *t[1]])


def _must_give(parser: argparse.ArgumentParser):
    """Required options, and one option of each required either-or group, so arguments get past argparse."""
    required = [st.just(a) for a in parser._actions if a.option_strings and a.required]
    groups = [st.sampled_from(g._group_actions) for g in parser._mutually_exclusive_groups if g.required]
    return st.tuples(*required, *groups) if required or groups else st.just(())


def argv_for(path: tuple[str, ...], parser: argparse.ArgumentParser):
    """The command words, its positionals (often real names), required options, then up to 4 random ones."""
    skip = SKIPPED_OPTIONS.get(path, ())
    options = [
        a
        for a in parser._actions
        if a.option_strings and not isinstance(a, argparse._HelpAction) and not set(a.option_strings) & set(skip)
    ]
    positionals = [a for a in parser._actions if not a.option_strings]
    chosen = st.tuples(_must_give(parser), st.lists(st.sampled_from(options), max_size=4) if options else st.just([]))
    opt_words = chosen.flatmap(
        lambda t: st.tuples(*[_option(a) for a in [*t[0], *t[1]]]) if t[0] or t[1] else st.just(())
    )
    pos_words = st.tuples(*[_words(a, POSITIONAL_VALUES) for a in positionals]) if positionals else st.just(())
    flat = lambda groups: [w for ws in groups for w in ws]  # noqa: E731
    return st.tuples(pos_words, opt_words).map(lambda t: [*path, *flat(t[0]), *flat(t[1])])


def _no_network(*args, **kwargs):
    raise ConnectionRefusedError("the network is shut in this test")


def _collected_table(root: Path) -> Path:
    """A small table written by `gpubench collect` itself, from synthetic results."""
    from payload.storage import open_store

    src, out = root / "bucket", root / "table"
    store = open_store(str(src))
    for i in range(4):
        r = make_result("aws/p3.2xlarge", "resnet50", samples_per_second=100.0 + i, hourly_usd=3.06, repeat=i)
        store.put_bytes(result_key(r), result_bytes(r))
    with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
        assert main(["collect", "--results", str(src), "--table", str(out)]) == exitcodes.OK
    assert sorted(p.name for p in out.glob("results.*"))  # results.parquet (and its .csv twin)
    return out


@pytest.fixture(scope="module")
def table_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("table")
    return _collected_table(root)


@pytest.fixture
def sealed(monkeypatch, tmp_path):
    """No network, no tools on PATH, no cloud settings, nothing trained."""
    for name in list(os.environ):
        if name.startswith(("AWS_", "GOOGLE_", "GPUBENCH_", "CLOUDSDK_", "PULUMI_")):
            monkeypatch.delenv(name)
    empty = tmp_path / "empty-path"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)
    # google-auth's own switch (it reads "true" once, at import): no metadata-server ping and its 6 s of backoff
    monkeypatch.setenv("NO_GCE_CHECK", "true")
    metadata = sys.modules.get("google.auth.compute_engine._metadata")
    if metadata is not None:  # loaded by an earlier test of this worker
        monkeypatch.setattr(metadata, "_NO_GCE_CHECK", True)
    # a shut bucket fails after two quick attempts, not five over 15 s of backoff (payload.storage)
    monkeypatch.setenv("GPUBENCH_STORAGE_RETRIES", "2")
    monkeypatch.setenv("GPUBENCH_STORAGE_BACKOFF", "0.01")
    monkeypatch.setattr(socket.socket, "connect", _no_network)
    monkeypatch.setattr(socket.socket, "connect_ex", _no_network)
    monkeypatch.setattr(socket, "create_connection", _no_network)
    monkeypatch.setattr(socket, "getaddrinfo", _no_network)
    import analysis.bench.record
    import analysis.demo
    import payload.cli

    monkeypatch.setattr(payload.cli, "run_suite", lambda cfg: exitcodes.OK)
    monkeypatch.setattr(analysis.demo, "run_demo", lambda **kw: exitcodes.OK)
    monkeypatch.setattr(analysis.bench.record, "FIRST_LOG_WAIT_SECONDS", 0.0)  # `logs --follow` of no run ends


def _tables(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.glob("results.*"))}


def run_in(workdir: Path, argv: list[str]) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    cwd = os.getcwd()
    os.chdir(workdir)
    try:
        with redirect_stdout(out), redirect_stderr(err):
            try:
                code = main(argv)
            except SystemExit as exc:  # argparse's own usage errors and --help
                code = exc.code if isinstance(exc.code, int) else exitcodes.USAGE
    finally:
        os.chdir(cwd)
    return code, err.getvalue()


def assert_trustworthy(argv: list[str], table_dir: Path) -> None:
    """Run `argv` in a fresh directory holding the collected table at the default ./table (and a garbage
    one under garbage/)."""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        shutil.copytree(table_dir, work / "table")
        (work / "garbage").mkdir()
        (work / "garbage" / "results.parquet").write_bytes(b"not a table\n")
        before = _tables(work / "table")
        code, err = run_in(work, argv)
        assert "Traceback" not in err, (argv, err[-2000:])
        assert code in exitcodes.TABLE, (argv, code, err[-2000:])
        assert "error: unexpected" not in err, (argv, err[-2000:])  # a bad argument is a known error, not a bug
        if code != exitcodes.OK:
            assert _tables(work / "table") == before, (argv, "the results table changed after a failure")


# Arguments found by hand to end in a traceback once: always tried, besides the drawn ones.
FOUND_BY_HAND = {
    ("cost",): [["cost", "aws-g4dn-1x", "--hours", "1e308"], ["cost", "aws-g4dn-1x", "--hours", "1e9"]],
    ("report",): [["report", "--table", "garbage"]],
    ("campaign", "up"): [["campaign", "up", "aws-zzz-*"], ["campaign", "up", "aws-zzz-*", "--results", "r"]],
    ("offers",): [["offers", "--gpu", "T44"], ["offers", "--region", "us-eats-1"], ["offers", "--provider", "awz"]],
    ("up",): [["up", "aws-g4dn-1xx", "--yes"]],
    ("teardown",): [["teardown", "aws-g4dn-1xx", "--yes"]],
    ("payload", "run"): [["payload", "run", "--offering", "local/this-machin", "--stack", "s", "--results", "r"]],
}
# Examples per command: most run in milliseconds; a few load much (campaign selection, price fetch, report).
EXAMPLES = 12
SLOW = {
    ("campaign", "up"): 3,
    ("campaign", "run"): 3,
    ("prices", "refresh"): 3,
    ("report",): 4,
    ("preview",): 5,
    ("payload", "flush"): 3,  # each example waits out a bucket's retries: about 2 s
}


@pytest.mark.parametrize("path, parser", COMMANDS, ids=[" ".join(p) for p, _ in COMMANDS])
def test_any_arguments_end_in_a_documented_exit_code(path, parser, table_dir, sealed):
    for argv in FOUND_BY_HAND.get(path, []):
        assert_trustworthy(argv, table_dir)

    @settings(
        max_examples=SLOW.get(path, EXAMPLES),
        deadline=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
        database=None,
    )
    @given(argv=argv_for(path, parser))
    def check(argv):
        assert_trustworthy(argv, table_dir)

    check()
