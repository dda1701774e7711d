"""docs/cli.md's exit-code table and payload/exitcodes.py say the same thing."""

from __future__ import annotations

import re
from pathlib import Path

from payload import exitcodes

CLI_DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def test_the_cli_doc_table_lists_exactly_the_codes_in_exitcodes():
    text = CLI_DOC.read_text()
    start = text.index("## Exit codes")
    section = text[start : text.index("\n## ", start + 1)]
    documented = {int(m) for m in re.findall(r"^\| (\d+) \|", section, re.M)}
    assert documented == set(exitcodes.TABLE)
