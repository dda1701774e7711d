"""`ssh`: run the payload on a dedicated or on-prem box over SSH (infra/ssh/, docs/ssh.md)."""

from __future__ import annotations

from infra.ssh.cli import register  # noqa: F401  (`python -m infra ssh` registers the same parser)
