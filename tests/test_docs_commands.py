"""Every `gpubench ...` command written in README.md and docs/ parses as written, from a directory
outside the checkout: the subcommand exists, its flags are accepted, and its `--help` works.
Parsing only (nothing runs), so a documented example can never drift from the CLI unnoticed."""

from __future__ import annotations

import contextlib
import io
import re
import shlex
from pathlib import Path

import pytest

from analysis.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)\s*$")
SHELLS = {"", "sh", "bash", "shell", "console"}


def _shell_lines(text: str):
    """Lines of shell code blocks, continuations joined, comments dropped."""
    block, pending = None, ""
    for raw in text.splitlines():
        fence = FENCE.match(raw.strip())
        if fence:
            block = None if block is not None else fence.group(1)
            continue
        if block is None or block not in SHELLS:
            continue
        line = raw.strip()
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        yield pending + line
        pending = ""


def _words(line: str) -> list[str]:
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    return list(lexer)


def _commands(text: str) -> list[str]:
    """The arguments of each `gpubench` command in the shell blocks (pipes and && split commands)."""
    found = []
    for line in _shell_lines(text):
        line = re.sub(r"\$\([^)]*\)", "VALUE", line)  # command substitutions are values
        try:
            words = _words(line)
        except ValueError:  # not shell (a layout listing in a plain block), unless it names gpubench
            words = ["gpubench", f"<unquotable line: {line}>"] if "gpubench " in line else []
        command: list[str] = []
        for word in [*words, ";"]:
            if word in {">", ">>", "<", "2>"}:  # a redirection ends the arguments
                command.append("\0")
            elif word in {"&&", "||", ";", "|", "&"}:
                command = command[: command.index("\0")] if "\0" in command else command
                if command[:1] == ["gpubench"] and len(command) > 1:
                    found.append(shlex.join(command[1:]))
                command = []
            else:
                command.append(word)
    return found


DOCUMENTED = sorted({(page.relative_to(ROOT).as_posix(), cmd) for page in PAGES for cmd in _commands(page.read_text())})


def _parse(argv: list[str]) -> int:
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            build_parser("gpubench").parse_args(argv)
    except SystemExit as stop:
        return int(stop.code or 0), out.getvalue()
    return 0, out.getvalue()


def test_the_pages_document_commands():
    """The scan itself works: the README's first commands are found."""
    pages = {page for page, _ in DOCUMENTED}
    assert "README.md" in pages and len(DOCUMENTED) > 40


@pytest.mark.parametrize(("page", "command"), DOCUMENTED)
def test_documented_command_parses(page, command, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # from a directory outside the checkout
    code, output = _parse(shlex.split(command))
    assert code == 0, f"{page}: `gpubench {command}` does not parse:\n{output}"


@pytest.mark.parametrize("subcommand", sorted({shlex.split(c)[0] for _, c in DOCUMENTED if not c.startswith("-")}))
def test_documented_subcommand_help(subcommand, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            code = main([subcommand, "--help"], prog="gpubench")
        except SystemExit as stop:
            code = int(stop.code or 0)
    assert code == 0 and "usage:" in out.getvalue(), out.getvalue()


LINK = re.compile(r"\]\(([^)#:]+)(?:#[^)]*)?\)")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_relative_links_resolve(page):
    """A page moved between README and docs/ keeps working links."""
    broken = [t for t in LINK.findall(page.read_text()) if not (page.parent / t).exists()]
    assert not broken, f"{page.name}: links to missing files {broken}"
