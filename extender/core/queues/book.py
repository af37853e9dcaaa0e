"""Quota accounting: what each queue uses, what waits in it, and what its guarantee protects.

`QueueBook` reads a snapshot and what is admitted but not bound yet (gang reservations, pods in
flight between filter and bind), and keeps, per queue and rolled up the tree: `used` (requests of
bound pods plus what is admitted, of the tracked resources), the waiting
jobs (pending pods of gangplank's schedulers, grouped into jobs: a gang whole, a pod alone) and
`protected` — the part of a queue's guarantee that its waiting work needs and does not have yet,
which no other queue may borrow (only while some waiting job fits in what the guarantee has left:
work that must borrow anyway is not protected).

It is incremental: the cache groups pods by (queue label, namespace), and a refresh looks again
only at the groups whose usage or pending pods changed since the last snapshot. The derived
numbers are rebuilt when anything changed (one pass over the queues). Pending pods become jobs in
`waiting_jobs`; what a guarantee is and protects is worked out in `guarantees`.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field

from extender.core.model.resources import Resources
from extender.core.model.snapshot import PodInfo, Snapshot
from extender.core.queues.guarantees import guarantees, protected
from extender.core.queues.policy import Policy
from extender.core.queues.waiting_jobs import PendingJobs, QKey, WaitingJob

# Always counted (usage, fair shares), whether or not the policy names them.
TRACKED = frozenset({"nvidia.com/gpu", "cpu", "memory"})


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
    # The smallest need of one waiting job, per resource, in the queue and below (open queues).
    smallest: dict[str, int] = field(default_factory=dict)
    waiting_jobs: int = 0


class QueueBook:
    def __init__(self, policy: Policy, scheduler_names: Collection[str] = ("gangplank",)) -> None:
        self.policy = policy
        self.scheduler_names = frozenset(scheduler_names)
        self.governed = policy.resources  # quota applies to these: some queue names them
        self.tracked = policy.resources | TRACKED  # counted for use and fair shares
        self.guarantee = guarantees(policy)
        self._depth = {q: len(policy.path(q)) for q in policy.queues}
        self._paths = {q: policy.path(q) for q in policy.queues}
        self._open = {
            q: all(policy.queues[a].state == "open" for a in self._paths[q]) for q in policy.queues
        }
        self._qmap: dict[QKey, str | None] = {}
        self._seen_usage: Mapping[QKey, Resources] = {}
        self._seen_pending: Mapping[QKey, tuple[PodInfo, ...]] = {}
        self._jobs_of: dict[QKey, list[WaitingJob]] = {}
        self._pending_jobs = PendingJobs(self.scheduler_names)
        self._queue_keys: dict[str, set[QKey]] = {q: set() for q in policy.queues}
        self._all_jobs: dict[str, WaitingJob] = {}  # pending jobs in queues, admitted ones too
        self._waiting: dict[str, list[WaitingJob]] = {q: [] for q in policy.queues}
        self._own_demand: dict[str, dict[str, int]] = {q: {} for q in policy.queues}
        self._own_reserved: dict[str, dict[str, int]] = {}
        self._own_waiting: dict[str, int] = {}
        self._own_smallest: dict[str, dict[str, int]] = {}
        self._kids_protected: dict[str, dict[str, int]] = {q: {} for q in policy.queues}
        self._touched: set[str] = set()
        self._snapshot: Snapshot | None = None
        self._reservations: Mapping[str, Resources] = {}
        self._planned: frozenset[str] = frozenset()
        self.state: dict[str, QueueState] = {q: QueueState() for q in policy.queues}
        self.capacity: dict[str, int] = {}
        self.idle: dict[str, int] = {}
        self.waiting_keys: dict[str, WaitingJob] = {}
        self.version = 0  # moves whenever a refresh had something new to read
        # Each queue's decayed use from the usage history (`usage_history.average`), rolled up;
        # empty while the policy keeps no history or it is not known (the order is today's).
        self.past: Mapping[str, Mapping[str, float]] = {}

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
        yet, by queue; `planned` the jobs they belong to (not waiting any more).

        Only what changed is looked at: the cache's groups whose usage or pending pods are new
        objects, the queues whose reservations or admitted jobs changed; their differences are
        added up the tree, and what guarantees protect is worked out again on those paths."""
        planned = frozenset(planned)
        if (
            snapshot is self._snapshot
            and planned == self._planned
            and reservations == self._reservations
        ):
            return
        self.version += 1
        tracked = self.tracked
        usage, pending = snapshot.queue_usage, snapshot.queue_pending
        keys = self._changed_keys(snapshot)
        for qkey in keys:
            new, old = usage.get(qkey), self._seen_usage.get(qkey)
            if new is old:
                continue
            queue = self.queue_of_key(qkey)
            if queue is not None:
                delta: dict[str, int] = {}
                _add(delta, {k: v for k, v in (old or {}).items() if k in tracked}, -1)
                _add(delta, {k: v for k, v in (new or {}).items() if k in tracked})
                self._spread(queue, "used", delta)
        self._seen_usage = usage
        dirty: set[str] = set()
        for qkey in keys:
            now_pods, old_pods = pending.get(qkey), self._seen_pending.get(qkey)
            if now_pods is old_pods:
                continue
            queue = self.queue_of_key(qkey)
            if queue is None:
                continue
            for job in self._jobs_of.get(qkey, ()):
                self._all_jobs.pop(job.key, None)
            jobs = self._pending_jobs.jobs(qkey, queue, now_pods or ())
            self._jobs_of[qkey] = jobs
            self._all_jobs.update((j.key, j) for j in jobs)
            self._queue_keys[queue].add(qkey)
            dirty.add(queue)
        self._seen_pending = pending
        for key in planned ^ self._planned:
            admitted = self._all_jobs.get(key)
            if admitted is not None:
                dirty.add(admitted.queue)
        self._planned = planned
        for queue in dirty:
            self._rebuild_waiting(queue)
        if reservations != self._reservations:
            for queue in self._own_reserved.keys() | reservations.keys():
                if queue not in self.policy.queues:
                    continue
                new_r = {k: v for k, v in reservations.get(queue, {}).items() if k in tracked}
                old_r = self._own_reserved.get(queue, {})
                if new_r == old_r:
                    continue
                delta = dict(new_r)
                _add(delta, old_r, -1)
                self._spread(queue, "reserved", delta)
                self._spread(queue, "used", delta)
                self._own_reserved[queue] = new_r
            self._reservations = dict(reservations)
        self._protect()
        self._snapshot = snapshot
        self.capacity = dict(snapshot.capacity)
        reserved_total: dict[str, int] = {}
        for amounts in self._reservations.values():
            _add(reserved_total, amounts)
        self.idle = {
            k: snapshot.capacity.get(k, 0) - snapshot.allocated.get(k, 0) - reserved_total.get(k, 0)
            for k in tracked
        }

    def _changed_keys(self, snapshot: Snapshot) -> Iterable[QKey]:
        """The cache groups that may differ from the last snapshot read: from the snapshot's
        change log when it reaches back that far, else all of them."""
        seen = self._snapshot
        if seen is not None and seen.origin == snapshot.origin:
            if snapshot.generation == seen.generation:
                return ()
            log = snapshot.queue_changes
            if log and log[0][0] <= seen.generation:
                keys: set[QKey] = set()
                for _, after, changed in log:
                    if after > seen.generation:
                        keys |= changed
                return keys
        return (
            self._seen_usage.keys()
            | snapshot.queue_usage.keys()
            | (self._seen_pending.keys() | snapshot.queue_pending.keys())
        )

    def _spread(self, queue: str, name: str, delta: Mapping[str, int]) -> None:
        """Add `delta` to field `name` of the queue and every ancestor."""
        if not any(delta.values()):
            return
        for node in self._paths[queue]:
            _add(getattr(self.state[node], name), delta)
        self._touched.add(queue)

    def _rebuild_waiting(self, queue: str) -> None:
        for job in self._waiting[queue]:
            self.waiting_keys.pop(job.key, None)
        jobs = [
            j
            for qkey in self._queue_keys[queue]
            for j in self._jobs_of.get(qkey, ())
            if j.key not in self._planned
        ]
        jobs.sort(key=lambda j: (-j.priority, j.created, j.key))
        self._waiting[queue] = jobs
        self.waiting_keys.update((j.key, j) for j in jobs)
        demand: dict[str, int] = {}
        smallest: dict[str, int] = {}
        if self._open[queue]:
            for job in jobs:
                need = {k: v for k, v in job.requests.items() if k in self.tracked and v > 0}
                _add(demand, need)
                for resource, amount in need.items():
                    if amount < smallest.get(resource, amount + 1):
                        smallest[resource] = amount
        self._own_smallest[queue] = smallest
        delta = dict(demand)
        _add(delta, self._own_demand[queue], -1)
        self._own_demand[queue] = demand
        self._spread(queue, "demand", delta)
        count = len(jobs) - self._own_waiting.get(queue, 0)
        self._own_waiting[queue] = len(jobs)
        for node in self._paths[queue]:
            self.state[node].waiting_jobs += count
        self._touched.add(queue)

    def _protect(self) -> None:
        """What each guarantee owes to work waiting under it, on the paths that changed: a
        queue protects the part of its guarantee its waiting work needs and does not have (when
        at least one waiting job fits in what is left of it), and at least what its children
        protect together."""
        if not self._touched:
            return
        nodes = {n for q in self._touched for n in self._paths[q]}
        self._touched.clear()
        for name in sorted(nodes, key=lambda n: -self._depth[n]):
            state = self.state[name]
            guarantee = self.guarantee[name]
            state.smallest = smallest = dict(self._own_smallest.get(name, {}))
            for kid in self.policy.children.get(name, ()):
                for resource, amount in self.state[kid].smallest.items():
                    if amount < smallest.get(resource, amount + 1):
                        smallest[resource] = amount
            owed = protected(
                guarantee, state.used, state.demand, smallest, self._kids_protected[name]
            )
            if owed == state.protected:
                continue
            parent = self.policy.queues[name].parent
            if parent is not None:
                kids = self._kids_protected[parent]
                _add(kids, state.protected, -1)
                _add(kids, owed)
            state.protected = owed

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

    def share(
        self, queue: str, extra: Mapping[str, int] | None = None, history: bool = True
    ) -> float:
        """Dominant-resource share against the queue's weight (lower goes first): of its
        current use, `extra`, and its decayed past use when the policy keeps a history (and
        `history`: False for the share on current use alone; docs/fairness.md)."""
        used = self.state[queue].used
        past = self.past.get(queue, {}) if history else {}
        best = 0.0
        for resource, total in self.capacity.items():
            if resource not in self.tracked or total <= 0:
                continue
            amount = used.get(resource, 0) + (extra or {}).get(resource, 0)
            best = max(best, (amount + past.get(resource, 0.0)) / total)
        return best / self.policy.queues[queue].weight

    def under_guarantee(self, queue: str, extra: Mapping[str, int] | None = None) -> bool:
        """Whether the queue (with `extra` added) uses less than its guarantee of some resource
        it names and more of none: such a queue is never behind one that is not, whatever
        their histories (docs/fairness.md)."""
        used, short = self.state[queue].used, False
        for resource, amount in self.guarantee[queue].items():
            have = used.get(resource, 0) + (extra or {}).get(resource, 0)
            if have > amount:
                return False
            short = short or have < amount
        return short
