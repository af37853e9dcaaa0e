"""A simulated cluster that drives the decision core the way kube-scheduler drives gangplank.

Simulated time, event by event: jobs (single pods or gangs) arrive, are scheduled, run their
duration and finish. On every cluster event the pending pods are tried in kube-scheduler's order
(priority, then creation) with kube-scheduler's own resource fit first, then the engine's
filter; a pod that passes is bound to the first node kept. Between events the engine's
periodic work runs (`kick_candidates`: holds, nudges) as the kicker thread would.
"""

from __future__ import annotations

import heapq
import itertools
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from extender.core.engine import Engine
from extender.core.gangs.placer import GangConfig
from extender.core.model.answers import BindRequest
from extender.core.placement.fit import fits
from extender.core.queues.policy import Policy
from extender.kube.convert import pod_from_api
from tests.builders import pod
from tests.cluster import Cluster

_seq = itertools.count()


@dataclass
class Job:
    name: str
    queue: str
    pods: list[dict[str, Any]]
    duration: float
    submitted: float
    started: float | None = None
    gpus: int = 0


@dataclass
class CoreSim:
    nodes: list[dict[str, Any]]
    policy: Policy
    hold_seconds: float = 120.0
    now: float = 0.0
    jobs: dict[str, Job] = field(default_factory=dict)
    gpu_seconds: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.cluster = Cluster(nodes=self.nodes)
        self.co = Engine(GangConfig(hold_seconds=self.hold_seconds), self.policy)
        self._pending: dict[str, tuple[Job, dict[str, Any]]] = {}  # pod name -> (job, pod)
        self._ends: list[tuple[float, int, str]] = []  # (end, seq, job name)
        self._running_gpus: Counter[str] = Counter()
        self.evicted: set[str] = set()

    # ---- workload ----------------------------------
    def submit(self, name: str, queue: str, *, gpu: int, duration: float, members: int = 1) -> Job:
        created = f"2026-12-01T00:00:00.{next(_seq):06d}Z"  # creation order = submission order
        labels = {"gangplank.io/queue": queue}
        annotations: dict[str, str] = {}
        if members > 1:
            labels["gangplank.io/gang"] = name
            annotations["gangplank.io/gang-size"] = str(members)
        pods = [
            pod(
                f"{name}-{i}" if members > 1 else name,
                gpu=gpu,
                cpu="1",
                labels=labels,
                annotations=annotations,
                created=created,
            )
            for i in range(members)
        ]
        job = Job(name, queue, pods, duration, self.now, gpus=gpu * members)
        self.jobs[name] = job
        for p in pods:
            self.cluster.add("pods", p)
            self._pending[p["metadata"]["name"]] = (job, p)
        return job

    def waiting(self, queue: str) -> int:
        return len({j.name for j, _ in self._pending.values() if j.queue == queue})

    # ---- driving ----------------------------------
    def _free(self) -> dict[str, dict[str, int]]:
        return {
            n.name: {k: n.allocatable.get(k, 0) - n.requested.get(k, 0) for k in n.allocatable}
            for n in self.cluster.snap().nodes.values()
        }

    def _evict(self) -> None:
        """Carry out the evictions the engine planned (the runtime's evictor, at once)."""
        for eviction in self.co.preemption.take_evictions():
            for job in self.jobs.values():
                match = [p for p in job.pods if p["metadata"]["uid"] == eviction.uid]
                if match and job.started is not None and job.name not in self.evicted:
                    self.evicted.add(job.name)
                    for p in job.pods:
                        self.cluster.delete("pods", p)
                    self._running_gpus[job.queue] -= job.gpus

    def schedule(self) -> None:
        """One pass over the pending pods, as after a cluster event."""
        self.co.kick_candidates(self.cluster.snap(), self.now)
        self._evict()
        order = sorted(
            self._pending.values(),
            key=lambda jp: (-jp[1]["spec"]["priority"], jp[1]["metadata"]["creationTimestamp"]),
        )
        for job, raw in order:
            info = pod_from_api(raw)
            free = self._free()
            feasible = sorted(n for n, room in free.items() if fits(info.requests, room))
            if not feasible:
                continue
            result = self.co.filter(self.cluster.snap(), info, feasible, self.now)
            if not result.passed:
                continue
            self._bind(job, raw, result.passed[0])
        self.co.kick_candidates(self.cluster.snap(), self.now)

    def _bind(self, job: Job, raw: dict[str, Any], node_name: str) -> None:
        meta = raw["metadata"]
        self.co.bound(BindRequest(meta["namespace"], meta["name"], meta["uid"], node_name))
        # Simulated time counts from the epoch: a start time the core compares with `now`.
        started = datetime.fromtimestamp(max(self.now, 1.0), UTC).isoformat()
        bound = {
            **raw,
            "spec": {**raw["spec"], "nodeName": node_name},
            "status": {"phase": "Running", "startTime": started},
        }
        self.cluster.add("pods", bound)
        job.pods = [bound if p["metadata"]["uid"] == meta["uid"] else p for p in job.pods]
        del self._pending[meta["name"]]
        if all(p["metadata"]["name"] not in self._pending for p in job.pods):
            job.started = self.now
            self._running_gpus[job.queue] += job.gpus
            heapq.heappush(self._ends, (self.now + job.duration, next(_seq), job.name))

    def _finish(self, job: Job) -> None:
        for p in job.pods:
            self.cluster.add("pods", {**p, "status": {"phase": "Succeeded"}})
        self._running_gpus[job.queue] -= job.gpus

    def advance(self, until: float, *, refill: Any = None, measure_from: float = 0.0) -> None:
        """Run events up to `until`; `refill(sim)` is called after each event (keeps queues
        saturated); GPU-seconds per queue are counted from `measure_from` on."""
        self.schedule()
        while self._ends and self._ends[0][0] <= until:
            end, _, name = heapq.heappop(self._ends)
            self._count(end, measure_from)
            self.now = end
            if name not in self.evicted:
                self._finish(self.jobs[name])
            while self._ends and self._ends[0][0] == end:
                _, _, other = heapq.heappop(self._ends)
                if other not in self.evicted:
                    self._finish(self.jobs[other])
            if refill is not None:
                refill(self)
            self.schedule()
        self._count(until, measure_from)
        self.now = until

    def _count(self, to: float, measure_from: float) -> None:
        start = max(self.now, measure_from)
        if to > start:
            for queue, gpus in self._running_gpus.items():
                self.gpu_seconds[queue] = self.gpu_seconds.get(queue, 0.0) + gpus * (to - start)
