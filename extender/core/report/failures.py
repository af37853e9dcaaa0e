"""Jobs that fail again and again, per queue, from the cache: a gang whose pods failed (and were
replaced) or whose containers restart repeatedly. For the metrics and the alert; no names in
labels, so the count is per queue."""

from __future__ import annotations

from collections.abc import Callable

from extender.core.model.keys import is_single
from extender.core.model.snapshot import PodInfo, Snapshot

RESTARTS = 3  # container restarts across a job's pods
FAILED_PODS = 2  # pods of a gang that failed (each replaced by its controller)


def failing_jobs(snapshot: Snapshot, queue_of: Callable[[PodInfo], str | None]) -> dict[str, int]:
    """Jobs per queue that restarted `RESTARTS` times or lost `FAILED_PODS` pods ("" = none)."""
    counts: dict[str, int] = {}
    for pods in snapshot.groups.values():
        active = [p for p in pods if p.active]
        if not active:
            continue  # finished: no longer failing
        failed = sum(1 for p in pods if p.phase == "Failed")
        restarts = sum(p.restarts for p in active)
        if failed >= FAILED_PODS or restarts >= RESTARTS:
            queue = queue_of(active[0]) or ""
            counts[queue] = counts.get(queue, 0) + 1
    for node in snapshot.nodes.values():
        for pod in node.pods:
            if pod.restarts >= RESTARTS and is_single(pod.job) and pod.active:
                queue = queue_of(pod) or ""
                counts[queue] = counts.get(queue, 0) + 1
    return counts
