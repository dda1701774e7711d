"""`ssh`: run the payload on a dedicated or on-prem box over SSH (infra/ssh/, docs/ssh.md)."""

from __future__ import annotations


def register(sub) -> None:
    from infra.ssh.cli import register as register_ssh

    register_ssh(sub)
