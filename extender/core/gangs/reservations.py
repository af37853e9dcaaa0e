"""The reservations: every job's plan, and the capacity its pods hold until they bind.

One install path (`install`: a plan made by the gang planner, by preemption, or read back from its
record) and one release path (`release`, and expiry in `sync`); the notices GangPlanned and
GangPlanExpired are sent from there, and whoever listens (`on_planned`: the waiting room) learns
of every plan made. Other components ask; none reads the plans' fields.

A plan is a reservation with a deadline: its members pass only their planned node, other pods see
the capacity as taken. A member that binds turns its reservation into usage (the cache counts
it); a plan not used by its deadline is released.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, field

from extender.core.gangs.gang import resolve_gang
from extender.core.gangs.hold import Hold
from extender.core.gangs.no_room import shrunk
from extender.core.gangs.plans import Plan
from extender.core.model.answers import BindDecision, BindRequest
from extender.core.model.notices import Outbox
from extender.core.model.snapshot import NodeInfo, PodInfo, Snapshot

# Told of each plan installed: (the job, the pod whose filter call made it or "")
OnPlanned = Callable[[str, str], None]


def _nobody(key: str, asking: str) -> None:
    return None


@dataclass
class GangOutcomes:
    """What happened to gangs since the adapter last looked (for metrics)."""

    planned: int = 0
    expired: int = 0
    failures: Counter[str] = field(default_factory=Counter)  # by rejection, the placer's
    start_latencies: list[float] = field(default_factory=list)


def _sub(free: dict[str, int], taken: Mapping[str, int]) -> None:
    for name, amount in taken.items():
        free[name] = free.get(name, 0) - amount


class Reservations:
    def __init__(self, outbox: Outbox, on_planned: OnPlanned = _nobody) -> None:
        self._plans: dict[str, Plan] = {}
        self._by_uid: dict[str, str] = {}  # planned member -> its job
        self._amounts: dict[str, dict[str, int]] = {}  # job -> its planned members' requests
        self._reserved: dict[str, dict[str, dict[str, int]]] = {}  # node -> job -> resources
        # Bumped when the reservations change, and when one shrinks or goes (see `no_room`).
        self.version = 0
        self.released_version = 0
        self._outbox = outbox
        self._on_planned = on_planned
        self.outcomes = GangOutcomes()
        self._synced: tuple[int, float] = (-1, float("-inf"))  # generation, next deadline

    # ---- the one install path and the one release path ------------------------------------
    def install(
        self, plan: Plan, asking: str = "", restored: bool = False, quiet: bool = False
    ) -> None:
        """Reserve `plan` (replacing any plan of its job). `asking`: the member whose filter call
        made it; `restored`: made by an earlier process, read back from its record (neither
        counted nor announced again); `quiet`: not announced (a moved job's new places, told
        by consolidation's own notices)."""
        self._plans[plan.key] = plan
        if not restored and not quiet:
            self.outcomes.planned += 1
            self._outbox.planned(plan.key, plan.assignments.values(), len(plan.assignments))
        self._reindex()
        self._on_planned(plan.key, asking)

    def release(self, key: str) -> None:
        if self._plans.pop(key, None) is not None:
            self._reindex()

    def add_member(self, key: str, pod: PodInfo, node: str) -> None:
        """A member the plan did not know (an extra pod, a replacement), placed on `node`."""
        plan = self._plans[key]
        plan.assignments[pod.uid] = node
        plan.requests[pod.uid] = pod.requests
        self._reindex()

    def swap_member(self, key: str, old: str, pod: PodInfo) -> None:
        """Pod `pod` takes the place plan `key` keeps under `old` (a moved job's new pod)."""
        plan = self._plans[key]
        plan.assignments[pod.uid] = plan.assignments.pop(old)
        plan.requests[pod.uid] = plan.requests.pop(old)
        self._reindex()

    def sync(self, snapshot: Snapshot, now: float) -> None:
        """Bound members become usage; plans past their deadline are released (GangPlanExpired)."""
        if not self._plans:
            return
        if snapshot.generation == self._synced[0] and now <= self._synced[1]:
            return  # nothing changed and nothing is due
        changed = False
        for key, plan in list(self._plans.items()):
            members = {p.uid: p for p in snapshot.groups.get(key, ())}
            for uid in list(plan.assignments):
                pod = members.get(uid)
                # A member the cache has not seen yet keeps its place (kube-scheduler asked about
                # it first); one that is bound, finished, being deleted or gone gives it up.
                if pod is None:
                    if uid in plan.seen:
                        del plan.assignments[uid]
                        changed = True
                elif not pod.active or pod.node_name is not None:
                    del plan.assignments[uid]
                    changed = True
                else:
                    plan.seen.add(uid)
            if not plan.assignments:
                del self._plans[key]
                changed = True
                if _whole(snapshot, key):
                    self.outcomes.start_latencies.append(max(0.0, now - plan.last_member_created))
            elif now > plan.deadline:
                del self._plans[key]
                changed = True
                self.outcomes.expired += 1
                self._outbox.expired(key)
        if changed:
            self._reindex()
        self._synced = (snapshot.generation, self.next_due())

    def next_due(self) -> float:
        return min((plan.deadline for plan in self._plans.values()), default=float("inf"))

    def _reindex(self) -> None:
        self._synced = (-1, float("-inf"))  # the state changed: the next sync must look
        reserved: dict[str, dict[str, dict[str, int]]] = {}
        by_uid: dict[str, str] = {}
        amounts: dict[str, dict[str, int]] = {}
        for key, plan in self._plans.items():
            total = amounts[key] = {}
            for uid, node in plan.assignments.items():
                by_uid[uid] = key
                per_job = reserved.setdefault(node, {}).setdefault(key, {})
                for name, amount in plan.requests[uid].items():
                    per_job[name] = per_job.get(name, 0) + amount
                    total[name] = total.get(name, 0) + amount
        if reserved != self._reserved:
            self.version += 1
            if shrunk(self._reserved, reserved):
                self.released_version += 1
        self._reserved = reserved
        self._by_uid = by_uid
        self._amounts = amounts

    # ---- what others ask ------------------------------------------
    def free_for(
        self,
        node: NodeInfo,
        key: str | None,
        hold: Hold | None,
        only: Collection[str] | None = None,
    ) -> dict[str, int]:
        """A node's capacity as job `key` (or a pod of no plan) may use it: minus the other
        jobs' reservations and the `hold` of another job; `only` limits it to the resources that
        matter (planning asks for those of the gang: five times faster)."""
        allocatable, requested = node.allocatable, node.requested
        names = allocatable if only is None else only
        free = {name: allocatable.get(name, 0) - requested.get(name, 0) for name in names}
        for holder, taken in self._reserved.get(node.name, {}).items():
            if holder != key:
                _sub(free, taken)
        if hold is not None and hold.key != key:
            _sub(free, hold.held_on(node.name, free, node))
        return free

    def __contains__(self, key: object) -> bool:
        return key in self._plans

    def __len__(self) -> int:
        return len(self._plans)

    def get(self, key: str) -> Plan | None:
        return self._plans.get(key)

    def jobs(self) -> Collection[str]:
        return self._plans.keys()

    def plans(self) -> Iterator[Plan]:
        return iter(list(self._plans.values()))

    def job_of(self, uid: str) -> str | None:
        """The job whose plan places member `uid`, if any."""
        return self._by_uid.get(uid)

    def planned_node(self, pod: PodInfo) -> str | None:
        key = self._by_uid.get(pod.uid)
        return self._plans[key].assignments.get(pod.uid) if key is not None else None

    def holders_on(self, node: str) -> Collection[str]:
        """The jobs holding reserved capacity on `node`."""
        return self._reserved.get(node, {}).keys()

    def nodes(self) -> Collection[str]:
        """Nodes where a reservation takes capacity."""
        return self._reserved.keys()

    def leaving(self) -> set[str]:
        """The pods (uids) plans wait for to leave: preemption does not choose them again."""
        return {uid for plan in self._plans.values() for uid in plan.victims}

    def victims_gone(self, snapshot: Snapshot, key: str, uid: str) -> bool | None:
        """Whether job `key`'s plan for member `uid` waits for no victim now (None: no such
        plan any more)."""
        plan = self._plans.get(key)
        if plan is None or uid not in plan.assignments:
            return None
        return not plan.leaving(snapshot)

    def counting_on(self, uids: Collection[str]) -> list[str]:
        """The jobs whose plans count on any of these pods leaving."""
        return [k for k, plan in self._plans.items() if not plan.victims.keys().isdisjoint(uids)]

    def amounts(self) -> Mapping[str, Mapping[str, int]]:
        """Requests of planned members not bound yet, by job (kept with the index: the queue
        book asks for them several times a call)."""
        return self._amounts

    def pods(self) -> int:
        return len(self._by_uid)

    def take_outcomes(self, failures: Counter[str]) -> GangOutcomes:
        """What happened since the last call, with the placer's `failures`."""
        outcomes, self.outcomes = self.outcomes, GangOutcomes()
        outcomes.failures = failures
        return outcomes

    # ---- bind ------------------------------------------
    def check_bind(self, request: BindRequest) -> BindDecision:
        """A planned member binds to its planned node only; any other pod wherever
        kube-scheduler chose (it checked the node fits)."""
        key = self._by_uid.get(request.uid)
        node = self._plans[key].assignments.get(request.uid) if key is not None else None
        if node is not None and node != request.node:
            return BindDecision(
                False, f"pod {request.key} is planned on node {node}, not {request.node}"
            )
        return BindDecision(True)

    def bound(self, uid: str) -> str | None:
        """A member was bound: its reservation is usage now (the store counts it). Returns its
        job when that was the plan's last member to bind."""
        key = self._by_uid.get(uid)
        if key is None:
            return None
        plan = self._plans[key]
        plan.assignments.pop(uid, None)
        self._reindex()
        return key if not plan.assignments else None


def _whole(snapshot: Snapshot, key: str) -> bool:
    """Whether job `key` runs all its members (for the start latency of a gang)."""
    gang = resolve_gang(snapshot, key)
    return not gang.problem and len(gang.bound) >= gang.size
