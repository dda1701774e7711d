"""The gpubench source a host runs: the SSH venv runtime copies it over, cloud
stacks upload it to the results bucket as `code/<sha256>.tar.gz`.

A deterministic tar.gz (sorted names, zero mtimes, fixed modes) of exactly what
the payload needs: `payload/`, the catalog (`infra/__init__.py`,
`infra/catalog/`) and the packaging files, so `pip install <dir>[payload]`
works on the host or in a container. The same tree gives the same bytes, so
the content hash names the remote copy: an unchanged tree is uploaded and
installed once.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import tarfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
INCLUDE = ("pyproject.toml", "README.md", "payload", "infra/__init__.py", "infra/catalog")
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


def _paths(root: Path) -> list[Path]:
    out: list[Path] = []
    for name in INCLUDE:
        p = root / name
        if p.is_file():
            out.append(p)
        elif p.is_dir():
            out.extend(q for q in p.rglob("*") if q.is_file())
    return sorted(
        q for q in out if not (SKIP_PARTS & set(q.relative_to(root).parts)) and not q.name.endswith(SKIP_SUFFIXES)
    )


def build_bundle(root: Path = REPO) -> Bundle:
    """Tar the payload sources under `root`; same tree, same bytes, same digest."""
    paths = _paths(root)
    if not any(p.relative_to(root).parts[0] == "payload" for p in paths):
        raise FileNotFoundError(f"no payload/ package under {root}; run from a gpubench checkout")
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for p in paths:
            info = tarfile.TarInfo("gpubench/" + p.relative_to(root).as_posix())
            data = p.read_bytes()
            info.size, info.mtime, info.mode = len(data), 0, 0o644
            tar.addfile(info, io.BytesIO(data))
    gz = io.BytesIO()
    with gzip.GzipFile(fileobj=gz, mode="wb", mtime=0) as f:
        f.write(raw.getvalue())
    data = gz.getvalue()
    return Bundle(data, hashlib.sha256(raw.getvalue()).hexdigest()[:16], len(paths))


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
    gz = io.BytesIO()
    with gzip.GzipFile(fileobj=gz, mode="wb", mtime=0) as f:
        f.write(raw.getvalue())
    return gz.getvalue(), raw.getvalue()


def build_workload_bundle(spec_path: str | Path) -> Bundle:
    """A workload spec and its workdir as one tar.gz: `workload.yaml` (its workdir
    rewritten to `workdir`) and `workdir/...`. The digest is the spec's content
    hash, so the host keeps one copy per version of the job. The files are read by
    the same walk that hashed them (payload.workloads.files), so exactly what was
    hashed travels, and the walk's refusals (credentials, links out, devices,
    size) hold for the bundle too."""
    import yaml

    from payload.workloads.files import files_digest, read_workdir
    from payload.workloads.spec import WorkloadSpecError, load_spec

    spec = load_spec(spec_path)
    raw = yaml.safe_load(Path(spec.path).read_text())
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
