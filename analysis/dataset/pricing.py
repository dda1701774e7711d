"""Which price catalog priced a row (rows priced under another are priced again by the next collect): a
digest of the catalog files' names, sizes and modification times, so it costs nothing when nothing changed."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from infra.catalog import DATA_DIR, PRICES_DIR_ENV, user_catalog_dirs


def pricing_identity() -> str:
    extra = [Path(d) for d in os.environ.get(PRICES_DIR_ENV, "").split(os.pathsep) if d]
    h = hashlib.sha256()
    for root in [Path(DATA_DIR), *extra, *user_catalog_dirs()]:
        if not root.is_dir():
            continue
        for path in sorted(root.rglob("*")):
            if path.is_file():
                st = path.stat()
                h.update(f"{path}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16]
