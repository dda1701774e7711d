"""README's exit-code table and payload/exitcodes.py say the same thing."""

from __future__ import annotations

import re
from pathlib import Path

from payload import exitcodes

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_table_lists_exactly_the_codes_in_exitcodes():
    text = README.read_text()
    section = text[text.index("## Exit codes") : text.index("## Troubleshooting")]
    documented = {int(m) for m in re.findall(r"^\| (\d+) \|", section, re.M)}
    assert documented == set(exitcodes.TABLE)
    for code in exitcodes.TABLE:  # and the module docstring's table too
        assert re.search(rf"^{code}\s+[A-Z]+\s", exitcodes.__doc__, re.M), code
