"""A kube-scheduler stand-in that replays a workload, in simulated time or in real time.

It behaves as tests/data/kube-scheduler/NOTES.md describes kube-scheduler v1.36:
- one pod at a time, highest priority then oldest first: its own resource and nodeSelector
  filter, then the extender's filter on the nodes left (`NodeNames`), prioritize when more than
  one node passes (the highest score wins, ties at random), then the extender's bind;
- the extender is not called when its own filter leaves no node;
- a pod rejected everywhere is parked and retried only on a cluster event (a pod created, a pod
  deleted, a node added) or when the pod itself is updated (gangplank's nudge); parked pods are
  flushed back after 5 minutes; every retry waits out its backoff (1 s doubling to 10 s);
- preemption after a failed cycle: on the nodes not failed as unresolvable, lower-priority pods
  whose removal makes room are candidates, the extender's preempt narrows them, the victims on
  the best node kept are deleted;
- a job runs its duration once every member is bound, then its pods go away;
- a cycle takes `Options.cycle_seconds` of simulated time: a backlog drains at a pace, as on a
  real kube-scheduler, and a backlog of thousands is not tried again every 10 s.
Evicted jobs (preemption or gangplank's reclaim) are re-created by their controller and wait
again. Gangs that never complete hold what their bound members hold (the baseline shows it).

Jobs with a fault (`workload.FAULTS`) waste what they hold as the kubelet and the job would
show it: a pod stuck not ready, restarts climbing, a member failed, GPUs idle (`Run.busiest`:
what dcgm-exporter would report). Evictions by gangplank's lifecycle rules (`LIFECYCLE_RULES`)
are what a controller does with them: a job evicted for not being ready, or a broken gang, is
recreated (the same job: the same pod names, new uids) and waits gangplank's backoff; one
evicted for idling or running past its time ends. The GPUs each kind of waste holds, and those
the rules free, are counted (`waste_seconds`, `freed_seconds`).

Each job's wait, from its arrival to its first start, is split by what it waited for at each
moment (`WAIT_CAUSES`), as the last scheduling cycle of any of its pods found it.
"""

from __future__ import annotations

import heapq
import itertools
import math
import random
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from extender.core.model.resources import GPU
from extender.core.model.snapshot import NodeInfo, PodInfo
from extender.kube.convert import node_from_api, pod_from_api
from extender.sim.fit import PODS, FitIndex
from extender.sim.workload import JobSpec, pod_object

BACKOFF_INITIAL = 1.0
BACKOFF_MAX = 10.0
# after the first try, the second, ...: doubling up to the most (then the most)
BACKOFF = tuple(
    itertools.takewhile(lambda d: d < BACKOFF_MAX, (BACKOFF_INITIAL * 2.0**i for i in range(64)))
)
FLUSH_AFTER = 300.0  # kube-scheduler's podMaxInUnschedulablePodsDuration
FLUSH_EVERY = 30.0
STALL_SECONDS = 3600.0
STAGGER = 0.2  # seconds between the creation stamps of one job's pods
MIN_CANDIDATES = 100  # kube-scheduler's minCandidateNodesAbsolute
# Utilisation (%) of a GPU as dcgm-exporter reports it: at work, idle, and spinning in a
# collective whose peer is gone (a hung NCCL all-reduce keeps the GPU busy).
BUSY, IDLE, HUNG = 90.0, 1.0, 100.0
CRASH_RUNS = 10.0  # seconds a crash-looping container runs before it fails again
CRASH_BACKOFF = (10.0, 20.0, 40.0, 80.0, 160.0, 300.0)  # kubelet's restart back-off, then 300 s
# What a controller does with a job gangplank's lifecycle rules evicted: recreate it (it waits
# gangplank's backoff, then runs again) or let it end.
LIFECYCLE_RULES = {
    "not-ready": "recreated",
    "stale-gang": "recreated",
    "idle": "ended",
    "max-runtime": "ended",
}

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


@dataclass
class Filtered:
    passed: list[str]
    failed: dict[str, str] = field(default_factory=dict)  # resolvable
    unresolvable: dict[str, str] = field(default_factory=dict)
    # What a refusal was for, when the extender knows: "quota", "gang", "held" (capacity is
    # held for other jobs: the driver checks whether the job would fit without it), or "".
    kind: str = ""

    def reason(self) -> str:
        for reasons in (self.unresolvable, self.failed):
            for reason in reasons.values():
                return reason
        return ""


@dataclass
class Tick:
    nudged: list[str] = field(default_factory=list)  # pod uids updated (retry now)
    evicted: list[str] = field(default_factory=list)  # pod uids the extender evicted
    rules: dict[str, str] = field(default_factory=dict)  # uid -> the rule it was evicted by


class Extender(Protocol):
    """What the driver calls: the verbs, and the cluster changes its cache must see."""

    name: str

    def start(self, nodes: Sequence[dict[str, Any]]) -> None: ...
    def created(self, pods: Sequence[SimPod], now: float) -> None: ...
    def deleted(self, pods: Sequence[SimPod], now: float) -> None: ...
    def updated(self, pods: Sequence[SimPod], now: float) -> None:
        """The kubelet reported new status of bound pods (`SimPod.phase`, `ready`, ...)."""
        ...

    def filter(self, pod: SimPod, names: list[str], now: float) -> Filtered: ...
    def prioritize(self, pod: SimPod, names: list[str], now: float) -> dict[str, int]: ...
    def preempt(
        self, pod: SimPod, candidates: dict[str, list[SimPod]], now: float
    ) -> dict[str, list[str]]: ...
    def bind(self, pod: SimPod, node: str, now: float) -> str: ...
    def tick(self, now: float) -> Tick: ...
    def stop(self) -> None: ...
    def queue_refuses(self, pod: SimPod) -> bool:
        """Whether the pod's queue refuses its job now: asked of a pod kube-scheduler found no
        room for (it never reaches the extender's filter then)."""
        ...


class Clock(Protocol):
    def wait_until(self, t: float) -> None: ...


class SimulatedClock:
    def wait_until(self, t: float) -> None:
        pass


class WallClock:
    """Real time for the demo: the driver's time is seconds since `start`."""

    def __init__(self) -> None:
        self.start = time.monotonic()

    def now(self) -> float:
        return time.monotonic() - self.start

    def wait_until(self, t: float) -> None:
        delay = t - self.now()
        if delay > 0:
            time.sleep(delay)


@dataclass
class Sample:
    t: float
    allocated: int  # GPUs held by bound pods
    incomplete: int  # of those, held by gangs not all bound
    stranded: int  # free GPUs on nodes with fewer free than the smallest waiting GPU pod asks
    free: int
    running: dict[str, int]  # GPUs of started jobs, by queue
    waiting: dict[str, int]  # jobs waiting, by queue


@dataclass
class Options:
    kick_seconds: float = 5.0  # gangplank's periodic pass (nudges, holds, reclaim), simulated
    sample_seconds: float = 300.0
    until: float | None = None  # stop here (default: when the last job ended or nothing moves)
    seed: int = 1
    stall_seconds: float = (
        STALL_SECONDS  # after the last arrival, stop once nothing moved this long
    )
    # Simulated time one scheduling cycle takes: kube-scheduler places one pod at a time, so a
    # backlog drains at 1/cycle_seconds pods a second. 0: cycles take no time (the live demo's
    # cycles take real time already).
    cycle_seconds: float = 0.0
    # After the last arrival, stop this long after it at most (None: when the work is done or
    # stalls). A run without gangs can deadlock for good while unrelated jobs trickle on.
    drain_seconds: float | None = None
    progress_every: float = 0.0  # simulated seconds between two calls of `progress`
    # A stuck job (never ready, crash-looping) is deleted by its owner this many times its
    # duration after it got stuck (see `workload.Faults`).
    stuck_factor: float = 3.0


class Driver:
    def __init__(
        self,
        nodes: Sequence[dict[str, Any]],
        jobs: Sequence[JobSpec],
        extender: Extender,
        options: Options | None = None,
        clock: Clock | None = None,
        progress: Callable[[float], None] | None = None,
        on_event: Callable[[str, str], None] | None = None,
    ) -> None:
        self.options = options or Options()
        self.extender = extender
        self.clock = clock or SimulatedClock()
        self.progress = progress
        self.on_event = on_event or (lambda kind, text: None)
        self.rng = random.Random(self.options.seed)
        self.raw_nodes = list(nodes)
        self.nodes: dict[str, NodeInfo] = {}
        self.free: dict[str, dict[str, int]] = {}
        self.on_node: dict[str, dict[str, SimPod]] = {}
        self.by_free_gpu: dict[int, dict[str, None]] = {}
        for raw in nodes:
            info = node_from_api(raw)
            self.nodes[info.name] = info
            self.free[info.name] = dict(info.allocatable)
            self.on_node[info.name] = {}
            self.by_free_gpu.setdefault(info.allocatable.get(GPU, 0), {})[info.name] = None
        self.capacity_gpus = sum(n.allocatable.get(GPU, 0) for n in self.nodes.values())
        self.records = [JobRecord(spec, cause_since=spec.arrival) for spec in jobs]
        self.now = 0.0
        self._seq = itertools.count()
        self._uids = itertools.count()
        self._events: list[tuple[float, int, str, Any]] = []
        self._active: list[tuple[int, float, int, SimPod]] = []
        self._backoff: list[tuple[float, int, SimPod]] = []
        self._free_at = 0.0  # when the scheduler is done with its current cycle
        self._last_arrival = 0.0
        self.pending: dict[str, SimPod] = {}
        self.live: dict[str, SimPod] = {}  # every pod of a run not gone, by uid
        self.parked: dict[str, SimPod] = {}
        self.fit = FitIndex(self.nodes, self.free)
        self._bound_priorities: Counter[int] = Counter()
        # figures
        self.samples: list[Sample] = []
        self.cycles = 0
        self.extender_calls: Counter[str] = Counter()
        self.preemptions = 0
        self.evictions_by_extender = 0
        # Jobs wasting what they hold: the extender is asked every pass, not only while pods
        # wait, so that it can look at running jobs (so is one whose policy has lifecycle rules).
        self.watching = any(r.spec.fault for r in self.records) or bool(
            getattr(extender, "watches_running", False)
        )
        self.waste_seconds: dict[str, float] = {}  # kind (`Run.wasting`) -> GPU-seconds held
        # What lifecycle evictions freed: (rule, GPUs, from, until when the job would have held
        # them); `freed_seconds` counts it up to the end of the run
        self.freed: list[tuple[str, int, float, float]] = []
        self.lifecycle_evictions: Counter[str] = Counter()  # rule -> jobs evicted
        self._wasting: Counter[str] = Counter()  # kind -> GPUs held now
        self.gpu_seconds = 0.0
        self.incomplete_gpu_seconds = 0.0
        self.queue_gpu_seconds: dict[str, float] = {}
        self._allocated = 0
        self._incomplete = 0
        self._running: Counter[str] = Counter()
        self._accounted_to = 0.0
        self._last_change = 0.0  # when a pod was last bound or a job last ended
        self.reasons: dict[str, str] = {}  # job -> last reason it waited for
        # GPU allocation (a share) when a pod first found no room (the FGD paper's figure)
        self.allocated_at_first_no_room: float | None = None
        self.wall_seconds = 0.0
        for record in self.records:
            self._push(record.spec.arrival, "arrive", record)
        self._push(0.0, "tick", None)
        self._push(FLUSH_EVERY, "flush", None)
        self._push(0.0, "sample", None)

    # ---- the event loop ----------------------------------
    def _push(self, t: float, kind: str, payload: Any) -> None:
        heapq.heappush(self._events, (t, next(self._seq), kind, payload))

    def run(self) -> None:
        started = time.perf_counter()
        self.extender.start(self.raw_nodes)
        self._last_arrival = max((r.spec.arrival for r in self.records), default=0.0)
        shown = -math.inf
        try:
            while self._events or self._backoff:
                t = min(self._next_wake(), self._free_at if self._active else math.inf)
                if self._ends_before(t):
                    break
                self.clock.wait_until(t)
                self.now = t
                moved = False
                while self._events and self._events[0][0] <= t:
                    _, _, kind, payload = heapq.heappop(self._events)
                    moved = self._handle(kind, payload) or moved
                if moved:
                    self._requeue_parked()
                self._schedule()
                if self.progress is not None and self.now >= shown + self.options.progress_every:
                    shown = self.now
                    self.progress(self.now)
        finally:
            self._account(self.now)
            self.extender.stop()
            self.wall_seconds = time.perf_counter() - started

    def _next_wake(self) -> float:
        """The next event's time, or the next end of a backoff."""
        return min(
            self._events[0][0] if self._events else math.inf,
            self._backoff[0][0] if self._backoff else math.inf,
        )

    def _ends_before(self, t: float) -> bool:
        """Whether the run is over before time `t`."""
        if self.options.until is not None and t > self.options.until:
            return True
        if t > self._last_arrival and not self.live:
            return True  # every job has ended
        drain = self.options.drain_seconds
        if drain is not None and t > self._last_arrival + drain:
            return True
        stall = self.options.stall_seconds
        # nothing runs and nothing has moved for an hour: it never will
        return t > self._last_arrival + stall and t > self._last_change + stall

    def _handle(self, kind: str, payload: Any) -> bool:
        """Returns whether it was a cluster event (parked pods are retried)."""
        if kind == "arrive":
            self._create_run(payload)
            return True
        if kind == "finish":
            run: Run = payload
            if not run.gone:
                run.record.ended = self.now
                run.record.outcome = run.ending
                self._last_change = self.now
                self._remove_run(run)
                self.on_event("finished", run.record.spec.name)
                return True
            return False
        if kind in ("crash", "restart", "lose", "idle"):
            run = payload
            return not run.gone and self._fault(kind, run)
        if kind == "tick":
            self._tick()
            self._push(self.now + self.options.kick_seconds, "tick", None)
            return False
        if kind == "flush":
            for pod in [
                p for p in self.parked.values() if self.now - (p.parked_at or 0) >= FLUSH_AFTER
            ]:
                self._activate(pod)
            self._push(self.now + FLUSH_EVERY, "flush", None)
            return False
        if kind == "sample":
            self._sample()
            self._push(self.now + self.options.sample_seconds, "sample", None)
            return False
        raise ValueError(kind)

    # ---- pods coming and going ----------------------------------
    def _create_run(self, record: JobRecord, again: bool = False) -> None:
        """A new attempt of `record`: under a new name (a preempted job comes back as another),
        or `again` under the same (its controller recreates the pods of the same job)."""
        record.runs += 1
        run = Run(record)
        spec = record.spec
        suffix = "" if record.runs == 1 else f"-r{record.runs - 1}"
        if not again:
            record.alias = spec.name + suffix
        named = JobSpec(**{**spec.__dict__, "name": record.alias})
        if spec.fault and record.faulty_starts < spec.faulty_runs:
            run.fault = spec.fault
        for i in range(spec.members):
            # a controller creates pods one after another: members of jobs arriving together
            # interleave in kube-scheduler's queue (its order is priority, then creation time)
            raw = pod_object(named, i, f"uid-{next(self._uids):08d}", self.now + i * STAGGER)
            if suffix and spec.members > 1:
                raw["metadata"]["labels"]["gangplank.io/gang"] = named.name
            pod = SimPod(raw, pod_from_api(raw), run)
            if run.fault == "never-ready" and i == spec.members - 1:
                # one pod never gets ready: its image does not pull, or its probe never passes
                pod.ready, pod.waiting_reason = False, spec.symptom
                pod.phase = "Pending" if spec.symptom == "ImagePullBackOff" else "Running"
            run.pods.append(pod)
            self.pending[pod.uid] = pod
            self.live[pod.uid] = pod
        self.extender.created(run.pods, self.now)
        for pod in run.pods:
            self._enqueue(pod)

    def _remove_run(self, run: Run) -> None:
        self._account(self.now)
        self._waste(run, "")
        run.gone = True
        gpus = sum(p.requests.get(GPU, 0) for p in run.pods if p.node is not None)
        if run.started is not None:
            self._running[run.record.spec.queue] -= gpus
        elif gpus:
            self._incomplete -= gpus
        for pod in run.pods:
            if pod.node is not None:
                self._release(pod)
            self.pending.pop(pod.uid, None)
            self.parked.pop(pod.uid, None)
            self.live.pop(pod.uid, None)
        self.extender.deleted(run.pods, self.now)

    def _evict(self, run: Run, why: str) -> None:
        if run.gone:
            return
        record = run.record
        if run.started is not None:
            gpus = sum(p.requests.get(GPU, 0) for p in run.pods)
            record.gpu_seconds_lost += gpus * (self.now - run.started)
        record.preempted += 1
        self.preemptions += 1
        self.on_event("preempted", f"{record.spec.name} ({why})")
        self._remove_run(run)
        self._create_run(record)

    # ---- queues ----------------------------------
    def _enqueue(self, pod: SimPod) -> None:
        info = pod.info
        heapq.heappush(self._active, (-info.priority, info.created, next(self._seq), pod))

    def _activate(self, pod: SimPod) -> None:
        """A parked pod moves on: to the active queue, or the backoff queue until its backoff
        has passed."""
        if self.parked.pop(pod.uid, None) is None:
            return
        pod.parked_at = None
        ready = self._backoff_until(pod)
        if ready > self.now:
            pod.in_backoff = True
            heapq.heappush(self._backoff, (ready, next(self._seq), pod))
        else:
            self._enqueue(pod)

    def _backoff_until(self, pod: SimPod) -> float:
        if pod.attempts == 0:
            return self.now
        if pod.attempts > len(BACKOFF):
            return pod.last_try + BACKOFF_MAX
        return pod.last_try + BACKOFF[pod.attempts - 1]

    def _requeue_parked(self) -> None:
        for pod in list(self.parked.values()):
            self._activate(pod)

    def _park(self, pod: SimPod, reason: str) -> None:
        pod.parked_at = self.now
        self.parked[pod.uid] = pod
        if reason:
            self.reasons[pod.run.record.spec.name] = reason

    # ---- one scheduling cycle ----------------------------------
    def _schedule(self) -> None:
        while self._backoff and self._backoff[0][0] <= self.now:
            _, _, pod = heapq.heappop(self._backoff)
            pod.in_backoff = False
            if pod.uid in self.pending and pod.uid not in self.parked:
                self._enqueue(pod)
        seen: set[str] = set()
        cycle = self.options.cycle_seconds
        while self._active:
            if self._free_at > self.now:
                # the next cycle starts later: go on here while nothing else happens before it
                # (the event loop would come back to this very point), else return to the loop
                t = self._free_at
                if t >= self._next_wake() or self._ends_before(t):
                    return
                self.now = t
            _, _, _, pod = heapq.heappop(self._active)
            if pod.uid not in self.pending or pod.uid in seen or pod.uid in self.parked:
                continue
            if not cycle:
                seen.add(pod.uid)  # with cycles taking no time, once each at one instant
            self._cycle(pod)
            self._free_at = self.now + cycle  # the next pod's cycle starts then

    def _cycle(self, pod: SimPod) -> None:
        self.cycles += 1
        pod.attempts += 1
        pod.last_try = self.now
        feasible = self.fit.nodes_for(pod.info)
        if not feasible:
            # its queue refusing it too, more room alone would not start it: that is the cause
            self._waits(pod, "quota" if self.extender.queue_refuses(pod) else "room")
            if not self._preempt(pod, None):
                self._park(pod, "")
            return
        self.extender_calls["filter"] += 1
        filtered = self.extender.filter(pod, feasible, self.now)
        if not filtered.passed:
            self._waits(pod, self._cause(pod, filtered.kind, feasible))
            resolvable = [n for n in feasible if n not in filtered.unresolvable]
            if not (resolvable and self._preempt(pod, resolvable)):
                self._park(pod, filtered.reason())
            return
        node = filtered.passed[0]
        if len(filtered.passed) > 1:
            self.extender_calls["prioritize"] += 1
            scores = self.extender.prioritize(pod, filtered.passed, self.now)
            best = max(scores.get(n, 0) for n in filtered.passed)
            top = [n for n in filtered.passed if scores.get(n, 0) == best]
            node = top[0] if len(top) == 1 else self.rng.choice(top)
        self.extender_calls["bind"] += 1
        error = self.extender.bind(pod, node, self.now)
        if error:
            self.reasons[pod.run.record.spec.name] = error
            ready = self._backoff_until(pod)
            pod.in_backoff = True
            heapq.heappush(self._backoff, (ready, next(self._seq), pod))
            return
        self._bound(pod, node)

    def _waits(self, pod: SimPod, cause: str) -> None:
        if cause == "room" and self.allocated_at_first_no_room is None:
            self.allocated_at_first_no_room = round(self._allocated / (self.capacity_gpus or 1), 3)
        run = pod.run
        if run.bound and run.started is None:
            cause = "gang"  # some members hold their nodes: the job waits for the others
        run.record.note(cause, self.now)

    def _cause(self, pod: SimPod, kind: str, feasible: Sequence[str]) -> str:
        """What a pod the extender refused waits for: its kind of refusal; for capacity held for
        others, "hold" only when the job's pods not bound yet would fit in what is free."""
        if kind in ("quota", "gang"):
            return kind
        if kind != "held":
            return "room"
        want = {r: a for r, a in pod.requests.items() if a > 0}
        needed = sum(1 for p in pod.run.pods if p.node is None)
        room = 0
        for name in feasible:
            free = self.free[name]
            room += min(free.get(PODS, 0), *(free.get(r, 0) // a for r, a in want.items()))
            if room >= needed:
                return "hold"
        return "room"

    def _move(self, name: str, pod: SimPod, sign: int) -> None:
        free = self.free[name]
        before = free.get(GPU, 0)
        for resource, amount in pod.requests.items():
            free[resource] = free.get(resource, 0) - sign * amount
        free[PODS] = free.get(PODS, 0) - sign
        after = free.get(GPU, 0)
        if before != after:
            del self.by_free_gpu[before][name]
            self.by_free_gpu.setdefault(after, {})[name] = None
        self.fit.moved(name)

    def _bound(self, pod: SimPod, node: str) -> None:
        self._account(self.now)
        self._last_change = self.now
        pod.node = node
        self._move(node, pod, +1)
        self.on_node[node][pod.uid] = pod
        self._bound_priorities[pod.info.priority] += 1
        del self.pending[pod.uid]
        run = pod.run
        run.bound += 1
        gpus = pod.requests.get(GPU, 0)
        self._allocated += gpus
        if run.bound < len(run.pods):
            self._incomplete += gpus
            if run.bound_since is None:
                run.bound_since = self.now
            run.record.note("gang", self.now)
            return
        self._incomplete -= sum(p.requests.get(GPU, 0) for p in run.pods) - gpus
        run.started = self.now
        record = run.record
        record.note("", self.now)
        if record.started is None:
            record.started = self.now
        self._running[record.spec.queue] += sum(p.requests.get(GPU, 0) for p in run.pods)
        if run.fault:
            self._faulty_start(run)
        else:
            run.ends_at = self.now + record.spec.duration
            self._push(run.ends_at, "finish", run)
        self.on_event("started", record.spec.name)

    def _release(self, pod: SimPod) -> None:
        node = pod.node
        assert node is not None
        self._move(node, pod, -1)
        del self.on_node[node][pod.uid]
        self._bound_priorities[pod.info.priority] -= 1
        if not self._bound_priorities[pod.info.priority]:
            del self._bound_priorities[pod.info.priority]
        self._allocated -= pod.requests.get(GPU, 0)
        pod.node = None

    # ---- preemption ----------------------------------
    def _preempt(self, pod: SimPod, names: Sequence[str] | None) -> bool:
        priority = pod.info.priority
        if not self._bound_priorities or min(self._bound_priorities) >= priority:
            return False
        want = {r: a for r, a in pod.requests.items() if a > 0}
        selector = pod.info.node_selector
        limit = max(MIN_CANDIDATES, len(self.nodes) // 10)
        candidates: dict[str, list[SimPod]] = {}
        for name in names if names is not None else self.nodes:
            node = self.nodes[name]
            if selector and any(node.labels.get(k) != v for k, v in selector.items()):
                continue
            lower = sorted(
                (p for p in self.on_node[name].values() if p.info.priority < priority),
                key=lambda p: (p.info.priority, -p.info.created),
            )
            if not lower:
                continue
            free = dict(self.free[name])
            victims = []
            for victim in lower:
                if all(free.get(r, 0) >= a for r, a in want.items()) and free.get(PODS, 0) >= 1:
                    break
                victims.append(victim)
                for r, a in victim.requests.items():
                    free[r] = free.get(r, 0) + a
                free[PODS] = free.get(PODS, 0) + 1
            if all(free.get(r, 0) >= a for r, a in want.items()):
                candidates[name] = victims
                if len(candidates) >= limit:
                    break
        if not candidates:
            return False
        self.extender_calls["preempt"] += 1
        kept = self.extender.preempt(pod, candidates, self.now)
        if not kept:
            return False
        by_uid = {p.uid: p for victims in candidates.values() for p in victims}
        chosen = min(
            kept,
            key=lambda n: (
                max((by_uid[u].info.priority for u in kept[n] if u in by_uid), default=-(2**31)),
                len(kept[n]),
                n,
            ),
        )
        for uid in kept[chosen]:
            found = by_uid.get(uid)
            if found is not None:
                self._evict(found.run, f"preempted for {pod.run.record.spec.name}")
        self._requeue_parked()
        self._enqueue(pod)
        return True

    # ---- the extender's own work ----------------------------------
    def _tick(self) -> None:
        if not self.pending and not self._incomplete and not self.watching:
            return
        tick = self.extender.tick(self.now)
        for uid in tick.nudged:
            pod = self.pending.get(uid)
            if pod is not None and uid in self.parked:
                self._activate(pod)
        runs: dict[int, tuple[Run, str]] = {}
        for uid in tick.evicted:
            found = self.live.get(uid)
            if found is not None:
                runs[id(found.run)] = (found.run, tick.rules.get(uid, ""))
        for run, rule in runs.values():
            if rule in LIFECYCLE_RULES:
                self._lifecycle_evict(run, rule)
            else:
                self.evictions_by_extender += 1
                self._evict(run, "reclaimed by gangplank")
        if runs:
            self._requeue_parked()

    # ---- faults and the lifecycle rules ----------------------------------
    def _faulty_start(self, run: Run) -> None:
        """A run showing its fault started (every member bound): play the fault out."""
        record = run.record
        spec = record.spec
        record.faulty_starts += 1
        end = self.now + spec.duration
        if run.fault == "never-ready":
            self._waste(run, "not-ready")
            end, run.ending = self.now + spec.duration * self.options.stuck_factor, "gave up"
        elif run.fault == "crash":
            self._push(self.now + spec.fault_at * spec.duration, "crash", run)
            run.ends_at = end  # until it crashes; then its owner gives up on it (pushed then)
            return
        elif run.fault == "node-loss":
            self._push(self.now + spec.fault_at * spec.duration, "lose", run)
        elif run.fault == "idle":
            self._push(self.now + spec.fault_at * spec.duration, "idle", run)
        run.ends_at = end
        self._push(end, "finish", run)

    def _fault(self, kind: str, run: Run) -> bool:
        """A fault shows (`kind`: crash, restart, lose, idle); returns whether it freed room."""
        spec = run.record.spec
        if kind == "idle":
            run.idle_since = self.now
            self._waste(run, "idle")
            return False
        if kind == "lose":
            # one member's node goes: its pod fails, the others hang on their collective
            pod = run.pods[-1]
            self._account(self.now)
            self._waste(run, "")
            pod.phase, pod.ready = "Failed", False
            gpus = pod.requests.get(GPU, 0)
            self._release(pod)
            self._running[spec.queue] -= gpus
            run.lost, run.ending = pod, "hung"
            self._waste(run, "broken")
            self._last_change = self.now
            self.extender.updated([pod], self.now)
            self.on_event("lost", f"{spec.name}: {pod.info.name} failed with its node")
            return True
        pod = run.crashing or run.pods[-1]
        pod.restarts += 1
        if kind == "crash":
            run.crashing = pod
            pod.ready, pod.waiting_reason = False, "CrashLoopBackOff"
            self._waste(run, "not-ready")
            run.ends_at, run.ending = (
                self.now + spec.duration * self.options.stuck_factor,
                "gave up",
            )
            self._push(run.ends_at, "finish", run)
        delay = CRASH_BACKOFF[min(pod.restarts, len(CRASH_BACKOFF)) - 1]
        self._push(self.now + delay + CRASH_RUNS, "restart", run)
        self.extender.updated([pod], self.now)
        return False

    def _waste(self, run: Run, kind: str) -> None:
        """From now on the GPUs `run` holds are wasted as `kind` ("": not wasted)."""
        if run.wasting == kind:
            return
        self._account(self.now)
        gpus = sum(p.requests.get(GPU, 0) for p in run.pods if p.node is not None)
        if run.wasting:
            self._wasting[run.wasting] -= gpus
        if kind:
            self._wasting[kind] += gpus
        run.wasting = kind

    def _lifecycle_evict(self, run: Run, rule: str) -> None:
        """A lifecycle rule evicted `run` whole; its controller recreates it or lets it end
        (`LIFECYCLE_RULES`). Freed: what the job would have gone on holding without the rules,
        counted at its first such eviction (the attempts after it exist because of the rule:
        what they hold is counted as they hold it)."""
        if run.gone:
            return
        record = run.record
        held = sum(p.requests.get(GPU, 0) for p in run.pods if p.node is not None)
        if run.ends_at is not None and not record.requeued:
            self.freed.append((rule, held, self.now, run.ends_at))
        self.lifecycle_evictions[rule] += 1
        self._last_change = self.now
        self.on_event("evicted", f"{record.spec.name} ({rule})")
        if LIFECYCLE_RULES[rule] == "ended":
            record.ended, record.outcome = self.now, f"evicted: {rule}"
            self._remove_run(run)
            return
        record.requeued += 1
        self._remove_run(run)
        self._create_run(record, again=True)

    # ---- figures ----------------------------------
    def freed_seconds(self) -> dict[str, float]:
        """GPU-seconds lifecycle evictions freed by the end of the run, by rule."""
        out: dict[str, float] = {}
        for rule, gpus, since, until in self.freed:
            out[rule] = out.get(rule, 0.0) + gpus * max(0.0, min(until, self.now) - since)
        return out

    def _account(self, t: float) -> None:
        """Count what was allocated since the last count: called before anything allocated
        changes (a bind, a run removed), at each sample and at the end."""
        span = t - self._accounted_to
        if span > 0:
            self.gpu_seconds += self._allocated * span
            self.incomplete_gpu_seconds += self._incomplete * span
            for kind, gpus in self._wasting.items():
                self.waste_seconds[kind] = self.waste_seconds.get(kind, 0.0) + gpus * span
            for queue, gpus in self._running.items():
                self.queue_gpu_seconds[queue] = self.queue_gpu_seconds.get(queue, 0.0) + gpus * span
            self._accounted_to = t

    def _sample(self) -> None:
        self._account(self.now)
        smallest = min(
            (p.requests.get(GPU, 0) for p in self.pending.values() if p.requests.get(GPU, 0)),
            default=0,
        )
        free = sum(f * len(names) for f, names in self.by_free_gpu.items())
        stranded = (
            sum(f * len(names) for f, names in self.by_free_gpu.items() if 0 < f < smallest)
            if smallest
            else 0
        )
        waiting: Counter[str] = Counter()
        for run in {id(p.run): p.run for p in self.pending.values()}.values():
            waiting[run.record.spec.queue] += 1
        self.samples.append(
            Sample(
                self.now,
                self._allocated,
                self._incomplete,
                stranded,
                free,
                {q: g for q, g in self._running.items() if g},
                dict(waiting),
            )
        )
