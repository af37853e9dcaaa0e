"""What a plan moves and what it tells: the moves handed to the service, and their Events.

A `Move` is a whole plan (every job moved for one waiting job, checked by a dry run together);
each `MovedJob` says how it moves: suspended through its workload and resumed
MOVE_RESUME_SECONDS later (`Lifecycle.move`: a kept record that spends no requeue), or its pods
evicted for its controller to recreate them on the nodes kept for them. The messages name the
moved job, its GPUs, the nodes it goes from and to, and the waiting job it makes room for.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from extender.core.consolidation.movable import Way
from extender.core.lifecycle.lifecycle import Lifecycle
from extender.core.lifecycle.workloads import Suspension, Workload
from extender.core.model.keys import job_key, job_name
from extender.core.model.resources import GPU
from extender.core.model.snapshot import PodInfo
from extender.core.preemption.evictions import Eviction

MOVE_RESUME_SECONDS = 3.0  # a job suspended to move it is resumed this long after


@dataclass(frozen=True, slots=True)
class MovedJob:
    """One job of a plan, and how it moves (the service carries it out)."""

    key: str
    way: Way
    pods: tuple[PodInfo, ...]  # its running pods (the old ones)
    targets: Mapping[str, str]  # old pod uid -> its new node
    message: str  # what its Event says
    suspension: Suspension | None = None  # Way.SUSPEND
    evictions: tuple[Eviction, ...] = ()  # Way.EVICT


@dataclass(frozen=True, slots=True)
class Move:
    """A whole plan: every job moved for waiting job `key`, checked (dry run) together."""

    key: str
    jobs: tuple[MovedJob, ...]

    def pods(self) -> list[tuple[str, str, str]]:
        return [(p.namespace, p.name, p.uid) for j in self.jobs for p in j.pods]


def waiting_job(key: str, pending: Sequence[PodInfo]) -> str:
    """How the messages name the waiting job: `train (8 GPUs in one node)`."""
    need = sum(p.requests.get(GPU, 0) for p in pending)
    return f"{job_name(key)} ({need} GPUs{' in one node' if len(pending) == 1 else ''})"


def move_message(
    key: str, pods: Sequence[PodInfo], targets: Mapping[str, tuple[str, str]], whom: str
) -> str:
    """What moving job `key` (its `pods`, each uid from its old node to its new) says."""
    gpus = sum(p.requests.get(GPU, 0) for p in pods)
    routes = ", ".join(sorted({f"from node {old} to {new}" for old, new in targets.values()}))
    return f"gangplank moves {job_name(key)} ({gpus} GPUs) {routes} to make room for {whom}"


def planned_message(whom: str, jobs: Sequence[MovedJob]) -> str:
    """What the waiting job's ConsolidationPlanned Event says."""
    names = "; ".join(j.message.removeprefix("gangplank ") for j in jobs)
    return (
        f"{whom} fits once gangplank moves {len(jobs)} job(s), whose new places are kept: {names}"
    )


def moved_job(
    lifecycle: Lifecycle,
    key: str,
    way: Way,
    workload: Workload | None,
    pods: tuple[PodInfo, ...],
    targets: Mapping[str, tuple[str, str]],
    message: str,
    queue: str,
    waiting: PodInfo,
    now: float,
) -> MovedJob:
    """How job `key` moves: its suspension (kept by `lifecycle`), or the evictions of its pods
    (told themselves, so no Preempting Event: the waiting job is told by its own Event)."""
    new = {uid: to for uid, (_, to) in targets.items()}
    if way is Way.SUSPEND:
        assert workload is not None
        suspension = lifecycle.move(key, pods, workload, queue, message, now, MOVE_RESUME_SECONDS)
        return MovedJob(key, way, pods, new, message, suspension=suspension)
    evictions = tuple(
        Eviction(
            job=key,
            namespace=p.namespace,
            name=p.name,
            uid=p.uid,
            grace_seconds=None,
            rule="consolidation",
            queue=queue,
            gpu_seconds=p.gpu_seconds(now),
            message=f"evicted by gangplank to move it: {message} (its controller recreates "
            "it there)",
            preemptor=(p.namespace, p.name),
            preemptor_message=message,
            plan=job_key(waiting),
        )
        for p in pods
    )
    return MovedJob(key, way, pods, new, message, evictions=evictions)
