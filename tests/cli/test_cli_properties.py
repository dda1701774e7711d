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
import tempfile
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
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
    "/no/such/dir/x",
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


def _leaves(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """(command words, parser) for every runnable subcommand."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield path, parser
        return
    for name, child in subs[0].choices.items():
        yield from _leaves(child, (*path, name))


def _commands():
    from payload.cli import build_parser as payload_parser

    found = [(p, parser) for p, parser in _leaves(build_parser("gpubench")) if p != ("payload",)]
    found += [(("payload", *p), parser) for p, parser in _leaves(payload_parser()) if p]
    return found


COMMANDS = _commands()


def _value_for(action: argparse.Action):
    if action.choices:
        return st.one_of(st.sampled_from(sorted(map(str, action.choices))), VALUES)
    return VALUES


def _option_args(action: argparse.Action):
    """Strategy for one option's words: the flag, then as many values as it takes."""
    flag = st.sampled_from(action.option_strings)
    if action.nargs == 0:
        return flag.map(lambda f: [f])
    count = {None: 1, "?": st.integers(0, 1), "*": st.integers(0, 2), "+": st.integers(1, 2)}.get(action.nargs, 1)
    counts = count if isinstance(count, st.SearchStrategy) else st.just(count)
    return st.tuples(flag, counts.flatmap(lambda n: st.lists(_value_for(action), min_size=n, max_size=n))).map(
        lambda t: [t[0], *t[1]]
    )


def argv_for(path: tuple[str, ...], parser: argparse.ArgumentParser):
    options = [a for a in parser._actions if a.option_strings and not isinstance(a, argparse._HelpAction)]
    positionals = [a for a in parser._actions if not a.option_strings]
    chosen = st.lists(st.sampled_from(options), max_size=4) if options else st.just([])
    opt_words = chosen.flatmap(lambda acts: st.tuples(*[_option_args(a) for a in acts]) if acts else st.just(()))
    pos_words = st.lists(VALUES, max_size=2 if positionals else 0)
    return st.tuples(opt_words, pos_words).map(lambda t: [*path, *t[1], *[w for ws in t[0] for w in ws]])


def _no_network(*args, **kwargs):
    raise ConnectionRefusedError("the network is shut in this test")


def _collected_table(root: Path) -> Path:
    """A small table written by `gpubench collect` itself, from synthetic results."""
    from payload.storage import open_store

    src, out = root / "bucket", root / "report"
    store = open_store(str(src))
    for i in range(4):
        r = make_result("aws/p3.2xlarge", "resnet50", samples_per_second=100.0 + i, hourly_usd=3.06, repeat=i)
        store.put_bytes(result_key(r), result_bytes(r))
    with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
        assert main(["collect", "--results", str(src), "--out", str(out)]) == exitcodes.OK
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
    monkeypatch.setenv("NO_GCE_CHECK", "True")
    monkeypatch.setattr(socket.socket, "connect", _no_network)
    monkeypatch.setattr(socket.socket, "connect_ex", _no_network)
    monkeypatch.setattr(socket, "create_connection", _no_network)
    monkeypatch.setattr(socket, "getaddrinfo", _no_network)
    import analysis.demo
    import payload.runner

    monkeypatch.setattr(payload.runner, "run", lambda cfg: exitcodes.OK)
    monkeypatch.setattr(analysis.demo, "run_demo", lambda **kw: exitcodes.OK)


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


@pytest.mark.parametrize("path, parser", COMMANDS, ids=[" ".join(p) for p, _ in COMMANDS])
def test_any_arguments_end_in_a_documented_exit_code(path, parser, table_dir, sealed):
    @settings(max_examples=6, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck), database=None)
    @given(argv=argv_for(path, parser))
    def check(argv):
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            shutil.copytree(table_dir, work / "report")
            before = _tables(work / "report")
            code, err = run_in(work, argv)
            assert "Traceback" not in err, (argv, err[-2000:])
            assert code in exitcodes.TABLE, (argv, code, err[-2000:])
            if code != exitcodes.OK:
                assert _tables(work / "report") == before, (argv, "the results table changed after a failure")

    check()
