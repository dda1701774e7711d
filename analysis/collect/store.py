"""The runs table on disk (``results.parquet`` and ``results.csv``): written,
read, checked, and the leftovers of a killed collect removed.

The two files are one table, so they are published together, in one step.
Each write fills a new generation directory (``.results.<pid>.<ns>/``) with
both files; then one symlink, ``.results.current``, is renamed onto that
directory. ``results.parquet`` and ``results.csv`` are fixed symlinks
through ``.results.current``, so a reader finds the old pair or the new
pair, never one of each, and a failure before that rename leaves the old
pair as it was. The replaced generation stays until the next write or
collect (a reader may still be opening it), which removes it with any
generation or temporary file whose process is gone.

On a file system without symlinks the two files are renamed into place one
after the other, each written whole first.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from analysis.csv_export import csv_options, csv_safe, frame_to_csv

TABLE_STEM = "results"
EXTENSIONS = ("parquet", "csv")
CURRENT = f".{TABLE_STEM}.current"  # the symlink to the published generation
VERSION_KEY = b"gpubench.table_version"  # in results.parquet's footer: the dataset version it was exported from

_WRITERS = {
    "parquet": lambda df, path: df.to_parquet(path, index=False),
    "csv": frame_to_csv,
}


def table_paths(out_dir: str | Path) -> dict[str, str]:
    """Where the runs table is written: {"parquet": path, "csv": path}."""
    return {ext: str(Path(out_dir) / f"{TABLE_STEM}.{ext}") for ext in EXTENSIONS}


def write_table(rows: list[dict], out_dir: str | Path) -> dict[str, str]:
    """The runs table as Parquet and CSV, priced with the recorded prices, and
    published as one pair: a crash or an error leaves the old table whole."""
    import pandas as pd

    from analysis.price.runs import price_rows
    from analysis.table import COLUMNS

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    df = price_rows(pd.DataFrame(rows, columns=list(COLUMNS)), rows)
    generation = _write_generation(df, out)
    try:
        replaced = _publish(out, generation)
    except BaseException:
        if _current_generation(out) != generation.name:  # not published: the old table stands
            shutil.rmtree(generation, ignore_errors=True)
        raise
    _remove_leftovers(out, keep={generation.name, replaced})
    return table_paths(out)


def write_table_batches(batches, schema, out_dir: str | Path, version: int | None = None) -> dict[str, str]:
    """The runs table as Parquet and CSV from Arrow record batches of `schema`
    (already priced, in the table's order), streamed batch by batch and
    published as one pair like write_table: the export of a results dataset,
    `version` the dataset's version it was made from (kept in the Parquet
    footer: export_version)."""
    if version is not None:
        schema = schema.with_metadata({**(schema.metadata or {}), VERSION_KEY: str(version).encode()})
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    generation = _new_generation(out)
    try:
        _write_batches(batches, schema, generation)
        replaced = _publish(out, generation)
    except BaseException:
        if _current_generation(out) != generation.name:
            shutil.rmtree(generation, ignore_errors=True)
        raise
    _remove_leftovers(out, keep={generation.name, replaced})
    return table_paths(out)


def _write_batches(batches, schema, generation: Path) -> None:
    """Both files of the table written batch by batch (the CSV as write_table writes it)."""
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    with (
        pq.ParquetWriter(generation / f"{TABLE_STEM}.parquet", schema) as writer,
        pcsv.CSVWriter(generation / f"{TABLE_STEM}.csv", schema, write_options=csv_options()) as csv,
    ):
        for batch in batches:
            writer.write_batch(batch)
            csv.write_batch(csv_safe(batch))


def read_table(out_dir: str | Path):
    """The runs table at `out_dir` as a DataFrame: its results.parquet export
    when there is one, else the results dataset there (a bucket prefix, or a
    local table collected without exports), by run id then stack. Readers that
    aggregate should query analysis.dataset.open_dataset instead."""
    import pandas as pd

    from analysis.dataset import TableNotFound, open_dataset, resolve
    from analysis.dataset.schema import EXPORT_SCHEMA

    loc = resolve(out_dir)
    path = loc.local / f"{TABLE_STEM}.parquet" if loc.local is not None else None
    if path is not None and path.exists():
        return pd.read_parquet(path)
    try:
        data = open_dataset(str(out_dir))
    except TableNotFound:
        raise FileNotFoundError(
            f"no results table at {out_dir}; run `gpubench collect --table {out_dir}` first"
        ) from None
    rows = data.to_table(columns=EXPORT_SCHEMA.names).sort_by([("run_id", "ascending"), ("stack", "ascending")])
    return rows.to_pandas()


def export_version(out_dir: str | Path) -> int | None:
    """The version of the dataset results.parquet was exported from; None when it
    says none (written from no dataset, or by an older collect) or cannot be read."""
    import pyarrow.parquet as pq

    try:
        meta = pq.read_schema(Path(out_dir) / f"{TABLE_STEM}.parquet").metadata or {}
    except Exception:  # noqa: BLE001 - no export, or an unreadable one: no version
        return None
    text = meta.get(VERSION_KEY, b"").decode("ascii", "replace")
    return int(text) if text.isdigit() else None


def table_is_whole(out_dir: str | Path) -> bool:
    """Both table files exist, they are one pair, and the Parquet footer reads:
    a truncated, overwritten or half-replaced table is rebuilt even when the
    manifest says nothing changed."""
    out = Path(out_dir)
    parquet, csv = (out / f"{TABLE_STEM}.{ext}" for ext in EXTENSIONS)
    if not parquet.is_file() or not csv.is_file() or csv.stat().st_size == 0:
        return False
    if parquet.is_symlink() != csv.is_symlink():  # one of them replaced on its own
        return False
    try:
        import pyarrow.parquet as pq

        pq.read_metadata(parquet)
    except Exception:  # noqa: BLE001 - any unreadable table is rebuilt
        return False
    return True


def remove_table(out_dir: str | Path) -> bool:
    """Remove the published results.parquet and results.csv (a stale export
    must not be read instead of the table); True when there were any."""
    out = Path(out_dir)
    names = [out / f"{TABLE_STEM}.{ext}" for ext in EXTENSIONS] + [out / CURRENT]
    found = [p for p in names if p.is_symlink() or p.exists()]
    for p in found:
        p.unlink()
    _remove_leftovers(out, keep=set())
    return bool(found)


def remove_stale_temporaries(out_dir: str | Path) -> list[Path]:
    """Delete what a killed collect left behind (its process is gone): unpublished
    generations and `.results.<name>.<pid>.tmp` files; the published table and
    whatever a collect still running in the same directory writes are kept."""
    out = Path(out_dir)
    if not out.is_dir():
        return []
    return _remove_leftovers(out, keep={_current_generation(out)})


def _generation_name(out: Path) -> Path:
    return out / f".{TABLE_STEM}.{os.getpid()}.{time.time_ns()}"


def _new_generation(out: Path) -> Path:
    generation = _generation_name(out)
    generation.mkdir()
    return generation


def _write_generation(df, out: Path) -> Path:
    """Both files of the table, written whole into a new generation directory."""
    generation = _new_generation(out)
    try:
        for ext, write in _WRITERS.items():
            write(df, generation / f"{TABLE_STEM}.{ext}")
    except BaseException:
        shutil.rmtree(generation, ignore_errors=True)
        raise
    return generation


def _publish(out: Path, generation: Path) -> str | None:
    """Make `generation` the table with one rename of the `.results.current`
    link; returns the generation it replaced. On a file system without
    symlinks the files are renamed into place instead."""
    if not _can_symlink(out):
        _publish_by_rename(out, generation)
        return None
    _link_names(out)
    replaced = _current_generation(out)
    _rename(_staged_symlink(out / CURRENT, generation.name), out / CURRENT)  # the one step that publishes
    return replaced


def _link_names(out: Path) -> None:
    """Make `results.parquet` and `results.csv` symlinks through
    `.results.current` (once per directory). A table already there as plain
    files (an older collect's) is first hard-linked into a generation of its
    own and made current, so the names show it unchanged until the new table
    is published."""
    _adopt_copied_current(out)
    names = {ext: out / f"{TABLE_STEM}.{ext}" for ext in EXTENSIONS}
    targets = {ext: f"{CURRENT}/{TABLE_STEM}.{ext}" for ext in EXTENSIONS}
    todo = [ext for ext in EXTENSIONS if not (names[ext].is_symlink() and os.readlink(names[ext]) == targets[ext])]
    if not todo:
        return
    if _current_generation(out) is None and all(names[ext].is_file() for ext in EXTENSIONS):
        adopted = _new_generation(out)
        for ext in EXTENSIONS:
            _link_or_copy(names[ext], adopted / names[ext].name)
        _rename(_staged_symlink(out / CURRENT, adopted.name), out / CURRENT)
    for ext in todo:
        _rename(_staged_symlink(names[ext], targets[ext]), names[ext])


def _adopt_copied_current(out: Path) -> None:
    """A `.results.current` that is a directory, not a symlink (the output
    directory was copied by a tool that follows symlinks), becomes a
    generation of its own and the link points at it."""
    current = out / CURRENT
    if current.is_dir() and not current.is_symlink():
        generation = _generation_name(out)
        os.rename(current, generation)
        _rename(_staged_symlink(current, generation.name), current)


def _link_or_copy(src: Path, dst: Path) -> None:
    try:
        os.link(src, dst)
    except OSError:  # no hard links here
        shutil.copy2(src, dst)


def _can_symlink(out: Path) -> bool:
    """Whether `out` takes symlinks (FAT and some network shares do not)."""
    if (out / CURRENT).is_symlink():
        return True
    test = out / f".{TABLE_STEM}.symlink-test.{os.getpid()}.tmp"
    test.unlink(missing_ok=True)
    try:
        os.symlink(CURRENT, test)
    except (OSError, NotImplementedError):
        return False
    test.unlink()
    return True


def _publish_by_rename(out: Path, generation: Path) -> None:
    for ext in EXTENSIONS:
        os.replace(generation / f"{TABLE_STEM}.{ext}", out / f"{TABLE_STEM}.{ext}")
    generation.rmdir()


def _staged_symlink(path: Path, target: str) -> Path:
    """A new symlink to `target` beside `path`, to be renamed onto it."""
    staged = path.with_name(f".{path.name.lstrip('.')}.{os.getpid()}.tmp")
    staged.unlink(missing_ok=True)
    os.symlink(target, staged)
    return staged


def _rename(staged: Path, path: Path) -> None:
    """`staged` renamed onto `path` in one step (`path` is never missing)."""
    try:
        os.replace(staged, path)
    except BaseException:
        staged.unlink(missing_ok=True)
        raise


def _current_generation(out: Path) -> str | None:
    """The name of the published generation directory, or None."""
    try:
        return os.readlink(out / CURRENT)
    except OSError:
        return None


def _writer_pid(name: str) -> int | None:
    """The process that wrote a table temporary (`.results.<name>.<pid>.tmp`) or
    generation (`.results.<pid>.<ns>`), from its name; None for anything else."""
    parts = name.split(".")
    if len(parts) >= 5 and parts[-1] == "tmp":
        pid = parts[-2]
    elif len(parts) == 4 and parts[3].isdigit():
        pid = parts[2]
    else:
        return None
    return int(pid) if pid.isdigit() else None


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


def _remove_leftovers(out: Path, keep: set[str | None]) -> list[Path]:
    """Delete table temporaries and generations not in `keep` whose writer is
    this process or gone; another live process's are its own."""
    removed = []
    for path in sorted(out.glob(f".{TABLE_STEM}.*")):
        pid = _writer_pid(path.name)
        if path.name in keep or pid is None or (pid != os.getpid() and _pid_alive(pid)):
            continue
        try:
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()
        except OSError:
            continue
        removed.append(path)
    return removed
