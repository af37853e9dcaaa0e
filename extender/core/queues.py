"""Quota accounting: what each queue uses, what waits in it, and what its guarantee protects.

`QueueBook` reads a snapshot and what is admitted but not bound yet (gang reservations, pods in
flight between filter and bind), and keeps, per queue and rolled up the tree: `used` (requests of
bound pods plus what is admitted, of the tracked resources), the waiting
jobs (pending pods of gangplank's schedulers, grouped into jobs: a gang whole, a pod alone) and
`protected` — the part of a queue's guarantee that its waiting work needs and does not have yet,
which no other queue may borrow.

It is incremental: the cache groups pods by (queue label, namespace), and a refresh looks again
only at the groups whose usage or pending pods changed since the last snapshot. The derived
numbers are rebuilt when anything changed (one pass over the queues).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from extender.core.gang import job_key, job_name
from extender.core.model import PodInfo, Snapshot
from extender.core.policy import Policy
from extender.core.resources import Resources

QKey = tuple[str, str]
# Always counted (usage, fair shares), whether or not the policy names them.
TRACKED = frozenset({"nvidia.com/gpu", "cpu", "memory"})


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


def _add(into: dict[str, int], amounts: Mapping[str, int], sign: int = 1) -> None:
    for name, amount in amounts.items():
        into[name] = into.get(name, 0) + sign * amount


@dataclass
class QueueState:
    """Derived per queue, rolled up: a parent counts its subtree. Amounts of the resources the
    policy names, and of GPUs, cpu and memory (for fair shares) in any case."""

    used: dict[str, int] = field(default_factory=dict)
    reserved: dict[str, int] = field(default_factory=dict)  # gang plans not bound yet
    demand: dict[str, int] = field(default_factory=dict)  # waiting jobs (open queues)
    protected: dict[str, int] = field(default_factory=dict)
    waiting_jobs: int = 0


class QueueBook:
    def __init__(self, policy: Policy, scheduler_names: Collection[str] = ("gangplank",)) -> None:
        self.policy = policy
        self.scheduler_names = frozenset(scheduler_names)
        self.governed = policy.resources  # quota applies to these: some queue names them
        self.tracked = policy.resources | TRACKED  # counted for use and fair shares
        self.guarantee = _guarantees(policy)
        self._qmap: dict[QKey, str | None] = {}
        self._seen_usage: dict[QKey, Resources] = {}
        self._seen_pending: dict[QKey, tuple[PodInfo, ...]] = {}
        self._jobs_of: dict[QKey, list[WaitingJob]] = {}
        self._own_used: dict[str, dict[str, int]] = {q: {} for q in policy.queues}
        self._queue_keys: dict[str, set[QKey]] = {q: set() for q in policy.queues}
        self._waiting: dict[str, list[WaitingJob]] = {q: [] for q in policy.queues}
        self._dirty_waiting: set[str] = set()
        self._snapshot: Snapshot | None = None
        self._reservations: Mapping[str, Resources] = {}
        self._planned: frozenset[str] = frozenset()
        self.state: dict[str, QueueState] = {q: QueueState() for q in policy.queues}
        self.capacity: dict[str, int] = {}
        self.idle: dict[str, int] = {}
        self.waiting_keys: dict[str, WaitingJob] = {}

    # ---- reading the snapshot ------------------------------------------
    def queue_of_key(self, qkey: QKey) -> str | None:
        if qkey in self._qmap:
            return self._qmap[qkey]
        queue, _ = self.policy.resolve(*qkey)
        if queue is not None and not self.policy.is_leaf(queue):
            queue = None
        self._qmap[qkey] = queue
        return queue

    def refresh(
        self,
        snapshot: Snapshot,
        reservations: Mapping[str, Resources],
        planned: Collection[str] = (),
    ) -> None:
        """Bring the book up to `snapshot`; `reservations` are the requests admitted but not bound
        yet, by queue; `planned` the jobs they belong to (not waiting any more)."""
        planned = frozenset(planned)
        same_plans = reservations == self._reservations and planned == self._planned
        if snapshot is self._snapshot and same_plans:
            return
        changed = not same_plans
        usage = snapshot.queue_usage
        for qkey in self._seen_usage.keys() | usage.keys():
            new, old = usage.get(qkey), self._seen_usage.get(qkey)
            if new is old:
                continue
            changed = True
            queue = self.queue_of_key(qkey)
            if queue is not None:
                own = self._own_used[queue]
                if old:
                    _add(own, {k: v for k, v in old.items() if k in self.tracked}, -1)
                if new:
                    _add(own, {k: v for k, v in new.items() if k in self.tracked})
        self._seen_usage = dict(usage)
        pending = snapshot.queue_pending
        for qkey in self._seen_pending.keys() | pending.keys():
            now_pods, old_pods = pending.get(qkey), self._seen_pending.get(qkey)
            if now_pods is old_pods:
                continue
            changed = True
            queue = self.queue_of_key(qkey)
            if queue is None:
                continue
            self._jobs_of[qkey] = self._jobs(queue, now_pods or ())
            self._queue_keys[queue].add(qkey)
            self._dirty_waiting.add(queue)
        self._seen_pending = dict(pending)
        if planned != self._planned:
            self._dirty_waiting |= {q for q, keys in self._queue_keys.items() if keys}
        self._snapshot = snapshot
        self._reservations = dict(reservations)
        self._planned = planned
        if changed or snapshot.capacity != self.capacity:
            self._derive(snapshot)

    def _jobs(self, queue: str, pods: Sequence[PodInfo]) -> list[WaitingJob]:
        grouped: dict[str, list[PodInfo]] = {}
        for pod in pods:
            if pod.scheduler_name in self.scheduler_names:
                grouped.setdefault(job_key(pod), []).append(pod)
        jobs = []
        for key, members in grouped.items():
            requests: dict[str, int] = {}
            for pod in members:
                _add(requests, pod.requests)
            jobs.append(
                WaitingJob(
                    key=key,
                    queue=queue,
                    priority=max(p.priority for p in members),
                    created=min(p.created for p in members),
                    requests=requests,
                    pods=tuple(members),
                )
            )
        return jobs

    def _derive(self, snapshot: Snapshot) -> None:
        policy, tracked = self.policy, self.tracked
        for queue in self._dirty_waiting:
            jobs = [
                j
                for qkey in self._queue_keys[queue]
                for j in self._jobs_of.get(qkey, ())
                if j.key not in self._planned
            ]
            jobs.sort(key=lambda j: (-j.priority, j.created, j.key))
            self._waiting[queue] = jobs
        self._dirty_waiting.clear()
        self.waiting_keys = {j.key: j for jobs in self._waiting.values() for j in jobs}
        reserved_by_queue = {
            q: {k: v for k, v in amounts.items() if k in tracked}
            for q, amounts in self._reservations.items()
            if q in policy.queues
        }
        state: dict[str, QueueState] = {}
        # Children before parents: walk the tree bottom-up.
        for name in _bottom_up(policy):
            spec = policy.queues[name]
            s = QueueState()
            _add(s.used, self._own_used[name])
            _add(s.reserved, reserved_by_queue.get(name, {}))
            _add(s.used, s.reserved)
            waiting = self._waiting.get(name, [])
            s.waiting_jobs = len(waiting)
            if spec.state == "open":
                for job in waiting:
                    _add(s.demand, {k: v for k, v in job.requests.items() if k in tracked})
            kids = policy.children.get(name, ())
            for kid in kids:
                child = state[kid]
                _add(s.used, child.used)
                _add(s.reserved, child.reserved)
                _add(s.demand, child.demand)
                s.waiting_jobs += child.waiting_jobs
                _add(s.protected, child.protected)
            # What its guarantee still owes to work waiting in it; at least what its children's
            # guarantees protect.
            guarantee = self.guarantee[name]
            for resource, amount in s.demand.items():
                owed = min(amount, max(0, guarantee.get(resource, 0) - s.used.get(resource, 0)))
                if owed > s.protected.get(resource, 0):
                    s.protected[resource] = owed
            state[name] = s
        self.state = state
        self.capacity = dict(snapshot.capacity)
        reserved_total: dict[str, int] = {}
        for amounts in self._reservations.values():
            _add(reserved_total, amounts)
        self.idle = {
            k: snapshot.capacity.get(k, 0) - snapshot.allocated.get(k, 0) - reserved_total.get(k, 0)
            for k in tracked
        }

    # ---- questions ------------------------------------------
    def waiting(self, queue: str) -> list[WaitingJob]:
        """Jobs waiting in a leaf queue: priority, then age."""
        return self._waiting.get(queue, [])

    def borrowed(self, queue: str) -> dict[str, int]:
        s, g = self.state[queue], self.guarantee[queue]
        return {
            k: s.used.get(k, 0) - g.get(k, 0)
            for k in self.governed
            if s.used.get(k, 0) > g.get(k, 0)
        }

    def unused_guarantee(self, queue: str) -> dict[str, int]:
        s, g = self.state[queue], self.guarantee[queue]
        return {k: a - s.used.get(k, 0) for k, a in g.items() if a > s.used.get(k, 0)}

    def share(self, queue: str, extra: Mapping[str, int] | None = None) -> float:
        """Dominant-resource share against the queue's weight (lower goes first)."""
        used = self.state[queue].used
        best = 0.0
        for resource, total in self.capacity.items():
            if resource not in self.tracked or total <= 0:
                continue
            amount = used.get(resource, 0) + (extra or {}).get(resource, 0)
            best = max(best, amount / total)
        return best / self.policy.queues[queue].weight


def _guarantees(policy: Policy) -> dict[str, dict[str, int]]:
    """Each queue's guarantee; a parent that leaves a resource out guarantees its children's sum."""
    out: dict[str, dict[str, int]] = {}
    for name in _bottom_up(policy):
        spec = policy.queues[name]
        summed: dict[str, int] = {}
        for kid in policy.children.get(name, ()):
            _add(summed, out[kid])
        out[name] = {**summed, **spec.guarantee}
    return out


def _bottom_up(policy: Policy) -> list[str]:
    order: list[str] = []

    def visit(name: str) -> None:
        for kid in policy.children.get(name, ()):
            visit(kid)
        order.append(name)

    for top in policy.children.get(None, ()):
        visit(top)
    return order
