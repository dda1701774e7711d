"""The gpubench source a host runs (SSH copies it; cloud stacks upload it as `code/<sha256>.tar.gz`):
a deterministic tar.gz of `payload/`, the catalog and the packaging files, so `pip install <dir>[payload]`
works there and the content hash names the copy (installed once). A checkout and a packaged install
(packaging files from infra/project/) give the same bytes.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import io
import tarfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import yaml

from infra.projectfiles import project_root
from payload.workloads.files import files_digest, read_workdir
from payload.workloads.spec import WorkloadSpecError, load_spec
from payload.yamlfile import read_yaml

REPO = Path(__file__).resolve().parents[1]  # where the packages are: a checkout's root, or site-packages
INCLUDE = ("pyproject.toml", "README.md", "payload", "infra/__init__.py", "infra/catalog", "infra/install-payload.sh")
PACKAGING = ("pyproject.toml", "README.md")  # from the project's files (infra.projectfiles), not beside the code
SKIP_PARTS = {"__pycache__", ".pytest_cache"}
SKIP_SUFFIXES = (".pyc", ".pyo")


@dataclass(frozen=True)
class Bundle:
    data: bytes
    digest: str  # first 16 hex digits of sha256 of the uncompressed tar (SSH: names the copy and venv)
    files: int

    @property
    def sha256(self) -> str:
        """sha256 of the .tar.gz bytes: what `sha256sum` on the host checks."""
        return hashlib.sha256(self.data).hexdigest()

    def write_to(self, folder: Path, prefix: str = "") -> Path:
        """Write the archive as <folder>/<prefix><sha256>.tar.gz (idempotent) for a Pulumi FileAsset."""
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{prefix}{self.sha256}.tar.gz"
        if not path.exists() or path.read_bytes() != self.data:
            tmp = path.with_suffix(".tmp")
            tmp.write_bytes(self.data)
            tmp.replace(path)
        return path


def bundle_sources(root: Path | None = None) -> dict[str, Path]:
    """Each INCLUDE name -> where it is read: under `root`, else the code beside the installed packages and
    the packaging files from the project's files (site-packages has no pyproject.toml)."""
    if root is not None:
        return {name: Path(root) / name for name in INCLUDE}
    packaging = project_root()
    return {name: (packaging if name in PACKAGING else REPO) / name for name in INCLUDE}


def _paths(sources: dict[str, Path]) -> list[tuple[str, Path]]:
    """(name in the bundle, file) pairs, ordered by name as path parts (the same order for any root)."""
    out: list[tuple[str, Path]] = []
    for name, p in sources.items():
        if p.is_file():
            out.append((name, p))
        elif p.is_dir():
            out.extend((f"{name}/{q.relative_to(p).as_posix()}", q) for q in p.rglob("*") if q.is_file())
    kept = (pair for pair in out if not SKIP_PARTS & set(pair[0].split("/")) and not pair[0].endswith(SKIP_SUFFIXES))
    return sorted(kept, key=lambda pair: PurePosixPath(pair[0]))


def build_bundle(root: Path | None = None) -> Bundle:
    """Tar the payload sources (under `root`, else where this gpubench is installed or checked out);
    same sources, same bytes, same digest."""
    sources = bundle_sources(root)
    paths = _paths(sources)
    names = {arcname.split("/", 1)[0] for arcname, _ in paths}
    for needed in ("payload", "pyproject.toml"):  # what a bundle cannot do without (pyproject.toml: pip install)
        if needed not in names:
            raise FileNotFoundError(
                f"no {needed} at {sources[needed]} to build the code bundle from; run from a gpubench checkout, "
                "or reinstall gpubench from a wheel of this version (it carries pyproject.toml in infra/project/)"
            )
    data, raw = _tar_gz([("gpubench/" + arcname, p.read_bytes(), 0o644) for arcname, p in paths])
    return Bundle(data, hashlib.sha256(raw).hexdigest()[:16], len(paths))


WORKLOAD_SPEC_NAME = "workload.yaml"
WORKLOAD_WORKDIR_NAME = "workdir"


def _tar_gz(entries: list[tuple[str, bytes, int]]) -> tuple[bytes, bytes]:
    """(gzip bytes, raw tar bytes) of (name, data, mode) entries, deterministic."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, data, mode in entries:
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(data), 0, mode
            tar.addfile(info, io.BytesIO(data))
    return _gzip(raw.getvalue()), raw.getvalue()


@functools.lru_cache(maxsize=4)
def _gzip(raw: bytes) -> bytes:
    """`raw` gzipped (mtime 0); cached: every stack of one process ships the same bundle, and compressing
    it is most of a render."""
    gz = io.BytesIO()
    with gzip.GzipFile(fileobj=gz, mode="wb", mtime=0) as f:
        f.write(raw)
    return gz.getvalue()


def build_workload_bundle(spec_path: str | Path) -> Bundle:
    """`workload.yaml` (workdir rewritten to `workdir`) and `workdir/...` as one tar.gz, named by the spec's
    hash; read by the walk that hashed them (payload.workloads.files), so its refusals hold here too."""
    spec = load_spec(spec_path)
    raw = read_yaml(spec.path)
    entries: list[tuple[str, bytes, int]] = []
    if spec.workdir:
        raw["workdir"] = WORKLOAD_WORKDIR_NAME
        files = read_workdir(Path(spec.workdir), spec.allow)
        if files_digest(files) != spec.workdir_sha256:
            raise WorkloadSpecError(f"{spec.path}: the workdir changed while it was read; build the bundle again")
        for f in files:
            entries.append((f"{WORKLOAD_WORKDIR_NAME}/{f.rel}", f.data, 0o755 if f.executable else 0o644))
    entries.insert(0, (WORKLOAD_SPEC_NAME, yaml.safe_dump(raw, sort_keys=False).encode(), 0o644))
    data, _ = _tar_gz(entries)
    return Bundle(data, spec.sha256[:16], len(entries))
