"""The move planner: which movable jobs to move where, so that a waiting job fits.

Free GPUs scattered over many nodes cannot hold a job that needs them on one node (30 GPUs free on
ten nodes and an 8-GPU pod waits). `plan_moves` finds, for each pod of the waiting job that fits
nowhere, the node that needs the fewest whole jobs moved off it (then the fewest GPUs moved), and
a new node for every pod of every job it moves, on capacity free *now* (never a node emptied for
the waiting job, never the node a pod leaves, never capacity another moved job would free: each
move stands on its own). The plan is whole or there is none: a waiting pod with no such node, a
moved pod with no new place, or more jobs than `limit` gives None, and nothing should move.

It counts GPUs only, each pod on one node, and re-places a moved gang pod by pod (its topology is
not kept): the caller passes only jobs for which that is acceptable. Cost: one pass over the
nodes per waiting pod to rank them by what must move (from a per-node index of the movable
jobs), then new places found in buckets of free GPU counts, so an 8-GPU pod on 5,000 nodes is
planned in milliseconds (`loadtest/bench.py`, row "consolidation plan").
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

# A moved job: (job key, {pod uid: (from node, to node)})
Move = tuple[str, dict[str, tuple[str, str]]]
# The movable jobs: job key -> {pod uid: (node, GPUs)}
Movable = Mapping[str, Mapping[str, tuple[str, int]]]

TRIES = 64  # ranked nodes whose moved jobs are re-placed before the pod is given up on


@dataclass(frozen=True, slots=True)
class MovePlan:
    moves: tuple[Move, ...]  # the jobs moved, each pod with its old and new node
    assignments: dict[str, str]  # the waiting job's pod uid -> its node
    gpus_moved: int


class _Free:
    """Free GPUs per node, with the nodes bucketed by how many they have (best fit in O(GPUs))."""

    def __init__(self, free: Mapping[str, int]) -> None:
        self.of = dict(free)
        self.buckets: defaultdict[int, set[str]] = defaultdict(set)
        for node, left in self.of.items():
            self.buckets[left].add(node)
        self.most = max(self.of.values(), default=0)

    def take(self, node: str, gpus: int) -> None:
        left = self.of[node]
        self.buckets[left].discard(node)
        self.of[node] = left - gpus
        self.buckets[left - gpus].add(node)

    def best_fit(self, gpus: int, banned: Iterable[str] = ()) -> str | None:
        """The node with the fewest free GPUs that still holds `gpus` (ties by name)."""
        skip = set(banned)
        for left in range(max(gpus, 0), self.most + 1):
            nodes = self.buckets.get(left)
            if nodes:
                usable = nodes - skip if skip else nodes
                if usable:
                    return min(usable)
        return None


def _on_node(movable: Movable) -> dict[str, dict[str, int]]:
    """node -> movable job -> the GPUs it holds there."""
    index: dict[str, dict[str, int]] = defaultdict(dict)
    for key, pods in movable.items():
        for node, gpus in pods.values():
            index[node][key] = index[node].get(key, 0) + gpus
    return index


def _fewest_jobs(deficit: int, here: Mapping[str, int], sizes: Mapping[str, int]) -> list[str]:
    """The jobs on a node that free at least `deficit` GPUs there: the fewest (largest first),
    then the last one swapped for the smallest that still covers, so fewer GPUs move."""
    ranked = sorted(here, key=lambda k: (-here[k], sizes[k], k))
    picked: list[str] = []
    got = 0
    for key in ranked:
        if got >= deficit:
            break
        picked.append(key)
        got += here[key]
    if got < deficit or not picked:
        return []
    last = picked[-1]
    before = got - here[last]
    cover = [k for k in ranked if k not in picked[:-1] and before + here[k] >= deficit]
    picked[-1] = min(cover, key=lambda k: (sizes[k], k))
    return picked


def _rehome(
    keys: Sequence[str], movable: Movable, free: _Free, banned: set[str]
) -> list[Move] | None:
    """New places for every pod of the jobs `keys` (largest pods first), on what is free now;
    `free` is charged for them only if all find one."""
    taken: list[tuple[str, int]] = []
    moves: list[Move] = []
    for key in keys:
        placed: dict[str, tuple[str, str]] = {}
        for uid, (node, gpus) in sorted(movable[key].items(), key=lambda it: (-it[1][1], it[0])):
            target = free.best_fit(gpus, banned | {node})
            if target is None:
                for node_back, gpus_back in taken:
                    free.take(node_back, -gpus_back)
                return None
            free.take(target, gpus)
            taken.append((target, gpus))
            placed[uid] = (node, target)
        moves.append((key, placed))
    return moves


def plan_moves(
    free_of: Mapping[str, int],
    job_pods: Sequence[tuple[str, int]],
    movable_jobs: Movable,
    limit: int,
) -> MovePlan | None:
    """The fewest whole-job moves (then the fewest GPUs moved) after which the waiting job fits.

    free_of: node -> GPUs free now (after other reservations); job_pods: the waiting job's pods
    (uid, GPUs), each on one node; movable_jobs: job key -> {pod uid: (node, GPUs)}; limit: the
    most jobs moved. None when no plan within the limit makes the whole job fit.
    """
    free = _Free(free_of)
    index = _on_node(movable_jobs)
    sizes = {key: sum(g for _, g in pods.values()) for key, pods in movable_jobs.items()}
    gone: set[str] = set()  # jobs moved by this plan
    emptied: set[str] = set()  # nodes holding the waiting job's pods
    assignments: dict[str, str] = {}
    moves: list[Move] = []
    for uid, gpus in sorted(job_pods, key=lambda pod: (-pod[1], pod[0])):
        node = free.best_fit(gpus, emptied)
        if node is None:
            found = _make_room(
                gpus, free, index, sizes, gone, emptied, movable_jobs, limit - len(moves)
            )
            if found is None:
                return None
            node, new_moves = found
            moves += new_moves
            gone.update(key for key, _ in new_moves)
        free.take(node, gpus)
        emptied.add(node)
        assignments[uid] = node
    moved = sum(sizes[key] for key, _ in moves)
    return MovePlan(tuple(moves), assignments, moved)


def _make_room(
    gpus: int,
    free: _Free,
    index: Mapping[str, Mapping[str, int]],
    sizes: Mapping[str, int],
    gone: set[str],
    emptied: set[str],
    movable: Movable,
    budget: int,
) -> tuple[str, list[Move]] | None:
    """The node for a pod of `gpus` once the fewest jobs leave it, with their moves (charged)."""
    if budget <= 0:
        return None
    ranked: list[tuple[int, int, str, list[str]]] = []
    # One job moved is the fewest there can be: look for it first, in one cheap pass.
    for node, jobs in index.items():
        deficit = gpus - free.of.get(node, 0)
        if deficit <= 0 or node in emptied:
            continue
        best = min(
            ((sizes[key], key) for key, got in jobs.items() if got >= deficit and key not in gone),
            default=None,
        )
        if best is not None:
            ranked.append((1, best[0], node, [best[1]]))
    if not ranked and budget > 1:
        for node, jobs in index.items():
            deficit = gpus - free.of.get(node, 0)
            if deficit <= 0 or node in emptied:
                continue
            here = {key: got for key, got in jobs.items() if key not in gone} if gone else jobs
            if sum(here.values()) < deficit:
                continue
            keys = _fewest_jobs(deficit, here, sizes)
            if keys and len(keys) <= budget:
                ranked.append((len(keys), sum(sizes[k] for k in keys), node, keys))
    ranked.sort(key=lambda r: r[:3])
    for _, _, node, keys in ranked[:TRIES]:
        # What the moved jobs hold on this node comes free for the waiting pod; elsewhere their
        # pods' GPUs are not counted as free (each move stands on capacity free now).
        moves = _rehome(keys, movable, free, emptied | {node})
        if moves is not None:
            free.take(node, -sum(index[node][k] for k in keys))
            return node, moves
    return None
