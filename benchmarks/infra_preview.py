"""Time the offline preview of the whole stack matrix (target: <= 10 s on 2 cores).

    .venv/bin/python benchmarks/infra_preview.py [--repeat N]

Prints the import and catalog time, each round's time for the whole matrix and the slowest
renders. Renders in one process under Pulumi's mocks, as `gpubench preview '*'` does.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=1, help="render the matrix this many times")
    ap.add_argument("--budget", type=float, default=10.0, help="seconds the whole matrix may take")
    args = ap.parse_args()

    start = time.perf_counter()
    from analysis.options import table_location
    from analysis.planning import measured_runs_of
    from infra import preview
    from infra.catalog import load_catalog
    from infra.stacks import stack_names

    catalog = load_catalog()
    names = stack_names()
    measured = measured_runs_of(table_location(), names)  # as `gpubench preview` reads the table
    imported = time.perf_counter() - start
    print(f"imports + catalog: {imported:.3f} s")
    total_render = 0.0
    for round_ in range(args.repeat):
        round_start = time.perf_counter()
        # what `gpubench preview '*' --json` runs: a stack the checks refuse is listed with its error
        summaries = json.loads(preview.run(names, catalog, as_json=True, single=False, measured=measured))
        total_render = time.perf_counter() - round_start
        refused = sum("error" in s for s in summaries)
        print(
            f"round {round_ + 1}: {len(names)} stacks ({refused} refused by the checks) in {total_render:.3f} s "
            f"({total_render / len(names) * 1000:.1f} ms/stack)"
        )
    slowest = sorted((s for s in summaries if "error" not in s), key=lambda s: -s["render_seconds"])[:5]
    print("slowest renders: " + ", ".join(f"{s['stack']} {s['render_seconds'] * 1000:.0f} ms" for s in slowest))
    total = time.perf_counter() - start
    print(f"total: {total:.3f} s for {len(names)} stacks x {args.repeat} (budget {args.budget:g} s for one matrix)")
    return 0 if imported + total_render <= args.budget else 1


if __name__ == "__main__":
    sys.exit(main())
