"""What another user of an SSH host, or a host that changed, cannot do: against the loopback sshd.

The remote dir is private and checked, an uploaded bundle is reused only when its sha256 matches,
an unpacked tree only when it is exactly the archive's, and a host key is recorded on first use
so a changed key is refused on the next connection."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import sshd_server

from infra.bundle import build_bundle
from infra.config import ConfigError
from infra.ssh import remote
from infra.ssh.connection import SshError, connect, run
from infra.ssh.runtimes import _unpack
from infra.ssh.session import load_stack

REPO = Path(__file__).resolve().parents[2]
OTHER_UID = 65534  # nobody: "another user of the host"


@pytest.fixture
def session(ssh_stack):
    """(conn, sftp, cfg) of a stack on the loopback sshd."""
    cfg = load_stack(*ssh_stack())
    conn = connect(cfg)
    yield conn, conn.sftp(), cfg
    conn.close()


# --- the remote dir


@pytest.mark.parametrize("value", ["/tmp", "/", "/etc", "/var/tmp", "/usr/local/gpubench", "/proc/1", "/srv/../etc"])
def test_a_shared_or_system_remote_dir_is_refused_before_connecting(ssh_stack, value):
    with pytest.raises(ConfigError, match=r"remoteDir.*gpubench.*default") as err:
        load_stack(*ssh_stack(remoteDir=value))
    assert repr(value) in str(err.value)


def test_the_remote_dir_is_created_private(session, tmp_path):
    conn, sftp, _ = session
    root = remote.secure_root(conn, sftp, str(tmp_path / "fresh" / "gpubench"))
    assert root == str(tmp_path / "fresh" / "gpubench")
    assert Path(root).stat().st_mode & 0o777 == 0o700


def test_a_remote_dir_owned_by_another_user_is_refused(session, tmp_path):
    conn, sftp, _ = session
    planted = tmp_path / "planted"
    planted.mkdir(mode=0o755)
    os.chown(planted, OTHER_UID, OTHER_UID)
    with pytest.raises(SshError, match=rf"{planted} on the host belongs to user id {OTHER_UID}.*remoteDir"):
        remote.secure_root(conn, sftp, str(planted))


def test_a_group_or_world_writable_remote_dir_is_refused(session, tmp_path):
    conn, sftp, _ = session
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(SshError, match=rf"{shared} is writable by other users \(mode 777\).*chmod go-w"):
        remote.secure_root(conn, sftp, str(shared))


def test_a_directory_above_it_that_another_user_controls_is_refused(session, tmp_path):
    conn, sftp, _ = session
    parent = tmp_path / "theirs"
    parent.mkdir()
    (parent / "gpubench").mkdir()
    os.chown(parent, OTHER_UID, OTHER_UID)
    with pytest.raises(SshError, match=rf"{parent} \(above gpubench:remoteDir .*belongs to user id {OTHER_UID}"):
        remote.secure_root(conn, sftp, str(parent / "gpubench"))


def test_a_symlinked_remote_dir_is_checked_where_it_points(session, tmp_path):
    conn, sftp, _ = session
    target = tmp_path / "elsewhere"
    target.mkdir()
    os.chown(target, OTHER_UID, OTHER_UID)
    (tmp_path / "link").symlink_to(target)
    with pytest.raises(SshError, match=rf"{target} on the host belongs to user id {OTHER_UID}"):
        remote.secure_root(conn, sftp, str(tmp_path / "link"))
    (tmp_path / "to-tmp").symlink_to("/tmp")
    with pytest.raises(SshError, match="resolves to /tmp: '/tmp' is a shared directory"):
        remote.secure_root(conn, sftp, str(tmp_path / "to-tmp"))


def test_a_run_into_a_world_writable_remote_dir_stops_before_anything_is_uploaded(ssh_stack, tmp_path):
    from infra.ssh.session import run_named_stack

    shared = tmp_path / "remote"
    shared.mkdir()
    shared.chmod(0o777)
    name, stacks_dir = ssh_stack()
    status, report = run_named_stack(name, stacks_dir=stacks_dir, progress=sys.stderr)
    assert status == "host" and "writable by other users" in report["message"]
    assert not (shared / "src").exists() and not (shared / "runs").exists()


# --- bundles and unpacked trees


def test_an_altered_bundle_is_uploaded_again_and_an_intact_one_reused(session, tmp_path):
    conn, sftp, _ = session
    data = build_bundle().data
    path = tmp_path / "src.tar.gz"
    assert remote.put_verified(conn, sftp, data, str(path)) is True
    assert remote.put_verified(conn, sftp, data, str(path)) is False
    path.write_bytes(b"planted by someone else")
    assert remote.put_verified(conn, sftp, data, str(path)) is True
    assert hashlib.sha256(path.read_bytes()).hexdigest() == hashlib.sha256(data).hexdigest()


def test_the_sha256_is_read_over_sftp_when_the_host_has_no_hash_tool(session, tmp_path, monkeypatch):
    conn, sftp, _ = session
    path = tmp_path / "f"
    path.write_bytes(b"abc" * 1000)
    real_run = remote.run
    monkeypatch.setattr(
        remote,
        "run",
        lambda c, cmd, **kw: real_run(c, cmd.replace("sha256sum", "nosuchtool").replace("shasum", "nosuchtool"), **kw),
    )
    assert remote.remote_sha256(conn, sftp, str(path)) == hashlib.sha256(path.read_bytes()).hexdigest()
    assert remote.remote_sha256(conn, sftp, str(tmp_path / "missing")) is None


def _unpacked(conn, sftp, tmp_path: Path) -> tuple[Path, bytes]:
    bundle = build_bundle()
    src = tmp_path / "src" / bundle.digest
    src.parent.mkdir(parents=True, exist_ok=True)
    remote.put_verified(conn, sftp, bundle.data, f"{src}.tar.gz")
    run(conn, _unpack(str(src)))
    return src, (src / "gpubench" / "payload" / "__init__.py").read_bytes()


def test_an_intact_unpacked_tree_is_reused(session, tmp_path):
    conn, sftp, _ = session
    src, _ = _unpacked(conn, sftp, tmp_path)
    inode = (src / "gpubench" / "payload" / "__init__.py").stat().st_ino
    run(conn, _unpack(str(src)))
    assert (src / "gpubench" / "payload" / "__init__.py").stat().st_ino == inode


@pytest.mark.parametrize(
    "plant",
    [
        lambda src: (src / "gpubench" / "sitecustomize.py").write_text("import os; os.system('evil')\n"),
        lambda src: (src / "gpubench" / "payload" / "__init__.py").write_text("import os; os.system('evil')\n"),
        lambda src: (src / "gpubench" / "payload" / "__init__.py").unlink(),
    ],
    ids=["added-file", "altered-file", "removed-file"],
)
def test_a_tampered_unpacked_tree_is_unpacked_again_from_the_checked_archive(session, tmp_path, plant):
    conn, sftp, _ = session
    src, original = _unpacked(conn, sftp, tmp_path)
    plant(src)
    run(conn, _unpack(str(src)))
    assert not (src / "gpubench" / "sitecustomize.py").exists()
    assert (src / "gpubench" / "payload" / "__init__.py").read_bytes() == original


# --- host keys


def test_accept_new_records_the_key_and_a_changed_key_is_refused(
    ssh_stack, sshd, own_known_hosts, tmp_path, monkeypatch
):
    first = sshd_server.start_sshd(tmp_path / "first")
    name = f"[127.0.0.1]:{first.port}"
    cfg = load_stack(*ssh_stack(port=first.port, identityFile=first.client_key))
    try:
        connect(cfg).close()
        recorded = own_known_hosts.read_text()
        assert recorded.startswith(f"{name} ssh-ed25519 ") and oct(own_known_hosts.stat().st_mode)[-3:] == "600"
        public = (first.dir / "host_key.pub").read_text().split()[1]
        assert public in recorded
        connect(cfg).close()  # the same key again: accepted, recorded once
        assert own_known_hosts.read_text() == recorded
    finally:
        first.stop()
    monkeypatch.setattr(sshd_server, "free_port", lambda: first.port)
    second = sshd_server.start_sshd(tmp_path / "second")  # the same address, a new host key
    cfg = cfg.with_overrides(identity_file=second.client_key)
    try:
        with pytest.raises(SshError) as err:
            connect(cfg)
        message = str(err.value)
        assert "host key changed" in message and name in message
        assert f"ssh-keygen -R '{name}' -f {own_known_hosts}" in message
        subprocess.run(["ssh-keygen", "-R", name, "-f", str(own_known_hosts)], check=True, capture_output=True)
        connect(cfg).close()  # after removing the old key, the new one is recorded
        assert (second.dir / "host_key.pub").read_text().split()[1] in own_known_hosts.read_text()
    finally:
        second.stop()


def test_strict_refuses_an_unknown_host_and_accepts_a_recorded_one(ssh_stack, sshd, own_known_hosts):
    name, stacks_dir = ssh_stack(hostKeyCheck="strict")
    cfg = load_stack(name, stacks_dir)
    with pytest.raises(SshError, match="not found in known_hosts"):
        connect(cfg)
    assert not own_known_hosts.exists()
    connect(cfg.with_overrides(host_key_check="accept-new")).close()
    connect(cfg).close()


def test_a_changed_key_is_an_exit_code_and_a_message_not_a_traceback(ssh_stack, sshd, own_known_hosts):
    key_type, key = Path(sshd.other_key + ".pub").read_text().split()[:2]  # not the server's host key
    name = f"[127.0.0.1]:{sshd.port}"
    own_known_hosts.write_text(f"{name} {key_type} {key}\n")
    stack, stacks_dir = ssh_stack()
    out = subprocess.run(
        [sys.executable, "-m", "infra", "ssh", stack, "--stacks-dir", str(stacks_dir), "--json"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    report = json.loads(out.stdout)
    assert out.returncode == 3 and "Traceback" not in out.stderr
    assert "host key changed" in report["message"] and f"ssh-keygen -R '{name}'" in report["message"]
