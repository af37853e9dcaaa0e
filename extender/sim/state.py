"""What the driver keeps of the simulated cluster, and the bookkeeping every part of it shares:
nodes and what is free on them, the pods and runs alive, the scheduling queue's contents, the
events to come, and the figures (GPU-seconds allocated, held by incomplete gangs, wasted, by
queue; samples over time). Runs are created, bound, released, evicted and removed here; the
kube-scheduler model (`kube_scheduler.py`) decides which pod goes where and when, the fault
play (`faults.py`) what jobs with faults do, and `driver.py` runs the event loop.
"""

from __future__ import annotations

import heapq
import itertools
import math
import random
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from extender.core.model.resources import GPU
from extender.core.model.snapshot import NodeInfo
from extender.kube.convert import node_from_api, pod_from_api
from extender.sim.calls import Extender
from extender.sim.fit import PODS, FitIndex
from extender.sim.options import (
    FLUSH_EVERY,
    STAGGER,
    Clock,
    Options,
    Sample,
    SimulatedClock,
)
from extender.sim.periods import PeriodTotals
from extender.sim.plays import Plays
from extender.sim.runs import JobRecord, Run, SimPod
from extender.sim.workload import JobSpec, pod_object


class DriverState(Plays):
    """The simulated cluster as the driver keeps it (see the module's docstring)."""

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
        # The extender keeps a usage history (the policy's `fairness:`): asked every pass too.
        self.samples_usage = bool(getattr(extender, "samples_usage", False))
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
        # Elastic jobs running (`elastic.py`): how many, their workers bound and their maximum
        self._elastic_jobs = self._elastic_workers = self._elastic_most = 0
        self.extras_started = self.extras_taken = 0
        seconds = self.options.period_seconds
        self.periods = PeriodTotals(seconds) if seconds > 0 else None
        self._last_change = 0.0  # when a pod was last bound or a job last ended
        self.reasons: dict[str, str] = {}  # job -> last reason it waited for
        # GPU allocation (a share) when a pod first found no room (the FGD paper's figure)
        self.allocated_at_first_no_room: float | None = None
        self.wall_seconds = 0.0
        # Consolidation (`moves.py`): the node held for each pod a move places, what moved
        self.held: dict[str, str] = {}  # pod uid -> node
        self.jobs_moved = 0
        self.gpus_moved = 0
        self.move_lost_seconds = 0.0  # GPU-seconds the moved jobs had run (their work restarts)
        self._moved_at: list[float] = []  # when each job moved in the last minute
        self._tried: dict[str, float] = {}  # job -> when it was last consolidated for
        for record in self.records:
            self._push(record.spec.arrival, "arrive", record)
        self._push(0.0, "tick", None)
        self._push(FLUSH_EVERY, "flush", None)
        self._push(0.0, "sample", None)

    def _push(self, t: float, kind: str, payload: Any) -> None:
        heapq.heappush(self._events, (t, next(self._seq), kind, payload))

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

    def _create_run(self, record: JobRecord, again: bool = False) -> Run:
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
        for i in range(spec.pods):
            # a controller creates pods one after another: members of jobs arriving together
            # interleave in kube-scheduler's queue (its order is priority, then creation time)
            raw = pod_object(named, i, f"uid-{next(self._uids):08d}", self.now + i * STAGGER)
            if suffix and spec.pods > 1:
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
        return run

    def _remove_run(self, run: Run) -> None:
        self._account(self.now)
        self._waste(run, "")
        run.gone = True
        gpus = sum(p.requests.get(GPU, 0) for p in run.pods if p.node is not None)
        if run.started is not None:
            self._running[run.record.spec.queue] -= gpus
            if run.record.spec.elastic:
                self._elastic_gone(run)
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
            gpus = sum(p.requests.get(GPU, 0) for p in run.pods if p.node is not None)
            record.gpu_seconds_lost += gpus * (self.now - run.started)
        record.preempted += 1
        self.preemptions += 1
        self.on_event("preempted", f"{record.spec.name} ({why})")
        self._remove_run(run)
        self._create_run(record)

    def _enqueue(self, pod: SimPod) -> None:
        info = pod.info
        heapq.heappush(self._active, (-info.priority, info.created, next(self._seq), pod))

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
        if run.started is not None:  # an extra worker of an elastic job running
            self._extra_bound(run, pod)
            return
        if run.bound < run.record.spec.members:
            self._incomplete += gpus
            if run.bound_since is None:
                run.bound_since = self.now
            run.record.note("gang", self.now)
            return
        held = sum(p.requests.get(GPU, 0) for p in run.pods if p.node is not None)
        self._incomplete -= held - gpus
        run.started = self.now
        record = run.record
        record.note("", self.now)
        if record.started is None:
            record.started = self.now
        self._running[record.spec.queue] += held
        if run.fault:
            self._faulty_start(run)
        elif record.spec.elastic:
            self._elastic_start(run)
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
            if self.periods is not None:
                self._by_period(self.periods, self._accounted_to, t)
            self._accounted_to = t

    def _by_period(self, periods: PeriodTotals, start: float, end: float) -> None:
        add = periods.add
        for queue, gpus in self._running.items():
            add(f"queue:{queue}", start, end, gpus)
        add("elastic jobs", start, end, self._elastic_jobs)
        add("elastic workers", start, end, self._elastic_workers)
        add("elastic most", start, end, self._elastic_most)

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
            if run.started is None:  # not an elastic job's extras
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
