"""The room kept for the head of the fair line: whether an elastic gang's extra member may take
room on a node.

It may not when the first job of the line its quota admits fits now and would not with the extra
there. A head that does not fit either way has the hold, which extras never take: the extra may
go. (docs/elastic.md, "What the minimum and the extras may take".)
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence

from extender.core.gangs.gang import Gang, resolve_gang
from extender.core.model.keys import is_single
from extender.core.model.snapshot import NodeInfo, PodInfo, Snapshot
from extender.core.placement.planner import FreeOf, plan_gang
from extender.core.queues.waiting_jobs import WaitingJob

# What each node has left for job `key`, counting only resources `only`.
FreeFor = Callable[[str, Collection[str]], FreeOf]


def pods_needed(snapshot: Snapshot, key: str, pending: Sequence[PodInfo]) -> int | None:
    """How many of waiting job `key`'s `pending` pods must be placed (None: a gang not ready)."""
    if is_single(key):
        return len(pending)
    gang = resolve_gang(snapshot, key)
    return gang.needed if gang.ready else None


def kept_for_head(
    snapshot: Snapshot,
    line: Iterable[WaitingJob],
    gang: Gang,
    pod: PodInfo,
    node: str,
    free_for: FreeFor,
) -> str:
    """Why extra member `pod` of elastic `gang` may not take room on `node` ("": it may), `line`
    being the waiting jobs in fair order that their quota admits."""
    for job in line:
        if job.key == gang.key:
            continue
        pending = sorted(job.pods, key=lambda p: (p.created, p.name))
        count = pods_needed(snapshot, job.key, pending)
        if count is None:
            continue
        free = free_for(job.key, {r for p in pending for r in p.requests})
        if not plan_gang(snapshot, pending, count, free, bounded=True).ok:
            return ""
        taken = _minus(free, node, pod.requests)
        if plan_gang(snapshot, pending, count, taken, bounded=True).ok:
            return ""
        return f"the room on node {node} is kept for {job.name}, first in line in queue {job.queue}"
    return ""


def _minus(free: FreeOf, node: str, requests: Mapping[str, int]) -> FreeOf:
    def room(info: NodeInfo) -> dict[str, int]:
        left = dict(free(info))
        if info.name == node:
            for name, amount in requests.items():
                left[name] = left.get(name, 0) - amount
        return left

    return room
