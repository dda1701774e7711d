"""A real OpenSSH server on loopback (helpers; the pytest fixtures are in conftest.py).

``start_sshd(dir, path_prefix=None)`` runs Debian's ``/usr/sbin/sshd`` as the
current user with a throwaway host key and client key made by ``ssh-keygen``,
key-only auth and ``internal-sftp``; ``path_prefix`` is put in front of PATH in
its sessions (stand-in tools). ``require_tool`` skips when sshd is missing, but
fails under ``CI=true``.
"""

from __future__ import annotations

import getpass
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from servers import free_port, missing_tool, wait_for_port

SSHD = "/usr/sbin/sshd"


def require_tool(path: str | None, what: str) -> str:
    if path and os.path.exists(path):
        return path
    missing_tool(f"{what} is not installed (apt-get install openssh-server openssh-client)")


@dataclass
class SshServer:
    host: str
    port: int
    user: str
    client_key: str  # private key in authorized_keys
    other_key: str  # a valid key the server does not accept
    dir: Path
    proc: subprocess.Popen

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def _keygen(keygen: str, path: Path) -> None:
    subprocess.run([keygen, "-q", "-t", "ed25519", "-N", "", "-C", "gpubench-test", "-f", str(path)], check=True)


def start_sshd(base: Path, path_prefix: str | None = None) -> SshServer:
    """sshd on a free loopback port; `path_prefix` goes in front of PATH in its sessions (fake tools)."""
    sshd = require_tool(SSHD if os.path.exists(SSHD) else shutil.which("sshd"), "sshd")
    keygen = require_tool(shutil.which("ssh-keygen"), "ssh-keygen")
    base.mkdir(parents=True, exist_ok=True)
    for name in ("host_key", "client_key", "other_key"):
        _keygen(keygen, base / name)
    (base / "authorized_keys").write_text((base / "client_key.pub").read_text())
    os.chmod(base / "client_key", 0o600)
    os.chmod(base / "other_key", 0o600)
    if os.geteuid() == 0:  # sshd as root insists on its privilege separation directory
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    port = free_port()
    config = base / "sshd_config"
    config.write_text(
        "\n".join(
            [
                "ListenAddress 127.0.0.1",
                f"HostKey {base / 'host_key'}",
                f"PidFile {base / 'sshd.pid'}",
                f"AuthorizedKeysFile {base / 'authorized_keys'}",
                "StrictModes no",
                "UsePAM no",
                "PermitRootLogin prohibit-password",
                "PubkeyAuthentication yes",
                "PasswordAuthentication no",
                "KbdInteractiveAuthentication no",
                "Subsystem sftp internal-sftp",
                "MaxSessions 50",
                "MaxStartups 50:30:100",
                "LogLevel ERROR",
                *([f"SetEnv PATH={path_prefix}:/usr/local/bin:/usr/bin:/bin"] if path_prefix else []),
                "",
            ]
        )
    )
    log = open(base / "sshd.log", "wb")
    proc = subprocess.Popen(
        [sshd, "-D", "-e", "-f", str(config), "-p", str(port)], stdout=log, stderr=subprocess.STDOUT
    )
    try:
        wait_for_port(port, 20, proc)
    except Exception:
        proc.kill()
        raise RuntimeError(f"sshd did not start: {(base / 'sshd.log').read_text()}") from None
    return SshServer(
        "127.0.0.1", port, getpass.getuser(), str(base / "client_key"), str(base / "other_key"), base, proc
    )
