"""Campaigns: one command launches a benchmark suite on many stacks, follows it, and cleans up.

The campaign's state lives in the results bucket (`campaigns/<id>/manifest.json`), not on the machine
that started it, so a restarted laptop or a second machine picks it up with the campaign id alone.
The modules are listed in docs/architecture.md.
"""
