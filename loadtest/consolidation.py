"""The move planner's cost where it matters: an 8-GPU job on 5,000 scattered 8-GPU nodes.

  python -m loadtest.consolidation [--nodes 5000] [--calls 20] [--seed 1]

Every node is filled with movable jobs of 1, 2 and 4 GPUs (some of them gangs of two pods over two
nodes) until 1 to 3 GPUs are left free, so thousands of GPUs are free and no node has 8: the
fragmentation consolidation exists for. Timed: `core/consolidation/plan.py: plan_moves` for one
8-GPU pod and for a gang of 4 x 8 GPUs, median of `--calls` plans, beside the 100 ms target
(issue 34).
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from extender.core.consolidation.plan import plan_moves

TARGET_MS = 100.0


def scattered(
    nodes: int, seed: int
) -> tuple[dict[str, int], dict[str, dict[str, tuple[str, int]]]]:
    """(free GPUs per node, the movable jobs) of a cluster of `nodes` 8-GPU nodes."""
    rng = random.Random(seed)
    movable: dict[str, dict[str, tuple[str, int]]] = {}
    names = [f"node-{i:05d}" for i in range(nodes)]
    left = {name: 8 - rng.randint(1, 3) for name in names}  # GPUs to fill on each node
    for i, name in enumerate(names):
        while left[name] > 0:
            gpus = min(rng.choice((1, 1, 2, 2, 4)), left[name])
            key = f"team/job-{len(movable)}"
            pods = {f"{key}-0": (name, gpus)}
            other = names[(i + 1) % nodes]
            if rng.random() < 0.1 and left[other] >= gpus:  # a gang over two nodes
                pods[f"{key}-1"] = (other, gpus)
                left[other] -= gpus
            movable[key] = pods
            left[name] -= gpus
    used = dict.fromkeys(names, 0)
    for pods in movable.values():
        for node, gpus in pods.values():
            used[node] += gpus
    free = {name: 8 - used[name] for name in names}
    return free, movable


def bench_consolidation(nodes: int, calls: int, seed: int = 1) -> list[str]:
    free, movable = scattered(nodes, seed)
    rows = []
    for label, job in (
        ("an 8-GPU pod", [("waiting-0", 8)]),
        ("a gang of 4 x 8 GPUs", [(f"waiting-{i}", 8) for i in range(4)]),
    ):
        samples = []
        plan = None
        for _ in range(calls):
            started = time.perf_counter()
            plan = plan_moves(free, job, movable, limit=8)
            samples.append(time.perf_counter() - started)
        median = statistics.median(samples) * 1e3
        what = (
            f"{len(plan.moves)} job(s) moved, {plan.gpus_moved} GPUs"
            if plan is not None
            else "no plan"
        )
        verdict = "meets" if median < TARGET_MS else "MISSES"
        rows.append(
            f"| consolidation plan for {label}, {nodes:,} nodes x 8 GPUs, {sum(free.values()):,} "
            f"GPUs free, none with 8, {len(movable):,} movable jobs | median {median:.1f} ms "
            f"({what}); target < {TARGET_MS:.0f} ms: {verdict} |"
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="loadtest.consolidation",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    print(
        "\n".join(
            [
                "| measure | result |",
                "|---|---|",
                *bench_consolidation(args.nodes, args.calls, args.seed),
            ]
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
