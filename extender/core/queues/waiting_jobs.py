"""Waiting jobs: the pending pods of gangplank's schedulers in one cache group, grouped into jobs
(a gang whole, a pod alone).

`PendingJobs` remembers the single-pod jobs it made per group, and makes one again only when the
pod object changed: a refresh that looks again at a group with thousands of pending pods reuses
them instead of building them anew.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from extender.core.model.keys import is_single, job_key, job_name
from extender.core.model.resources import total
from extender.core.model.snapshot import PodInfo

QKey = tuple[str, str]  # a cache group: (queue label, namespace)


@dataclass(frozen=True, slots=True)
class WaitingJob:
    key: str
    queue: str
    priority: int
    created: float
    requests: Mapping[str, int]  # its pending pods together
    pods: tuple[PodInfo, ...]

    @property
    def name(self) -> str:
        return job_name(self.key)


class PendingJobs:
    """Groups the pending pods of a cache group into the jobs waiting in its queue."""

    def __init__(self, scheduler_names: Collection[str]) -> None:
        self.scheduler_names = frozenset(scheduler_names)
        self._single_of: dict[QKey, dict[str, tuple[PodInfo, WaitingJob]]] = {}

    def jobs(self, qkey: QKey, queue: str, pods: Sequence[PodInfo]) -> list[WaitingJob]:
        grouped: dict[str, list[PodInfo]] = {}
        jobs = []
        # A pod alone is a job; it is made again only when the pod object changed.
        known = self._single_of.get(qkey, {})
        singles: dict[str, tuple[PodInfo, WaitingJob]] = {}
        for pod in pods:
            if pod.scheduler_name not in self.scheduler_names:
                continue
            cached = known.get(pod.uid)
            if cached is not None and cached[0] is pod:
                singles[pod.uid] = cached
                jobs.append(cached[1])
                continue
            key: str = job_key(pod)
            if is_single(key):
                job = WaitingJob(key, queue, pod.priority, pod.created, dict(pod.requests), (pod,))
                singles[pod.uid] = (pod, job)
                jobs.append(job)
            else:
                grouped.setdefault(key, []).append(pod)
        self._single_of[qkey] = singles
        for key, members in grouped.items():
            jobs.append(
                WaitingJob(
                    key=key,
                    queue=queue,
                    priority=max(p.priority for p in members),
                    created=min(p.created for p in members),
                    requests=total(p.requests for p in members),
                    pods=tuple(members),
                )
            )
        return jobs
