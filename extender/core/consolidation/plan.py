"""The pure move planner: which movable jobs to move where so that a waiting job fits."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

Move = tuple[str, dict[str, tuple[str, str]]]


@dataclass(frozen=True)
class MovePlan:
    """moves: (job key, {pod uid: (from node, to node)}); assignments: waiting pod uid -> node."""

    moves: tuple[Move, ...]
    assignments: dict[str, str]
    gpus_moved: int


def _best_fit(free: dict[str, int], gpus: int, banned: set[str]) -> str | None:
    fits = [(left, node) for node, left in free.items() if node not in banned and left >= gpus]
    return min(fits)[1] if fits else None


def _rehome(
    job: Mapping[str, tuple[str, int]], free: dict[str, int], banned: set[str]
) -> dict[str, tuple[str, str]] | None:
    """Places every pod of a moved job (largest first) off the banned nodes; None when one has no place."""
    placed: dict[str, tuple[str, str]] = {}
    for uid, (node, gpus) in sorted(job.items(), key=lambda item: -item[1][1]):
        target = _best_fit(free, gpus, banned | {node})
        if target is None:
            return None
        free[target] -= gpus
        placed[uid] = (node, target)
    return placed


def _room_on(
    target: str,
    gpus: int,
    free: dict[str, int],
    movable: Mapping[str, Mapping[str, tuple[str, int]]],
    budget: int,
) -> tuple[list[Move], dict[str, int], int] | None:
    deficit = gpus - free[target]
    here = {key: sum(g for n, g in pods.values() if n == target) for key, pods in movable.items()}
    chosen = sorted((key for key, got in here.items() if got > 0), key=lambda k: (-here[k], k))
    picked: list[str] = []
    for key in chosen:
        if deficit <= 0:
            break
        picked.append(key)
        deficit -= here[key]
    if deficit > 0 or len(picked) > budget:
        return None
    after = dict(free)
    for key in picked:
        for node, g in movable[key].values():
            after[node] += g
    moves: list[Move] = []
    moved = 0
    for key in picked:
        placed = _rehome(movable[key], after, {target})
        if placed is None:
            return None
        moves.append((key, placed))
        moved += sum(g for _, g in movable[key].values())
    if after[target] < gpus:
        return None
    return moves, after, moved


def plan_moves(
    free_of: Mapping[str, int],
    job_pods: Sequence[tuple[str, int]],
    movable_jobs: Mapping[str, Mapping[str, tuple[str, int]]],
    limit: int,
) -> MovePlan | None:
    """Plans the fewest whole-job moves (then the fewest GPUs moved) after which the waiting job fits.

    free_of: node -> free GPUs now; job_pods: the waiting job's pods (uid, GPUs), each on one
    node; movable_jobs: job key -> {pod uid: (node, GPUs)}; limit: at most this many jobs moved.
    Every moved pod gets its new node (never the node it leaves, never one freed for the waiting
    job) before the plan is returned; None when no plan within the limit makes the job fit.
    Target nodes are tried by how little must move, not over all subsets.
    """
    free = dict(free_of)
    remaining = dict(movable_jobs)
    assignments: dict[str, str] = {}
    moves: list[Move] = []
    moved = 0
    for uid, gpus in sorted(job_pods, key=lambda pod: -pod[1]):
        node = _best_fit(free, gpus, set())
        if node is None:
            options = []
            for target in sorted(free, key=lambda n: (gpus - free[n], n)):
                room = _room_on(target, gpus, free, remaining, limit - len(moves))
                if room is not None:
                    options.append((len(room[0]), room[2], target, room))
            if not options:
                return None
            _, _, node, (new_moves, free, got) = min(options, key=lambda o: o[:3])
            moves.extend(new_moves)
            moved += got
            for key, _ in new_moves:
                del remaining[key]
        free[node] -= gpus
        assignments[uid] = node
    return MovePlan(tuple(moves), assignments, moved)
