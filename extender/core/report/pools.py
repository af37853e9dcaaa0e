"""GPU pools (nodes grouped by a label, the GPU model by default): what they offer, what is taken,
what is free, and what is free but stranded — on nodes too full for any GPU job now waiting."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from extender.core.model.resources import GPU
from extender.core.model.snapshot import PodInfo, Snapshot
from extender.core.placement.fit import GPU_PRODUCT_LABEL

NO_POOL = "none"  # nodes without the label


@dataclass(slots=True)
class Pool:
    name: str
    allocatable: int = 0
    allocated: int = 0
    free: int = 0
    stranded: int = 0  # free GPUs on nodes with fewer free than the smallest waiting GPU pod


def smallest_waiting(pending: Iterable[PodInfo]) -> int:
    """GPUs per pod of the smallest GPU pod waiting (0: none waits)."""
    return min((p.requests.get(GPU, 0) for p in pending if p.requests.get(GPU, 0) > 0), default=0)


def pools(snapshot: Snapshot, label: str = GPU_PRODUCT_LABEL) -> list[Pool]:
    smallest = smallest_waiting(p for pods in snapshot.queue_pending.values() for p in pods)
    out: dict[str, Pool] = {}
    for node in snapshot.nodes.values():
        total = node.allocatable.get(GPU, 0)
        if total <= 0:
            continue
        name = node.labels.get(label) or NO_POOL
        pool = out.get(name)
        if pool is None:
            pool = out[name] = Pool(name)
        used = min(total, node.requested.get(GPU, 0))
        pool.allocatable += total
        pool.allocated += used
        free = total - used if not node.unschedulable else 0
        pool.free += free
        if smallest and 0 < free < smallest:
            pool.stranded += free
    return sorted(out.values(), key=lambda p: p.name)
