"""AWS's offering file (infra/catalog/data/offerings/aws.toml, and a user catalog's): its rows as catalog Offerings."""

from __future__ import annotations

from infra.catalog.loader import _gpu, _markets, _retired, interconnect, require
from infra.catalog.model import GpuSpec, Offering


def parse_offerings(raw: dict, gpus: dict[str, GpuSpec], file: str) -> list[Offering]:
    out = []
    for i, row in enumerate(raw.get("offering", [])):
        where = f"{file} offering #{i + 1}"
        itype = require(row, "instance_type", where)
        retired, retired_source = _retired(row, where)
        out.append(
            Offering(
                id=f"aws/{itype}",
                provider="aws",
                kind=raw.get("kind", "cloud"),
                instance_type=itype,
                gpu=_gpu(gpus, row.get("gpu"), where),
                gpu_count=int(require(row, "gpu_count", where)),
                vcpus=int(require(row, "vcpus", where)),
                memory_gb=float(require(row, "memory_gb", where)),
                regions=tuple(row.get("regions", raw.get("regions", ()))),
                billing=row.get("billing", raw["billing"]),
                markets=_markets(row.get("markets", raw.get("markets")), where),
                specs_source=row.get("specs_source", raw.get("specs_source", "")),
                retired=retired,
                retired_source=retired_source,
                interconnect=interconnect(row, where),
                unpriced=row.get("unpriced"),
            )
        )
    return out
