"""A workload's files are confined to the spec's directory, regular, bounded and free of credentials.

The same walk feeds the content hash and the bundle (payload.workloads.files), so each refusal
here also keeps the file out of `code/workload-<sha256>.tar.gz` and off SSH hosts."""

from __future__ import annotations

import io
import os
import tarfile
import threading
from pathlib import Path

import pytest
import yaml

from infra.bundle import build_workload_bundle
from payload.workloads import files as workdir_files
from payload.workloads.spec import WorkloadSpecError, load_spec


def make_spec(tmp_path: Path, files: dict[str, str] | None = None, **doc) -> Path:
    job = tmp_path / "job"
    job.mkdir(exist_ok=True)
    (job / "train.py").write_text("print('hi')\n")
    for rel, text in (files or {}).items():
        (job / rel).parent.mkdir(parents=True, exist_ok=True)
        (job / rel).write_text(text)
    spec = job / "workload.yaml"
    spec.write_text(yaml.safe_dump({"name": "job", "run": "python train.py", "workdir": ".", **doc}))
    return spec


def bundle_names(spec: Path) -> list[str]:
    with tarfile.open(fileobj=io.BytesIO(build_workload_bundle(spec).data)) as tar:
        return tar.getnames()


@pytest.mark.parametrize("workdir", ["~", "~/job", "/etc", "..", "../elsewhere", "sub/../../.."])
def test_a_workdir_outside_the_spec_directory_is_refused_with_the_fix(tmp_path, workdir):
    (tmp_path / "elsewhere").mkdir()
    spec = make_spec(tmp_path, workdir=workdir)
    with pytest.raises(WorkloadSpecError, match="relative to the spec file") as err:
        load_spec(spec)
    assert "'workdir'" in str(err.value) and repr(workdir) in str(err.value)


@pytest.mark.parametrize("secret_dir", [".ssh", ".aws", ".config/gcloud"])
def test_a_workdir_inside_a_credentials_directory_is_refused(tmp_path, secret_dir):
    job = tmp_path / secret_dir
    job.mkdir(parents=True)
    (job / "config").write_text("[default]\n")  # a name that alone looks harmless
    spec = job / "workload.yaml"
    spec.write_text(yaml.safe_dump({"name": "job", "run": "true", "workdir": "."}))
    with pytest.raises(WorkloadSpecError, match=f"inside {secret_dir.split('/')[-1]}/, a directory of credentials"):
        load_spec(spec)


def test_a_project_folder_merely_named_like_a_tool_is_fine(tmp_path):
    (tmp_path / "gcloud").mkdir()
    spec = make_spec(tmp_path / "gcloud")
    assert load_spec(spec).workdir == str(spec.parent)


def test_a_workdir_symlink_that_leaves_the_spec_directory_is_refused(tmp_path):
    (tmp_path / "outside").mkdir()
    spec = make_spec(tmp_path, workdir="link")
    (spec.parent / "link").symlink_to(tmp_path / "outside")
    with pytest.raises(WorkloadSpecError, match="outside the spec's directory"):
        load_spec(spec)


def test_a_home_directory_is_refused_even_as_the_spec_directory(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    spec = home / "workload.yaml"
    spec.write_text(yaml.safe_dump({"name": "job", "run": "true", "workdir": "."}))
    with pytest.raises(WorkloadSpecError, match="home or root directory"):
        load_spec(spec)


@pytest.mark.parametrize(
    "rel",
    [
        ".aws/credentials",
        ".ssh/id_ed25519",
        "keys/id_rsa.pub",
        ".gnupg/pubring.kbx",
        ".netrc",
        ".env",
        "tls/server.pem",
        "tls/server.key",
        "credentials.json",
        ".docker/config.json",
        "cfg/gcloud/application_default_credentials.json",
        "keys/ID_RSA",
        ".ENV",
    ],
)
def test_credential_files_are_refused_naming_the_file_and_the_allow_fix(tmp_path, rel):
    spec = make_spec(tmp_path, {rel: "secret"})
    with pytest.raises(WorkloadSpecError) as err:
        load_spec(spec)
    assert rel in str(err.value) and f"allow: [{rel}]" in str(err.value)
    with pytest.raises(WorkloadSpecError):
        build_workload_bundle(spec)


def test_a_service_account_json_is_refused_by_its_content(tmp_path):
    spec = make_spec(tmp_path, {"conf/sa.json": '{"type": "service_account", "private_key": "-----BEGIN"}'})
    with pytest.raises(WorkloadSpecError, match=r"conf/sa.json.*allow: \[conf/sa.json\]"):
        load_spec(spec)


def test_an_allowed_file_ships_and_counts_in_the_hash(tmp_path):
    spec = make_spec(tmp_path, {"certs/ca.pem": "public ca"}, allow=["certs/ca.pem"])
    loaded = load_spec(spec)
    assert "workdir/certs/ca.pem" in bundle_names(spec)
    (spec.parent / "certs" / "ca.pem").write_text("another ca")
    assert load_spec(spec).sha256 != loaded.sha256


def test_an_allow_entry_that_names_no_file_is_an_error(tmp_path):
    spec = make_spec(tmp_path, allow=["certs/missing.pem"])
    with pytest.raises(WorkloadSpecError, match="certs/missing.pem not found"):
        load_spec(spec)


def test_a_symlink_out_of_the_workdir_is_refused(tmp_path):
    (tmp_path / "secret.txt").write_text("s")
    spec = make_spec(tmp_path)
    (spec.parent / "data.txt").symlink_to(tmp_path / "secret.txt")
    with pytest.raises(WorkloadSpecError, match="data.txt: a symlink to .*outside the workdir"):
        load_spec(spec)


def test_a_harmless_name_linking_to_a_credential_is_refused(tmp_path):
    spec = make_spec(tmp_path, {"keys/id_rsa": "key"}, allow=["keys/id_rsa"])
    assert load_spec(spec)  # allowed by its own name
    (spec.parent / "notes.txt").symlink_to("keys/id_rsa")
    with pytest.raises(WorkloadSpecError, match=r"notes.txt: looks like a credential.*allow: \[notes.txt\]"):
        load_spec(spec)


def test_a_directory_symlink_out_of_the_workdir_is_refused(tmp_path):
    (tmp_path / "dataset").mkdir()
    spec = make_spec(tmp_path)
    (spec.parent / "data").symlink_to(tmp_path / "dataset")
    with pytest.raises(WorkloadSpecError, match="data: a symlink to"):
        load_spec(spec)


def test_a_symlink_inside_the_workdir_ships_as_the_target_file(tmp_path):
    spec = make_spec(tmp_path, {"lib/real.py": "X = 1\n"})
    (spec.parent / "alias.py").symlink_to("lib/real.py")
    with tarfile.open(fileobj=io.BytesIO(build_workload_bundle(spec).data)) as tar:
        member = tar.getmember("workdir/alias.py")
        assert member.isfile() and tar.extractfile(member).read() == b"X = 1\n"


def test_a_link_to_dev_zero_is_refused_without_reading_it(tmp_path):
    spec = make_spec(tmp_path)
    (spec.parent / "zeros").symlink_to("/dev/zero")
    with pytest.raises(WorkloadSpecError, match="zeros: a symlink to /dev/zero, outside"):
        load_spec(spec)


def test_a_fifo_is_refused_at_once(tmp_path):
    spec = make_spec(tmp_path)
    os.mkfifo(spec.parent / "pipe")
    with pytest.raises(WorkloadSpecError, match="pipe: a FIFO; only regular files"):
        load_spec(spec)


def test_a_fifo_swapped_in_after_the_check_does_not_hang(tmp_path, monkeypatch):
    os.mkfifo(tmp_path / "pipe")
    original, calls = workdir_files._require_regular, []

    def first_check_passes(mode, rel):  # as if the FIFO replaced a file just after lstat
        calls.append(mode)
        if len(calls) > 1:
            original(mode, rel)

    monkeypatch.setattr(workdir_files, "_require_regular", first_check_passes)
    with pytest.raises(workdir_files.WorkdirError, match="pipe: a FIFO"):
        workdir_files._open_regular(tmp_path / "pipe", tmp_path, "pipe")
    assert len(calls) == 2


def test_a_socket_is_refused(tmp_path):
    import socket

    spec = make_spec(tmp_path)
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(spec.parent / "s.sock"))
    try:
        with pytest.raises(WorkloadSpecError, match="s.sock: a socket"):
            load_spec(spec)
    finally:
        sock.close()


class CountingFile(io.RawIOBase):
    """An endless file that counts what was read from it."""

    def __init__(self):
        self.read_bytes = 0

    def readable(self):
        return True

    def readinto(self, b):
        n = len(b)
        b[:n] = b"\0" * n
        self.read_bytes += n
        return n


def test_the_size_limits_hold_while_reading(tmp_path, monkeypatch):
    monkeypatch.setattr(workdir_files, "MAX_FILE_BYTES", 1000)
    endless = CountingFile()
    monkeypatch.setattr(workdir_files.os, "fdopen", lambda fd, mode: (os.close(fd), io.BufferedReader(endless, 64))[1])
    (tmp_path / "big").write_text("x")
    fd = os.open(tmp_path / "big", os.O_RDONLY)
    with pytest.raises(workdir_files.WorkdirError, match="big: larger than"):
        workdir_files._read_limited(fd, "big", 10**9)
    assert endless.read_bytes <= 1000 + 64


def test_the_total_limit_names_the_file_that_crossed_it(tmp_path, monkeypatch):
    monkeypatch.setattr(workdir_files, "MAX_WORKDIR_BYTES", 100)
    spec = make_spec(tmp_path, {"a.bin": "a" * 60, "b.bin": "b" * 60})
    with pytest.raises(WorkloadSpecError, match=r"more than 0 MB in all \(reached at b.bin\)"):
        load_spec(spec)


def test_what_is_hashed_is_exactly_what_travels(tmp_path):
    spec = make_spec(tmp_path, {"lib/a.py": "A\n", "run.sh": "#!/bin/sh\n", "__pycache__/x.pyc": "c"})
    os.chmod(spec.parent / "run.sh", 0o755)
    loaded = load_spec(spec)
    with tarfile.open(fileobj=io.BytesIO(build_workload_bundle(spec).data)) as tar:
        shipped = [
            workdir_files.WorkdirFile(m.name.removeprefix("workdir/"), tar.extractfile(m).read(), bool(m.mode & 0o100))
            for m in tar.getmembers()
            if m.name.startswith("workdir/")
        ]
    assert workdir_files.files_digest(shipped) == loaded.workdir_sha256
    assert sorted(f.rel for f in shipped) == ["lib/a.py", "run.sh", "train.py", "workload.yaml"]


def test_a_workdir_under_a_spec_in_a_subdirectory_still_works(tmp_path):
    spec = make_spec(tmp_path, {"src/train.py": "print(1)\n"}, workdir="src")
    assert load_spec(spec).workdir == str(spec.parent / "src")


def test_loading_never_blocks_on_a_fifo_even_in_a_thread(tmp_path):
    spec = make_spec(tmp_path)
    os.mkfifo(spec.parent / "named")
    errors: list[Exception] = []
    t = threading.Thread(
        target=lambda: errors.append(pytest.raises(WorkloadSpecError, load_spec, spec).value), daemon=True
    )
    t.start()
    t.join(10)
    assert not t.is_alive() and "named" in str(errors[0])
