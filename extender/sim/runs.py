"""What the driver moves around: a job's record over its attempts (`JobRecord`), each attempt
(`Run`: its pods, created together; what its fault shows), and each pod (`SimPod`: what the
kubelet reports of it once bound).

Each job's wait, from its arrival to its first start, is split by what it waited for at each
moment (`WAIT_CAUSES`), as the last scheduling cycle of any of its pods found it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from extender.core.model.snapshot import PodInfo
from extender.sim.workload import JobSpec

# Utilisation (%) of a GPU as dcgm-exporter reports it: at work, idle, and spinning in a
# collective whose peer is gone (a hung NCCL all-reduce keeps the GPU busy).
BUSY, IDLE, HUNG = 90.0, 1.0, 100.0

# What a waiting job waits for, as its pods' last scheduling cycle found it.
WAIT_CAUSES = {
    "scheduler": "not tried yet: kube-scheduler's queue, a backlog of other pods",
    "quota": "refused by its queue: quota (max, what others' guarantees protect) or state",
    "room": "no room: no node with room for it, or none where its gang fits whole (its queue "
    "would admit it)",
    "hold": "room held for other jobs: the hold of the head of the line, other gangs' plans",
    "gang": "its gang: members not all created, or some bound while the others wait",
}


@dataclass(eq=False)
class SimPod:
    raw: dict[str, Any]
    info: PodInfo
    run: Run
    node: str | None = None
    attempts: int = 0
    parked_at: float | None = None
    in_backoff: bool = False
    last_try: float = 0.0
    # What the kubelet reports of it once bound (a fault changes it)
    phase: str = "Running"
    ready: bool = True
    waiting_reason: str = ""
    restarts: int = 0
    uid: str = field(init=False)

    def __post_init__(self) -> None:
        self.uid = self.info.uid

    @property
    def requests(self) -> Mapping[str, int]:
        return self.info.requests


@dataclass(eq=False)
class Run:
    """One attempt of a job: its pods, created together; a preempted job gets a new run."""

    record: JobRecord
    pods: list[SimPod] = field(default_factory=list)
    bound: int = 0
    started: float | None = None
    bound_since: float | None = None
    gone: bool = False
    fault: str = ""  # the fault this attempt shows ("": none)
    ends_at: float | None = None  # when it leaves if nothing acts on it
    ending: str = "completed"  # how it ends then: completed, gave up (stuck), hung (broken)
    # what its GPUs are wasted as now: not-ready (never ready, crash-looping), broken (a gang
    # that lost a member, the others hanging), idle; "": not wasted
    wasting: str = ""
    idle_since: float | None = None
    crashing: SimPod | None = None
    lost: SimPod | None = None
    # An elastic job running (`elastic.py`): its workers bound, the work it has left
    # (worker-seconds) and when that was counted.
    workers: int = 0
    work_left: float = 0.0
    progress_at: float = 0.0

    def busiest(self, pod: SimPod, since: float) -> float | None:
        """`pod`'s highest GPU utilisation (%) from `since` on, as dcgm-exporter would report
        it; None when its data does not cover all of it (not running whole since then, its
        container not up: never ready or crash-looping, or gone)."""
        if self.started is None or since < self.started or pod is self.lost:
            return None
        if self.fault == "never-ready":
            return 0.0 if pod.ready else None  # the others wait for it at the rendezvous
        if self.crashing is not None:
            return None if pod is self.crashing else HUNG
        if self.lost is not None:
            return HUNG
        if self.idle_since is not None and self.idle_since <= since:
            return IDLE
        return BUSY


@dataclass
class JobRecord:
    spec: JobSpec
    started: float | None = None
    ended: float | None = None
    preempted: int = 0
    gpu_seconds_lost: float = 0.0
    runs: int = 0
    alias: str = ""  # the name its pods go by (a preempted job comes back under a new one)
    faulty_starts: int = 0  # attempts that started showing its fault
    requeued: int = 0  # times a lifecycle rule had its controller recreate it
    outcome: str = ""  # how it ended ("": it did not): see `Run.ending`, or evicted: <rule>
    # seconds waited before the first start, by cause (WAIT_CAUSES), and the cause now
    waited: dict[str, float] = field(default_factory=dict)
    cause: str = "scheduler"
    cause_since: float = 0.0
    # An elastic job's workers over its runs (`elastic.py`): worker-seconds and seconds run with
    # its minimum or more, the fewest and the most workers it ran with.
    worker_seconds: float = 0.0
    run_seconds: float = 0.0
    fewest: int = 0
    most: int = 0

    def note(self, cause: str, now: float) -> None:
        """From `now` on, until the next note, the job waits for `cause` ("": it started)."""
        if self.started is not None and self.cause == "":
            return  # only the wait before the first start is split
        if cause != self.cause:
            self.close(now)
            self.cause = cause

    def close(self, now: float) -> None:
        """Count the time waited for the current cause up to `now`."""
        if self.cause and now > self.cause_since:
            self.waited[self.cause] = self.waited.get(self.cause, 0.0) + now - self.cause_since
        self.cause_since = now
