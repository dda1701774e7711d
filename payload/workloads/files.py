"""The files a workload ships: one walk for the content hash and the bundle, so what is hashed is what travels.

Regular files inside the spec's directory only: homes, credentials (unless under ``allow``), devices, links
leaving the workdir and oversized files are refused, each naming the fix; limits hold while reading."""

from __future__ import annotations

import contextlib
import fnmatch
import hashlib
import os
import pwd
import stat
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

# Never part of the shipped workdir nor of its digest: caches and VCS metadata.
SKIP_DIRS = {"__pycache__", ".git", ".hg", ".svn", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".venv"}
SKIP_SUFFIXES = (".pyc", ".pyo")
MAX_WORKDIR_BYTES = 200 * 1024**2  # shipped with every run: large data belongs in a bucket
MAX_FILE_BYTES = 100 * 1024**2
# Directories whose files are credentials (any path component), and file name patterns.
SECRET_DIRS = {".aws", ".ssh", ".gnupg", "gcloud", ".azure", ".kube", ".password-store"}
SECRET_NAMES = tuple(
    ".netrc .env .env.* .pgpass .git-credentials .npmrc .pypirc *.pem *.key *.p12 *.pfx id_rsa* id_dsa* id_ecdsa* "
    "id_ed25519* credentials* .docker/config.json".split()
)
# A JSON file holding one of these is a service-account or similar key file.
SECRET_JSON_MARKERS = (b'"private_key"', b'"client_secret"', b'"refresh_token"')
KINDS = {
    stat.S_ISCHR: "a character device",
    stat.S_ISBLK: "a block device",
    stat.S_ISFIFO: "a FIFO",
    stat.S_ISSOCK: "a socket",
    stat.S_ISDIR: "a directory",
}


class WorkdirError(ValueError):
    """A workdir that cannot be shipped as is; the message names the file and the fix."""


@dataclass(frozen=True)
class WorkdirFile:
    """One shipped file: its path relative to the workdir, its bytes and its executable bit."""

    rel: str
    data: bytes
    executable: bool


def _home_dirs() -> set[Path]:
    """Every user's home (a container's arbitrary uid may have none: then only the passwd ones)."""
    homes = set()
    home = os.path.expanduser("~")
    if home.startswith("/"):
        homes.add(Path(home).resolve())
    with contextlib.suppress(OSError):  # no passwd database: the current user's home is still refused
        homes |= {Path(p.pw_dir).resolve() for p in pwd.getpwall() if p.pw_dir.startswith("/") and p.pw_dir != "/"}
    return homes


def confine_workdir(value: str, spec_dir: Path) -> Path:
    """The workdir `value` as an absolute path that lies inside `spec_dir`, or WorkdirError with the fix."""
    fix = "give a directory relative to the spec file, such as `workdir: .` or `workdir: src`, and keep the spec beside the job's files"
    if value.startswith("~"):
        raise WorkdirError(f"{value!r}: a home-directory path is not allowed; {fix}")
    if os.path.isabs(value):
        raise WorkdirError(f"{value!r}: an absolute path is not allowed; {fix}")
    base = spec_dir.resolve()
    path = (base / value).resolve()
    if path != base and base not in path.parents:
        raise WorkdirError(f"{value!r} resolves to {path}, outside the spec's directory {base}; {fix}")
    # Hidden credential directories only: a project folder named `gcloud` is fine, `~/.config/gcloud` is not.
    parts = [p.lower() for p in path.parts]
    hidden = [p for p in parts if p in SECRET_DIRS and p.startswith(".")]
    secret = hidden[0] if hidden else ("gcloud" if "/.config/gcloud" in "/".join(parts) else None)
    if secret:
        raise WorkdirError(
            f"{value!r} is {path}, inside {secret}/, a directory of credentials; "
            "put the job's files and the spec in a directory of their own"
        )
    if path in _home_dirs() or path == Path(path.anchor):
        raise WorkdirError(
            f"{value!r} is {path}, a home or root directory: it would ship every file in it (keys, cloud credentials); "
            "put the job's files in their own directory with the spec"
        )
    return path


def _secret_pattern(rel: str) -> str | None:
    parts = rel.lower().split("/")  # case-insensitive: ID_RSA or .ENV on a case-insensitive disk is the same file
    hit = next((d for d in parts[:-1] if d in SECRET_DIRS), None)
    if hit:
        return f"{hit}/"
    tail2 = "/".join(parts[-2:])
    return next((p for p in SECRET_NAMES if fnmatch.fnmatchcase(parts[-1], p) or fnmatch.fnmatchcase(tail2, p)), None)


def _refuse_secret(rel: str, why: str) -> WorkdirError:
    return WorkdirError(
        f"workdir file {rel}: looks like a credential ({why}); it would be uploaded with every run. "
        f"Move it out of the workdir, or if the job needs it, list it in the spec: `allow: [{rel}]`"
    )


def _open_regular(path: Path, root: Path, rel: str) -> int:
    """An fd of `path` when it is (or links, inside `root`, to) a regular file; WorkdirError otherwise."""
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode):
        target = path.resolve()
        if root not in target.parents:
            raise WorkdirError(
                f"workdir file {rel}: a symlink to {target}, outside the workdir {root}; "
                "copy the file into the workdir or remove the link"
            )
        path, info = target, os.stat(target)
    _require_regular(info.st_mode, rel)
    # O_NONBLOCK: a FIFO swapped in after the check opens without waiting; fstat then refuses it.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    try:
        _require_regular(os.fstat(fd).st_mode, rel)
    except WorkdirError:
        os.close(fd)
        raise
    return fd


def _require_regular(mode: int, rel: str) -> None:
    if not stat.S_ISREG(mode):
        kind = next((name for test, name in KINDS.items() if test(mode)), "not a regular file")
        raise WorkdirError(f"workdir file {rel}: {kind}; only regular files are shipped: remove it from the workdir")


def _read_limited(fd: int, rel: str, budget: int) -> bytes:
    """The file's bytes, never reading more than `budget` + 1 bytes."""
    limit = min(MAX_FILE_BYTES, budget)
    with os.fdopen(fd, "rb") as f:
        data = f.read(limit + 1)  # reads until then or the end, whatever the size the file claims
    if len(data) <= limit:
        return data
    if limit < MAX_FILE_BYTES:
        raise WorkdirError(
            f"workdir: more than {MAX_WORKDIR_BYTES // 1024**2} MB in all (reached at {rel}); it is shipped "
            "with every run, so keep datasets in a bucket and download them in `setup`"
        )
    raise WorkdirError(
        f"workdir file {rel}: larger than {MAX_FILE_BYTES // 1024**2} MB; keep data in a bucket and download it in `setup`"
    )


def _candidates(root: Path) -> list[tuple[str, Path]]:
    """(relative path, path) of every non-directory entry, sorted; caches and VCS metadata left out.
    Directory symlinks are entries too (refused when read), never walked into."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        links = [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and d not in links)
        for name in [*filenames, *links]:
            if not name.endswith(SKIP_SUFFIXES):
                p = Path(dirpath) / name
                out.append((p.relative_to(root).as_posix(), p))
    return sorted(out)


def read_workdir(root: Path, allow: Collection[str] = ()) -> list[WorkdirFile]:
    """Every shipped file of the workdir `root`, sorted by path, read within the limits.

    `allow` lists relative paths that look like credentials but are shipped on purpose."""
    root = Path(root).resolve()
    allowed = {a.strip("/") for a in allow}
    out: list[WorkdirFile] = []
    total = 0
    for rel, path in _candidates(root):
        target = path.resolve() if path.is_symlink() else None  # `notes -> .aws/credentials` is a secret too
        linked = target.relative_to(root).as_posix() if target and root in target.parents else rel
        secret = _secret_pattern(rel) or _secret_pattern(linked)
        if secret and rel not in allowed:
            raise _refuse_secret(rel, f"matches {secret}")
        try:
            fd = _open_regular(path, root, rel)
            executable = os.access(path, os.X_OK)
            data = _read_limited(fd, rel, MAX_WORKDIR_BYTES - total)
        except OSError as exc:
            raise WorkdirError(
                f"workdir file {rel}: cannot read it ({exc.strerror}); fix its permissions or remove it"
            ) from None
        total += len(data)
        if rel.endswith(".json") and rel not in allowed and any(m in data for m in SECRET_JSON_MARKERS):
            raise _refuse_secret(rel, "a JSON key file: it holds a private key or secret")
        out.append(WorkdirFile(rel, data, executable))
    unused = sorted(allowed - {f.rel for f in out})
    if unused:
        raise WorkdirError(f"allow: {', '.join(unused)} not found in the workdir {root}; list paths relative to it")
    return out


def files_digest(files: list[WorkdirFile]) -> str:
    """sha256 over (relative path, executable bit, size, content) of every shipped file."""
    h = hashlib.sha256()
    for f in files:
        h.update(f"{f.rel}\0{'x' if f.executable else '-'}\0{len(f.data)}\0".encode())
        h.update(f.data)
    return h.hexdigest()
