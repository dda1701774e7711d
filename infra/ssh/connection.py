"""Opening the fabric connection, with errors that say what to fix. A host key recorded in `~/.ssh/known_hosts`
(read only) or gpubench's own file must match; `accept-new` records an unknown host's key on first use (as
OpenSSH's `StrictHostKeyChecking accept-new`), `strict` refuses it. An identity file is the only key tried.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

from infra.ssh.config import SshStack
from payload.userdirs import user_path

KNOWN_HOSTS_ENV = "GPUBENCH_KNOWN_HOSTS"  # overrides where gpubench records host keys
USER_KNOWN_HOSTS = "~/.ssh/known_hosts"


class SshError(RuntimeError):
    """Connecting, authenticating or running a remote command failed; the message says what to fix."""


def project_known_hosts() -> Path:
    """gpubench's own known_hosts: $GPUBENCH_KNOWN_HOSTS, else $XDG_CONFIG_HOME (~/.config)/gpubench/known_hosts."""
    return user_path(KNOWN_HOSTS_ENV, "config", "known_hosts")


def _load_known_hosts(client, cfg: SshStack) -> Path:
    """Load both known_hosts files; an unknown host is refused or its key appended to ours (0600)."""
    import paramiko  # heavy: the infra extra; `gpubench` lists the ssh command without it

    class RecordOnFirstUse(paramiko.MissingHostKeyPolicy):
        def missing_host_key(self, client, hostname, key):
            mine.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(mine, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            with os.fdopen(fd, "a") as f:
                f.write(f"{hostname} {key.get_name()} {key.get_base64()}\n")
            client.get_host_keys().add(hostname, key.get_name(), key)

    mine = project_known_hosts()
    for path, load in ((os.path.expanduser(USER_KNOWN_HOSTS), client.load_system_host_keys), (mine, None)):
        if not os.path.exists(path):
            continue
        try:
            load(path) if load else client.get_host_keys().load(str(path))
        except (OSError, paramiko.SSHException) as exc:
            raise SshError(f"cannot read the known_hosts file {path} ({exc}); fix or remove it") from None
    client._host_keys_filename = None  # paramiko never rewrites a file; new keys are appended by the policy
    strict = cfg.host_key_check == "strict"
    client.set_missing_host_key_policy(paramiko.RejectPolicy() if strict else RecordOnFirstUse())
    return mine


def _changed_key(cfg: SshStack, conn, exc, mine: Path) -> SshError:
    # The name paramiko looked up: the real host and port after ~/.ssh/config aliases.
    name = conn.host if int(conn.port) == 22 else f"[{conn.host}]:{conn.port}"
    user = os.path.expanduser(USER_KNOWN_HOSTS)
    holder = mine if name in _hosts_in(mine) else user
    fingerprint = exc.key.fingerprint if hasattr(exc.key, "fingerprint") else exc.key.get_name()
    return SshError(
        f"{cfg.target}: the host key changed: {name} now offers {fingerprint}, not the key recorded in {holder}. "
        "Someone may be intercepting the connection; if the box was reinstalled, remove the old key with "
        f"`ssh-keygen -R '{name}' -f {holder}` and connect again"
    )


def _hosts_in(path: Path) -> set[str]:
    try:
        return {w for line in path.read_text().splitlines() for w in line.split(" ", 1)[0].split(",")}
    except OSError:
        return set()


def connect(cfg: SshStack, timeout: float = 15.0):
    """An open fabric Connection to the stack's host, or SshError."""
    import paramiko  # heavy: the infra extra, as above
    from fabric import Connection  # heavy: the infra extra

    connect_kwargs: dict = {"banner_timeout": timeout, "auth_timeout": timeout}
    if cfg.identity_file:
        if not os.path.exists(cfg.identity_file):
            fix = "point it at your private key (e.g. ~/.ssh/id_ed25519)"
            raise SshError(f"gpubench:identityFile: {cfg.identity_file} does not exist; {fix}")
        connect_kwargs.update(key_filename=[cfg.identity_file], look_for_keys=False, allow_agent=False)
    conn = Connection(cfg.host, user=cfg.user, port=cfg.port, connect_timeout=timeout, connect_kwargs=connect_kwargs)
    mine = _load_known_hosts(conn.client, cfg)
    try:
        conn.open()
    except paramiko.BadHostKeyException as exc:
        raise _changed_key(cfg, conn, exc, mine) from None
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
    from invoke.exceptions import CommandTimedOut  # fabric's: loaded with it by connect()

    try:
        result = conn.run(command, hide=True, warn=True, in_stream=False, timeout=timeout)
    except CommandTimedOut:
        raise SshError(f"remote command timed out after {timeout}s: {command}") from None
    if check and result.exited != 0:
        detail = (result.stderr or result.stdout).strip().splitlines()[-3:]
        raise SshError(f"remote command failed (exit {result.exited}): {command}\n  " + "\n  ".join(detail))
    return result
