"""Time the offline preview of the whole stack matrix (target: <= 10 s on 2 cores).

    .venv/bin/python benchmarks/infra_preview.py [--repeat N]

Prints the time per stack and the total, split into import/first-render warm-up
and the steady per-stack cost. Renders in one process under Pulumi's mocks, the
way `python -m infra preview --all` does.
"""

from __future__ import annotations

import argparse
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
    from analysis.price.estimate import measured_runs, read_results
    from infra import preview, stacks
    from infra.catalog import load_catalog

    catalog = load_catalog()
    names = stacks.stack_names()
    measured = measured_runs(read_results())
    imported = time.perf_counter() - start
    print(f"imports + catalog: {imported:.3f} s")
    total_render = 0.0
    for round_ in range(args.repeat):
        round_start = time.perf_counter()
        for name in names:
            t = time.perf_counter()
            preview.preview_stack(name, catalog, measured)
            took = time.perf_counter() - t
            if round_ == 0:
                print(f"{name:28s} {took * 1000:8.1f} ms")
        total_render = time.perf_counter() - round_start
        print(
            f"round {round_ + 1}: {len(names)} stacks in {total_render:.3f} s ({total_render / len(names) * 1000:.1f} ms/stack)"
        )
    total = time.perf_counter() - start
    print(f"total: {total:.3f} s for {len(names)} stacks x {args.repeat} (budget {args.budget:g} s for one matrix)")
    return 0 if imported + total_render <= args.budget else 1


if __name__ == "__main__":
    sys.exit(main())
