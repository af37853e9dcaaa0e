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
nodes to rank them by what must move (from a per-node index of the movable jobs), kept for the
waiting job's other pods of the same size and brought up to date only on the nodes a move or a
placement touched since; new places are found in buckets of free GPU counts
(`loadtest/consolidation.py`: an 8-GPU pod, and a gang of 4 x 8 GPUs, on 5,000 nodes).
"""

from __future__ import annotations

import heapq
import itertools
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

# A moved job: (job key, {pod uid: (from node, to node)})
Move = tuple[str, dict[str, tuple[str, str]]]
# The movable jobs: job key -> {pod uid: (node, GPUs)}
Movable = Mapping[str, Mapping[str, tuple[str, int]]]

TRIES = 64  # ranked nodes whose moved jobs are re-placed before the pod is given up on

# A node ranked for a pod: (jobs moved, GPUs moved, node, the jobs)
Ranked = tuple[int, int, str, list[str]]


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


def _on_node(movable: Movable) -> tuple[dict[str, dict[str, int]], dict[str, int]]:
    """(node -> movable job -> the GPUs it holds there, job -> the GPUs it holds), in one pass."""
    index: dict[str, dict[str, int]] = defaultdict(dict)
    sizes: dict[str, int] = {}
    for key, pods in movable.items():
        size = 0
        for node, gpus in pods.values():
            here = index[node]
            here[key] = here.get(key, 0) + gpus
            size += gpus
        sizes[key] = size
    return index, sizes


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
    rooms = _Rooms(free, movable_jobs)
    assignments: dict[str, str] = {}
    moves: list[Move] = []
    for uid, gpus in sorted(job_pods, key=lambda pod: (-pod[1], pod[0])):
        node = free.best_fit(gpus, rooms.emptied)
        if node is None:
            found = rooms.make_room(gpus, limit - len(moves))
            if found is None:
                return None
            node, new_moves = found
            moves += new_moves
        free.take(node, gpus)
        rooms.place(node)
        assignments[uid] = node
    moved = sum(rooms.sizes[key] for key, _ in moves)
    return MovePlan(tuple(moves), assignments, moved)


class _Rooms:
    """Where a waiting pod of some size gets room, ranked once per size and kept up to date:
    a node's rank changes only when its free GPUs or its jobs do, so each later pod of the job
    ranks again only the nodes touched since (`dirty`, in the order they were touched)."""

    def __init__(self, free: _Free, movable: Movable):
        self.free = free
        self.index, self.sizes = _on_node(movable)
        self.movable = movable
        self.gone: set[str] = set()  # jobs moved by this plan
        self.emptied: set[str] = set()  # nodes holding the waiting job's pods
        self.dirty: list[str] = []  # nodes touched, in order
        # (pod size, several moves) -> (how much of `dirty` it saw, its ranks)
        self._ranked: dict[tuple[int, bool], tuple[int, list[Ranked]]] = {}

    def place(self, node: str) -> None:
        self.emptied.add(node)
        self.dirty.append(node)

    def make_room(self, gpus: int, budget: int) -> tuple[str, list[Move]] | None:
        """The node for a pod of `gpus` once the fewest jobs leave it, with their moves (charged
        to `free`)."""
        if budget <= 0:
            return None
        # One move where one is enough; else (none, or none of them has new places for its
        # pods) the fewest moves.
        for several in (False, True) if budget > 1 else (False,):
            for _, _, node, keys in self._ranks(gpus, budget, several):
                # What the moved jobs hold on this node comes free for the waiting pod; elsewhere
                # their pods' GPUs are not counted as free (each move stands on capacity free now).
                moves = _rehome(keys, self.movable, self.free, self.emptied | {node})
                if moves is not None:
                    self.free.take(node, -sum(self.index[node][k] for k in keys))
                    self.gone.update(keys)
                    for _, targets in moves:
                        for old, new in targets.values():
                            self.dirty += (old, new)
                    return node, moves
        return None

    def _ranks(self, gpus: int, budget: int, several: bool) -> list[Ranked]:
        """The first TRIES ranks for a pod of `gpus`: those kept for untouched nodes that still
        hold, and the nodes touched since ranked again, in order."""
        found = self._ranked.get((gpus, several))
        if found is None:
            kept, touched = self._rank(gpus, self.index, several), set()
        else:
            kept, touched = found[1], set(self.dirty[found[0] :])
        fresh = self._rank(gpus, touched, several)
        holding = [
            r
            for r in kept
            if r[2] not in touched and r[2] not in self.emptied and self.gone.isdisjoint(r[3])
        ]
        self._ranked[gpus, several] = (len(self.dirty), list(heapq.merge(holding, fresh)))
        usable = (r for r in holding if r[0] <= budget)
        first = list(itertools.islice(usable, TRIES))
        return heapq.nsmallest(TRIES, first + [r for r in fresh if r[0] <= budget])

    def _rank(self, gpus: int, nodes: Iterable[str], several: bool = False) -> list[Ranked]:
        """`nodes` ranked for a pod of `gpus` by what must move off them: one job (the smallest
        that is enough), or with `several`, the fewest jobs (`_fewest_jobs`)."""
        free, index, sizes, gone = self.free, self.index, self.sizes, self.gone
        ranked: list[Ranked] = []
        for node in nodes:
            jobs = index.get(node)
            deficit = gpus - free.of.get(node, 0)
            if jobs is None or deficit <= 0 or node in self.emptied:
                continue
            if not several:
                best = min(
                    ((sizes[k], k) for k, got in jobs.items() if got >= deficit and k not in gone),
                    default=None,
                )
                if best is not None:
                    ranked.append((1, best[0], node, [best[1]]))
                continue
            here = {k: got for k, got in jobs.items() if k not in gone} if gone else jobs
            if sum(here.values()) < deficit:
                continue
            keys = _fewest_jobs(deficit, here, sizes)
            if keys:
                ranked.append((len(keys), sum(sizes[k] for k in keys), node, keys))
        ranked.sort(key=lambda r: r[:3])
        return ranked
