"""GCP's offering file (infra/catalog/data/offerings/gcp.toml, and a user catalog's): its rows as catalog Offerings."""

from __future__ import annotations

from infra.catalog.errors import CatalogError
from infra.catalog.loader import _gpu, _markets, _retired, interconnect, require
from infra.catalog.model import GpuSpec, Offering


def parse_offerings(raw: dict, gpus: dict[str, GpuSpec], file: str) -> list[Offering]:
    accelerators = raw.get("accelerators", {})
    machines = raw.get("machine_types", {})
    out = []
    for i, row in enumerate(raw.get("offering", [])):
        where = f"{file} offering #{i + 1}"
        mtype = require(row, "machine_type", where)
        if mtype not in machines:
            raise CatalogError(f"{where}: machine_type {mtype!r} is not in [machine_types]")
        if "gpu" not in row:  # a machine type with no GPU: priced by its machine type alone
            fields = _machine(raw, row, mtype, machines[mtype], tuple(row.get("zones", ())), where)
            out.append(
                Offering(id=f"gcp/{mtype}", gpu=None, gpu_count=0, price_components=(f"machine:{mtype}",), **fields)
            )
            continue
        model = require(row, "gpu", where)
        count = int(require(row, "gpu_count", where))
        if model not in accelerators:
            raise CatalogError(f"{where}: gpu {model!r} has no [accelerators.{model}] entry")
        acc = accelerators[model]
        builtin = bool(acc.get("builtin", False))
        if not builtin and count not in acc.get("counts", ()):
            raise CatalogError(
                f"{where}: {count} x {model} cannot be attached on N1 (allowed counts: {acc.get('counts')})"
            )
        # a machine family may be sold in other zones than its GPU model's (a3-megagpu-8g, a4)
        zones = tuple(row.get("zones", acc.get("zones", ())))
        retired, retired_source = _retired(acc, f"{file} [accelerators.{model}]")
        oid = f"gcp/{mtype}" if builtin else f"gcp/{mtype}+{count}x{model.lower()}"
        out.append(
            Offering(
                id=oid,
                gpu=_gpu(gpus, model, where),
                gpu_count=count,
                accelerator_type=None if builtin else acc["type"],
                accelerator_count=0 if builtin else count,
                retired=retired,
                retired_source=retired_source,
                # the GPU's name in the price tables, where the cloud prices it apart (H100-MEGA)
                price_components=(f"machine:{mtype}", f"gpu:{row.get('price_gpu', model)}"),
                interconnect=interconnect(row, where),
                unpriced=row.get("unpriced"),
                **_machine(raw, row, mtype, machines[mtype], zones, where),
            )
        )
    return out


def _machine(raw: dict, row: dict, mtype: str, machine: dict, zones: tuple, where: str) -> dict:
    """The fields every GCP offering takes from its machine type, zones and row."""
    return {
        "provider": "gcp",
        "kind": raw.get("kind", "cloud"),
        "instance_type": mtype,
        "vcpus": int(machine["vcpus"]),
        "memory_gb": float(machine["memory_gb"]),
        "regions": tuple(dict.fromkeys(z.rsplit("-", 1)[0] for z in zones)),
        "zones": zones,
        "billing": row.get("billing", raw["billing"]),
        "markets": _markets(row.get("markets", raw.get("markets")), where),
        "specs_source": row.get("specs_source", raw.get("specs_source", "")),
        "stack_suffix": row.get("stack_suffix"),
    }
