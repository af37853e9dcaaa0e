"""GPU fragmentation on the public Alibaba trace: gangplank's scoring against the FGD paper's
baselines, in one run (Weng et al., "Beware of Fragmentation", USENIX ATC '23).

  python -m loadtest.fragmentation [--traces PATH] [--lists default,multigpu50,gpuspec33]
                                   [--seed 1] [--png docs/fragmentation.png] [--json FILE]

The paper's method: the trace's pods arrive in submission order, then seeded random draws from
the same list arrive until the GPUs asked for exceed the cluster's; no pod leaves. A pod no node
can take fails and is skipped. Per placement policy and pod list: the share of the cluster's GPUs
allocated when the first pod fails, the GPUs left unallocated when arrived load reaches 100%, and
the time to place one pod. Shared GPUs (`gpu_milli` < 1000) are accounted per GPU.

Baselines, written here from their published descriptions: random; best fit (least free CPU,
memory and GPU left, each as a share of the node); dot product (Tetris: largest dot product of
demand and free resources); GPU packing (a partly used GPU first, then nodes with GPUs in use,
then idle ones); GPU clustering (nodes already running pods of the same GPU request first); FGD
(least growth of expected fragmentation over the trace's mix of pod shapes). gangplank runs its
own decision core (`extender.core.placement.scoring.PlacementScorer`): integer scores 0-10 per
node and a
random pick among the best, as kube-scheduler makes it with the shipped `gangplank` profile; the
row "gangplank + default scores" adds kube-scheduler's default spreading scores (extender weight 5,
NodeResourcesFit LeastAllocated and NodeResourcesBalancedAllocation) to show why the profile
disables them. The row "gangplank + consolidation" is gangplank's scoring with the move planner:
a pod that fits no node moves placed pods (whole GPUs, fewer than their node's, no GPU-model
constraint: `loadtest/fragmentation_moves.py`) so that it fits; the lines below the table give
its figures beside gangplank's without moves, and the pods moved per GPU gained at 100% load.
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from extender.core.model.snapshot import GpuState
from extender.core.placement.fragmentation import (
    MIX_SHAPES,
    WHOLE,
    FragmentationCache,
    Mix,
    Shape,
    fits,
    state_of,
)
from extender.core.placement.scoring import PlacementScorer, rank_scores
from extender.sim.workload import fill_to_capacity
from loadtest.cluster import DEFAULT_TRACES
from loadtest.fragmentation_moves import Consolidator

TRACE = "alibaba-gpu-v2023"
LISTS = ("default", "multigpu50", "gpuspec33")
POLICIES = (
    "random",
    "bestfit",
    "dotprod",
    "gpupacking",
    "gpuclustering",
    "fgd",
    "gangplank",
    "gangplank+default",
    "gangplank+consolidation",
)
FGD_MIX = 1_000  # FGD as published: every shape of the pod list
GANGPLANK_MIX = MIX_SHAPES  # what the running extender learns from its cache


@dataclass
class SimNode:
    name: str
    model: str
    cpu: int
    memory: int
    gpus: int
    cpu_free: int = 0
    memory_free: int = 0
    gpu_free: list[int] = field(default_factory=list)
    hosted: Counter[int] = field(default_factory=Counter)  # GPU request (milli) -> pods

    def __post_init__(self) -> None:
        self.cpu_free, self.memory_free = self.cpu, self.memory
        self.gpu_free = [WHOLE] * self.gpus
        self.state = self._state()

    def _state(self) -> GpuState:
        return state_of(self.model, self.cpu_free, self.memory_free, self.gpu_free)

    def place(self, shape: Shape, gpu_value: int | None) -> list[int]:
        """Take `shape`; a shared pod goes on a GPU with `gpu_value` free (None: the fullest
        GPU it fits, best fit). The indices of the GPUs it took."""
        if shape.gpus == 1 and shape.milli < WHOLE:
            fitting = [i for i, g in enumerate(self.gpu_free) if g >= shape.milli]
            exact = [i for i in fitting if self.gpu_free[i] == gpu_value]
            gpus = [(exact or sorted(fitting, key=lambda i: self.gpu_free[i]))[0]]
        elif shape.gpus:
            gpus = [i for i, g in enumerate(self.gpu_free) if g == WHOLE][: shape.gpus]
        else:
            gpus = []
        self.take(shape, gpus)
        return gpus

    def take(self, shape: Shape, gpus: list[int]) -> None:
        """Take `shape` on the GPUs at these indices."""
        self._change(shape, gpus, -1)

    def unplace(self, shape: Shape, gpus: list[int]) -> None:
        """Give back what `shape` took on the GPUs at these indices (a pod moved away)."""
        self._change(shape, gpus, 1)

    def _change(self, shape: Shape, gpus: list[int], sign: int) -> None:
        self.cpu_free += sign * shape.cpu
        self.memory_free += sign * shape.memory
        for i in gpus:
            self.gpu_free[i] += sign * shape.milli
        self.hosted[shape.gpu_milli] -= sign
        self.state = self._state()

    @property
    def gpu_used(self) -> int:
        return self.gpus * WHOLE - sum(self.gpu_free)


def load_nodes(traces: Path) -> list[SimNode]:
    with (traces / TRACE / "openb_node_list_all_node.csv").open() as f:
        return [
            SimNode(
                r["sn"], r["model"] or "", int(r["cpu_milli"]), int(r["memory_mib"]), int(r["gpu"])
            )
            for r in csv.DictReader(f)
        ]


def load_pods(traces: Path, name: str) -> list[Shape]:
    with (traces / TRACE / f"openb_pod_list_{name}.csv").open() as f:
        rows = list(csv.DictReader(f))
    if rows and "creation_time" in rows[0]:
        rows.sort(key=lambda r: int(r["creation_time"] or 0))  # submission order (stable)
    out = []
    for r in rows:
        gpus = int(r["num_gpu"])
        milli = int(r["gpu_milli"]) if gpus == 1 else WHOLE
        models = frozenset(m for m in (r.get("gpu_spec") or "").split("|") if m)
        out.append(Shape(int(r["cpu_milli"]), int(r["memory_mib"]), gpus, milli, models))
    return out


def workload(pods: Sequence[Shape], total_gpu_milli: int, seed: int) -> list[Shape]:
    """The list in order, then seeded draws from it until GPU demand exceeds the cluster."""
    return fill_to_capacity(pods, lambda shape: shape.gpu_milli, total_gpu_milli, seed)


# ---- the policies: each picks (node, GPU value for a shared pod) among nodes that fit ----------
Choice = tuple[SimNode, int | None]
Chooser = Callable[[Shape, list[SimNode], random.Random], Choice]


def _pick_min(nodes: list[SimNode], key: Callable[[SimNode], float], rng: random.Random) -> SimNode:
    best, chosen = float("inf"), []
    for node in nodes:
        value = key(node)
        if value < best - 1e-12:
            best, chosen = value, [node]
        elif value <= best + 1e-12:
            chosen.append(node)
    return rng.choice(chosen)


def _share(shape: Shape, node: SimNode) -> tuple[float, float, float]:
    gpu = shape.gpu_milli / (node.gpus * WHOLE) if node.gpus else 0.0
    return shape.cpu / node.cpu, shape.memory / node.memory, gpu


def _free(node: SimNode) -> tuple[float, float, float]:
    gpu = sum(node.gpu_free) / (node.gpus * WHOLE) if node.gpus else 0.0
    return node.cpu_free / node.cpu, node.memory_free / node.memory, gpu


def choose_random(shape: Shape, nodes: list[SimNode], rng: random.Random) -> Choice:
    node = rng.choice(nodes)
    if shape.gpus == 1 and shape.milli < WHOLE:
        return node, rng.choice([g for g in node.gpu_free if g >= shape.milli])
    return node, None


def choose_bestfit(shape: Shape, nodes: list[SimNode], rng: random.Random) -> Choice:
    def left(node: SimNode) -> float:
        need, free = _share(shape, node), _free(node)
        return sum(f - n for f, n in zip(free, need, strict=True))

    return _pick_min(nodes, left, rng), None


def choose_dotprod(shape: Shape, nodes: list[SimNode], rng: random.Random) -> Choice:
    def minus_dot(node: SimNode) -> float:
        need, free = _share(shape, node), _free(node)
        return -sum(f * n for f, n in zip(free, need, strict=True))

    return _pick_min(nodes, minus_dot, rng), None


def choose_gpupacking(shape: Shape, nodes: list[SimNode], rng: random.Random) -> Choice:
    shared = shape.gpus == 1 and shape.milli < WHOLE

    def tier(node: SimNode) -> float:
        if shared and any(shape.milli <= g < WHOLE for g in node.gpu_free):
            return 0
        return 1 if node.gpu_used else 2

    return _pick_min(nodes, tier, rng), None


def choose_gpuclustering(shape: Shape, nodes: list[SimNode], rng: random.Random) -> Choice:
    return _pick_min(nodes, lambda n: 0 if n.hosted[shape.gpu_milli] else 1, rng), None


class FgdChooser:
    def __init__(self, mix: Mix) -> None:
        self.cache = FragmentationCache(mix)
        self.grow: dict[tuple[Shape, GpuState], tuple[float, int]] = {}

    def __call__(self, shape: Shape, nodes: list[SimNode], rng: random.Random) -> Choice:
        best: dict[str, tuple[float, int]] = {}
        for node in nodes:
            key = (shape, node.state)
            found = self.grow.get(key)
            if found is None:
                grow, _, index = self.cache.best(node.state, shape)
                found = self.grow[key] = (grow, node.state[3][index] if index >= 0 else -1)
            best[node.name] = found
        node = _pick_min(nodes, lambda n: best[n.name][0], rng)
        value = best[node.name][1]
        return node, value if value >= 0 else None


class GangplankChooser:
    """gangplank's decision core: its costs ranked to 0-10, a random pick among the best."""

    def __init__(self, mix: Mix, default_scores: bool = False) -> None:
        self.scorer = PlacementScorer(mix=mix)
        self.default_scores = default_scores

    def __call__(self, shape: Shape, nodes: list[SimNode], rng: random.Random) -> Choice:
        costs: dict[str, float] = {}
        for node in nodes:
            cost = self.scorer.cost(node.state, shape)
            if cost is not None:
                costs[node.name] = cost
        scores = rank_scores(costs)
        if self.default_scores:
            total = {n.name: 5 * 10 * scores[n.name] + _kube_default(shape, n) for n in nodes}
        else:
            total = {n.name: float(scores[n.name]) for n in nodes}
        node = _pick_min(nodes, lambda n: -total[n.name], rng)
        if shape.gpus == 1 and shape.milli < WHOLE:
            _, _, index = self.scorer.frag.best(node.state, shape)
            return node, node.state[3][index]
        return node, None


def _kube_default(shape: Shape, node: SimNode) -> float:
    """kube-scheduler's NodeResourcesFit (LeastAllocated) + BalancedAllocation, 0-100 each."""
    cpu = (node.cpu_free - shape.cpu) / node.cpu
    memory = (node.memory_free - shape.memory) / node.memory
    least = 100 * (cpu + memory) / 2
    used = (1 - cpu, 1 - memory)
    balanced = 100 * (1 - abs(used[0] - used[1]) / 2)
    return least + balanced


def chooser(policy: str, pods: Sequence[Shape]) -> Chooser:
    simple: dict[str, Chooser] = {
        "random": choose_random,
        "bestfit": choose_bestfit,
        "dotprod": choose_dotprod,
        "gpupacking": choose_gpupacking,
        "gpuclustering": choose_gpuclustering,
    }
    if policy in simple:
        return simple[policy]
    if policy == "fgd":
        return FgdChooser(Mix.of(pods, limit=FGD_MIX))
    # gangplank+consolidation: gangplank's scores, and moves when a pod fits nowhere (simulate)
    return GangplankChooser(Mix.of(pods, limit=GANGPLANK_MIX), policy == "gangplank+default")


@dataclass
class Result:
    policy: str
    pods: str
    first_failure_share: float  # GPUs allocated when the first pod failed, share of all
    unallocated_at_full: float  # GPUs unallocated when arrived load reached 100%
    ms_per_pod: float
    curve: list[tuple[float, float]]  # (arrived load, allocated share)
    failed: int
    moved_at_full: int = 0  # pods moved (consolidation) until arrived load reached 100%
    moved: int = 0  # pods moved in the whole run
    undone: int = 0  # plans undone: a pod short of CPU or memory where the plan put it


def simulate(traces: Path, pod_list: str, policy: str, seed: int) -> Result:
    nodes = load_nodes(traces)
    pods = load_pods(traces, pod_list)
    total = sum(n.gpus for n in nodes) * WHOLE
    arrivals = workload(pods, total, seed)
    choose = chooser(policy, pods)
    moves = Consolidator(nodes) if policy == "gangplank+consolidation" else None
    rng = random.Random(seed)
    fit_cache: dict[tuple[GpuState, Shape], bool] = {}
    arrived = allocated = failed = 0
    first_failure = -1.0
    unallocated = -1.0
    moved_at_full = -1
    curve: list[tuple[float, float]] = []
    spent = 0.0
    for i, shape in enumerate(arrivals):
        started = time.perf_counter()
        candidates = []
        for node in nodes:
            key = (node.state, shape)
            ok = fit_cache.get(key)
            if ok is None:
                ok = fit_cache[key] = fits(node.state, shape)
            if ok:
                candidates.append(node)
        placed = False
        if candidates:
            node, value = choose(shape, candidates, rng)
            gpus = node.place(shape, value)
            if moves is not None:
                moves.record(str(i), node, shape, gpus)
            placed = True
        elif moves is not None:
            placed = moves.make_room(str(i), shape) is not None
        if placed:
            allocated += shape.gpu_milli
        spent += time.perf_counter() - started
        arrived += shape.gpu_milli
        if not placed:
            failed += 1
            if first_failure < 0:
                first_failure = allocated / total
        if unallocated < 0 and arrived >= total:
            unallocated = (total - allocated) / WHOLE
            moved_at_full = moves.moved if moves is not None else 0
        if i % 50 == 0:
            curve.append((arrived / total, allocated / total))
        if len(fit_cache) > 500_000:
            fit_cache.clear()
    if unallocated < 0:
        unallocated = (total - allocated) / WHOLE
    moved = moves.moved if moves is not None else 0
    undone = moves.rejected if moves is not None else 0
    return Result(
        policy,
        pod_list,
        first_failure if first_failure >= 0 else allocated / total,
        unallocated,
        spent / len(arrivals) * 1e3,
        curve,
        failed,
        moved_at_full if moved_at_full >= 0 else moved,
        moved,
        undone,
    )


def _run(job: tuple[Path, str, str, int]) -> Result:
    return simulate(*job)


def compare(
    traces: Path, lists: Sequence[str], policies: Sequence[str], seed: int, workers: int = 2
) -> list[Result]:
    jobs = [(traces, name, policy, seed) for name in lists for policy in policies]
    # The slow ones first, so both workers finish together.
    jobs.sort(key=lambda j: not j[2].startswith(("fgd", "gangplank")))
    with ProcessPoolExecutor(max_workers=workers) as pool:
        results = list(pool.map(_run, jobs))
    order = {(n, p): i for i, (n, p) in enumerate((n, p) for n in lists for p in policies)}
    return sorted(results, key=lambda r: order[(r.pods, r.policy)])


def table(results: Sequence[Result], lists: Sequence[str]) -> list[str]:
    by = {(r.pods, r.policy): r for r in results}
    policies = list(dict.fromkeys(r.policy for r in results))
    head = "| policy | " + " | ".join(
        f"{n}: alloc. at 1st failure | {n}: unalloc. GPUs at 100% | {n}: ms/pod" for n in lists
    )
    lines = [head + " |", "|---" * (1 + 3 * len(lists)) + "|"]
    for policy in policies:
        cells = []
        for n in lists:
            r = by[(n, policy)]
            cells += [
                f"{r.first_failure_share * 100:.1f}%",
                f"{r.unallocated_at_full:.0f}",
                f"{r.ms_per_pod:.2f}",
            ]
        lines.append(f"| {policy} | " + " | ".join(cells) + " |")
    return lines


def verdict(results: Sequence[Result], lists: Sequence[str]) -> list[str]:
    by = {(r.pods, r.policy): r for r in results}
    out = []
    for n in lists:
        fgd, ours = by.get((n, "fgd")), by.get((n, "gangplank"))
        if fgd is None or ours is None:
            continue
        baselines = [
            by[(n, p)].unallocated_at_full
            for p in ("random", "bestfit", "dotprod", "gpupacking", "gpuclustering")
            if (n, p) in by
        ]
        best = min(baselines) if baselines else float("nan")
        out.append(
            f"{n}: unallocated GPUs at 100% load: gangplank {ours.unallocated_at_full:.0f}, "
            f"FGD {fgd.unallocated_at_full:.0f}, best other baseline {best:.0f} "
            f"(gangplank {(1 - ours.unallocated_at_full / best) * 100:.0f}% fewer than it); "
            f"allocated at first failure: gangplank {ours.first_failure_share * 100:.1f}%, "
            f"FGD {fgd.first_failure_share * 100:.1f}%"
        )
    return out + consolidation_verdict(by, lists)


def consolidation_verdict(by: dict[tuple[str, str], Result], lists: Sequence[str]) -> list[str]:
    """gangplank's scores with and without moves, and what the moves bought."""
    out = []
    for n in lists:
        without, moving = by.get((n, "gangplank")), by.get((n, "gangplank+consolidation"))
        if without is None or moving is None:
            continue
        gained = without.unallocated_at_full - moving.unallocated_at_full
        per_gpu = f"{moving.moved_at_full / gained:.2f}" if gained > 0 else "n/a (none gained)"
        out.append(
            f"{n}: consolidation: allocated at first failure "
            f"{moving.first_failure_share * 100:.1f}%"
            f" (without {without.first_failure_share * 100:.1f}%), unallocated GPUs at 100% load "
            f"{moving.unallocated_at_full:.0f} (without {without.unallocated_at_full:.0f}); "
            f"{moving.moved_at_full} pods moved by then, {per_gpu} per GPU gained "
            f"({moving.moved} in the whole run; {moving.undone} plans undone, a pod short of CPU "
            "or memory where the plan, which counts GPUs, put it)"
        )
    return out


def plot(results: Sequence[Result], lists: Sequence[str], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(lists), figsize=(5 * len(lists), 4), sharey=True)
    if len(lists) == 1:
        axes = [axes]
    for ax, name in zip(axes, lists, strict=True):
        for r in results:
            if r.pods != name:
                continue
            xs = [a * 100 for a, _ in r.curve]
            ys = [(a - b) * 100 for a, b in r.curve]
            width = 2.2 if r.policy.startswith("gangplank") or r.policy == "fgd" else 1.0
            ax.plot(xs, ys, label=r.policy, linewidth=width)
        ax.set_title(f"openb {name}")
        ax.set_xlabel("arrived GPU load (% of cluster)")
        ax.set_xlim(60, 101)
        ax.set_ylim(0, 25)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("arrived but not allocated (% of GPUs)")
    axes[-1].legend(fontsize=8)
    fig.suptitle("GPU fragmentation on the Alibaba trace (lower is better)")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--traces", type=Path, default=DEFAULT_TRACES)
    parser.add_argument("--lists", default=",".join(LISTS))
    parser.add_argument("--policies", default=",".join(POLICIES))
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--png", type=Path, default=None, help="plot the curves to this PNG")
    parser.add_argument("--json", type=Path, default=None, help="write every figure here")
    args = parser.parse_args(argv)
    if not (args.traces / TRACE / "openb_node_list_all_node.csv").exists():
        print(
            f"NOTE: the Alibaba GPU trace is not at {args.traces / TRACE}; the fragmentation "
            "comparison needs it (pass --traces PATH). Skipped."
        )
        return 0
    lists = [s for s in args.lists.split(",") if s]
    policies = [s for s in args.policies.split(",") if s]
    started = time.perf_counter()
    results = compare(args.traces, lists, policies, args.seed)
    print(f"GPU fragmentation, {TRACE} ({time.perf_counter() - started:.0f} s, seed {args.seed})")
    print("\n".join(table(results, lists)))
    print("\n".join(verdict(results, lists)))
    if args.png:
        plot(results, lists, args.png)
        print(f"plot: {args.png}")
    if args.json:
        args.json.write_text(json.dumps([r.__dict__ for r in results], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
