"""Opening the fabric connection, with errors that say what to fix.

Fabric accepts any host key and never reads known_hosts; we load the user's
known_hosts so a *changed* key is refused (`accept-new`), and `strict` also
refuses hosts that are not in it. An identity file means "use only this key"
(like `IdentitiesOnly yes`), so a refused key is reported as such instead of
silently falling back to whatever the agent holds.
"""

from __future__ import annotations

import os
import socket

from infra.ssh.config import SshStack


class SshError(RuntimeError):
    """Connecting, authenticating or running a remote command failed; the message says what to fix."""


def connect(cfg: SshStack, timeout: float = 15.0):
    """An open fabric Connection to the stack's host, or SshError."""
    import paramiko
    from fabric import Connection

    connect_kwargs: dict = {"banner_timeout": timeout, "auth_timeout": timeout}
    if cfg.identity_file:
        if not os.path.exists(cfg.identity_file):
            raise SshError(
                f"gpubench:identityFile: {cfg.identity_file} does not exist; point it at your private key (e.g. ~/.ssh/id_ed25519)"
            )
        connect_kwargs.update(key_filename=[cfg.identity_file], look_for_keys=False, allow_agent=False)
    conn = Connection(cfg.host, user=cfg.user, port=cfg.port, connect_timeout=timeout, connect_kwargs=connect_kwargs)
    known = os.path.expanduser("~/.ssh/known_hosts")
    if os.path.exists(known):
        try:
            conn.client.load_host_keys(known)
        except (OSError, paramiko.SSHException):
            pass  # an unreadable known_hosts only weakens the check; strict still refuses unknown hosts
    conn.client._host_keys_filename = None  # never write the user's known_hosts
    if cfg.host_key_check == "strict":
        conn.client.set_missing_host_key_policy(paramiko.RejectPolicy())
    try:
        conn.open()
    except paramiko.BadHostKeyException as exc:
        raise SshError(
            f"{cfg.target}: the host key changed ({exc}); if the box was reinstalled, remove its line from {known}"
        ) from None
    except paramiko.AuthenticationException as exc:
        key = cfg.identity_file or "your default keys / ssh-agent"
        raise SshError(
            f"{cfg.target}: SSH key refused ({exc}); add the public key of {key} to ~{cfg.user or ''}/.ssh/authorized_keys "
            "on the host, or fix gpubench:user / gpubench:identityFile"
        ) from None
    except paramiko.SSHException as exc:
        hint = (
            f"add it first with `ssh -p {cfg.port} {cfg.host}` or set gpubench:hostKeyCheck: accept-new"
            if "not found in known_hosts" in str(exc)
            else "is it an SSH server?"
        )
        raise SshError(f"{cfg.target}: SSH handshake failed: {exc}; {hint}") from None
    except socket.gaierror as exc:
        raise SshError(f"{cfg.target}: cannot resolve host {cfg.host!r} ({exc.strerror}); fix gpubench:host") from None
    except TimeoutError:
        raise SshError(
            f"{cfg.target}: connection timed out after {timeout:g}s; check gpubench:host/gpubench:port and any firewall"
        ) from None
    except OSError as exc:  # NoValidConnectionsError, refused, unreachable
        raise SshError(
            f"{cfg.target}: cannot connect ({exc}); check gpubench:host and gpubench:port, and that sshd runs there"
        ) from None
    return conn


def run(conn, command: str, *, check: bool = True, timeout: float | None = 120):
    """Run a command quietly; returns the invoke Result (SshError on failure when check)."""
    from invoke.exceptions import CommandTimedOut

    try:
        result = conn.run(command, hide=True, warn=True, in_stream=False, timeout=timeout)
    except CommandTimedOut:
        raise SshError(f"remote command timed out after {timeout}s: {command}") from None
    if check and result.exited != 0:
        detail = (result.stderr or result.stdout).strip().splitlines()[-3:]
        raise SshError(f"remote command failed (exit {result.exited}): {command}\n  " + "\n  ".join(detail))
    return result
