"""Preemption and reclaim: when a waiting job may take running jobs' place, plan it whole first.

`Preemption.plan` is asked about a job that its queue admits but that does not fit: it searches
victims (`victims.find_victims`) by the priority rule, then — if the job keeps its queue within its
guarantee — by the reclaim rule. A plan found becomes the job's reservation (the capacity the
victims free is kept for it, nobody else takes it) and its victims' pods are queued for eviction,
which the runtime carries out through the Eviction API (PodDisruptionBudgets hold) while its
scheduler leads. Evictions come at a bounded rate (`evictionsPerMinute` jobs), so the cluster
never thrashes.

`Preemption.narrow` answers kube-scheduler's preempt verb (`narrow.py`). The evictions wait in
`evictions.py` for the runtime; a search that found no victims is not repeated on the same state
(`tried.py`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial

from extender.core.gangs.gang import resolve_gang
from extender.core.gangs.hold import FreeOf as HoldFreeOf
from extender.core.gangs.plans import Plan
from extender.core.gangs.reservations import Reservations
from extender.core.model.answers import Victims
from extender.core.model.keys import job_key, job_name
from extender.core.model.resources import GPU, total
from extender.core.model.snapshot import PodInfo, Snapshot
from extender.core.model.workload import queue_key
from extender.core.placement.candidates import could_hold
from extender.core.placement.topology import DEFAULT_TOPOLOGY, Topology
from extender.core.preemption.evictions import Eviction, EvictionQueue
from extender.core.preemption.narrow import narrow
from extender.core.preemption.quota_room import admits_once_gone, no_victims_reason
from extender.core.preemption.trial_planner import planner_for
from extender.core.preemption.tried import Tried
from extender.core.preemption.victim_candidates import (
    RunningJob,
    broken_first,
    extras_first,
    priority_candidates,
    reclaim_candidates,
    running_jobs,
    runs_lower,
)
from extender.core.preemption.victims import PreemptionPlan, find_victims, placeable_nodes
from extender.core.queues.book import QueueBook
from extender.core.queues.policy import Policy, PreemptionRules

NO_POLICY_RATE = 10  # jobs evicted per minute when no policy says otherwise

RulesOf = Callable[[str | None], PreemptionRules]
QueueOf = Callable[[PodInfo], str | None]


def _default_rules(queue: str | None) -> PreemptionRules:
    return PreemptionRules()


def _no_queue(pod: PodInfo) -> str | None:
    return None


@dataclass
class PreemptionOutcomes:
    waits_before: list[float] = field(default_factory=list)  # job created -> preemption decided
    waits_after: list[float] = field(default_factory=list)  # decided -> job running


class Preemption:
    def __init__(
        self,
        reservations: Reservations,
        free_of: Callable[[str], HoldFreeOf],
        reservation_seconds: float,
    ) -> None:
        self.reservations = reservations
        self._free_of = free_of  # what each node has left for a job (reservations, the hold)
        self.reservation_seconds = reservation_seconds
        self.topology: Topology = DEFAULT_TOPOLOGY  # the policy's tiers
        self.evictions = EvictionQueue()
        self.tried = Tried()
        self.first: frozenset[str] = frozenset()  # idle jobs that go first (reclaim-first)
        self.recent: deque[float] = deque()  # when each victim job was chosen
        self.decided: dict[str, float] = {}  # preemptor job -> when its plan was made
        self.spared: dict[str, float] = {}  # pod uid -> until: its eviction was refused
        self.outcomes = PreemptionOutcomes()

    # ---- rules ------------------------------------------
    @staticmethod
    def rules_of(policy: Policy | None) -> RulesOf:
        return policy.rules if policy is not None else _default_rules

    def budget_left(self, policy: Policy | None, now: float) -> int:
        """How many more jobs may be evicted this minute."""
        while self.recent and self.recent[0] < now - 60.0:
            self.recent.popleft()
        rate = policy.evictions_per_minute if policy is not None else NO_POLICY_RATE
        return rate - len(self.recent)

    # ---- planning ------------------------------------------
    def plan(
        self,
        snapshot: Snapshot,
        key: str,
        pods: Sequence[PodInfo],
        needed: int,
        queue: str | None,
        now: float,
        policy: Policy | None,
        book: QueueBook | None,
        extras_on: Collection[str] | None = None,
    ) -> int:
        """Plan job `key` (its pending `pods`, `needed` of them) on what victims would free;
        returns how many jobs it evicts (0: no plan, nothing evicted). `extras_on`: of elastic
        gangs' extras alone, on these nodes alone (for a pod alone: the nodes kube-scheduler
        proposes victims on, its other victims being kube-scheduler's to choose)."""
        return self._plan(
            snapshot, key, pods, needed, queue, now, policy, book, extras_on=extras_on
        )[0]

    def plan_past_quota(
        self,
        snapshot: Snapshot,
        key: str,
        pods: Sequence[PodInfo],
        needed: int,
        queue: str,
        now: float,
        policy: Policy,
        book: QueueBook,
    ) -> tuple[int, str]:
        """Plan job `key`, which `queue`'s quota refuses (the queue or an ancestor at its max),
        on victims whose going makes room in the quota as well as on the nodes: (jobs evicted,
        why none when 0)."""
        evicted, found, wanted = self._plan(
            snapshot, key, pods, needed, queue, now, policy, book, True
        )
        if evicted:
            return evicted, ""
        priority = max((p.priority for p in pods), default=0)
        budget = (self.budget_left(policy, now), policy.evictions_per_minute)
        return 0, no_victims_reason(queue, priority, found, budget, wanted)

    def _plan(
        self,
        snapshot: Snapshot,
        key: str,
        pods: Sequence[PodInfo],
        needed: int,
        queue: str | None,
        now: float,
        policy: Policy | None,
        book: QueueBook | None,
        past_quota: bool = False,
        extras_on: Collection[str] | None = None,
    ) -> tuple[int, int, int]:
        """(jobs evicted, candidates looked at, jobs a plan would evict when more than this
        minute's budget allows, else 0). `past_quota`: the queue's quota must admit the
        job once its victims are gone, and victims are looked for in the whole queue."""
        budget = self.budget_left(policy, now)
        if budget <= 0 or not pods or key in self.reservations:
            return 0, 0, 0
        rules_of = self.rules_of(policy)
        self.spared = {uid: until for uid, until in self.spared.items() if until > now}
        leaving = self.reservations.leaving()
        leaving |= self.spared.keys()  # not chosen again while a budget protects them
        queue_of = self._queue_of(book)
        free = self._free_of(key)
        priority = max(p.priority for p in pods)
        found: PreemptionPlan | None = None
        rule = "priority"
        # The nodes that could ever hold the job: names first (remembered while nodes stay as
        # they are); the node objects only when there are candidates to try.
        holding = could_hold(snapshot, pods)
        if extras_on is not None:
            holding = tuple(n for n in holding if n in extras_on)
            if not holding:
                return 0, 0, 0
        planner = planner_for(snapshot, key, self.topology)
        request = total(p.requests for p in pods)
        admits = None
        if past_quota and book is not None and queue is not None:
            admits = admits_once_gone(book, queue, request, job_name(key))
        scanned = None if admits is not None else holding  # a full queue is full anywhere
        looked_at = 0
        # A GPU job is made room for by jobs that hold GPUs: evicting CPU pods from a GPU node
        # frees no GPU (and CPU jobs, by the same rule, are made room for by CPU holders).
        scarce = GPU if any(p.requests.get(GPU, 0) for p in pods) else "cpu"

        def holds(pod: PodInfo) -> bool:
            return pod.requests.get(scarce, 0) > 0

        def try_victims(candidates: list[RunningJob]) -> PreemptionPlan | None:
            """The fewest of `candidates` (jobs broken already first) that make room."""
            nonlocal looked_at
            candidates = broken_first(candidates, partial(self._runs_short, snapshot))
            candidates.sort(key=lambda j: j.key not in first)  # idle ones first, order kept
            candidates = extras_first(candidates)  # elastic gangs' extras before all
            if extras_on is not None:
                candidates = [c for c in candidates if c.extra]
            looked_at += len(candidates)
            if not candidates:
                return None
            placeable = placeable_nodes(holding, snapshot)
            return find_victims(
                snapshot, pods, needed, free, candidates, now, placeable, planner, admits
            )

        first = self.first
        if (queue is None or rules_of(queue).within_queue) and (
            first or runs_lower(snapshot, book, queue, priority)
        ):
            lower = running_jobs(
                snapshot,
                queue_of,
                lambda p: (
                    (p.priority < priority or job_key(p) in first)
                    and p.uid not in leaving
                    and queue_of(p) == queue
                    and p.requests.get(scarce, 0) > 0
                ),
                scanned,
            )
            found = try_victims(priority_candidates(lower, queue, priority, rules_of, now, first))
        if found is None and queue is not None and book is not None:
            # A queue in the tree borrows if any ancestor outside `queue`'s path does.
            lenders = {q for q in book.policy.queues if q != queue and book.borrowed(q)}
            borrowing = {
                q
                for q in book.policy.queues
                if q != queue and any(a in lenders for a in book.policy.path(q))
            }
            if borrowing and self._within_guarantee(book, queue, request):
                rule = "reclaim"
                jobs = running_jobs(
                    snapshot,
                    queue_of,
                    lambda p: (
                        p.uid not in leaving
                        and queue_of(p) in borrowing
                        and p.requests.get(scarce, 0) > 0
                    ),
                    scanned,
                )
                mine = set(book.policy.path(queue))

                def account(victim: str) -> str:
                    path = book.policy.path(victim)  # the victim's queue first, then up
                    below = [q for q in path if q not in mine]
                    return below[-1] if below else victim

                found = try_victims(
                    reclaim_candidates(
                        jobs, queue, book.borrowed, book.governed, rules_of, now, account, first
                    )
                )
        if found is None:
            return 0, looked_at, 0
        if len(found.victims) > budget:
            return 0, looked_at, len(found.victims)
        grace = max((rules_of(v.queue).grace_seconds or 30 for v in found.victims), default=30)
        victims = {p.uid: p.node_name or "" for p in found.victim_pods}
        deadline = now + self.reservation_seconds + grace
        self.reservations.install(
            Plan.with_victims(key, pods, found.assignments, victims, deadline)
        )
        self.recent.extend([now] * len(found.victims))
        self.decided[key] = now
        created = min(p.created for p in pods)
        self.outcomes.waits_before.append(max(0.0, now - created))
        self.evictions.queue(snapshot, found.victims, key, pods, queue, rule, rules_of, book, now)
        return len(found.victims), looked_at, 0

    def _runs_short(self, snapshot: Snapshot, job: RunningJob) -> bool:
        """A gang running fewer members than it needs, with no plan of gangplank's to complete
        it (a gang mid-bind under a plan is not short)."""
        if job.key in self.reservations or job.extra or job.rest:
            return False
        gang = resolve_gang(snapshot, job.key)
        return not gang.problem and len(job.pods) < gang.size

    @staticmethod
    def _queue_of(book: QueueBook | None) -> QueueOf:
        if book is None:
            return _no_queue
        return lambda pod: book.queue_of_key(queue_key(pod))

    @staticmethod
    def _within_guarantee(book: QueueBook, queue: str, request: Mapping[str, int]) -> bool:
        governed = [k for k, v in request.items() if k in book.governed and v > 0]
        used, guarantee = book.state[queue].used, book.guarantee[queue]
        return bool(governed) and all(
            used.get(k, 0) + request[k] <= guarantee.get(k, 0) for k in governed
        )

    def refused(self, uids: set[str], now: float, spare_seconds: float = 600.0) -> None:
        """The API server refused to evict these pods (a PodDisruptionBudget): plans counting on
        them are dropped at once (their capacity is not held in vain) and the pods are not chosen
        again for `spare_seconds`."""
        for uid in uids:
            self.spared[uid] = now + spare_seconds
        for key in self.reservations.counting_on(uids):
            self.reservations.release(key)
            self.decided.pop(key, None)

    def take_evictions(self) -> list[Eviction]:
        return self.evictions.take()

    def put_back(self, evictions: Sequence[Eviction]) -> None:
        """Evictions taken but not carried out (their plan could not be recorded): next pass."""
        self.evictions.put_back(evictions)

    def started(self, key: str, now: float) -> None:
        """A job bound its last planned pod."""
        decided = self.decided.pop(key, None)
        if decided is not None:
            self.outcomes.waits_after.append(max(0.0, now - decided))

    def take_outcomes(self) -> PreemptionOutcomes:
        outcomes, self.outcomes = self.outcomes, PreemptionOutcomes()
        return outcomes

    # ---- kube-scheduler's own preemption ------------------------------------------
    def narrow(
        self,
        snapshot: Snapshot,
        pod: PodInfo,
        candidates: Mapping[str, Victims],
        now: float,
        policy: Policy | None,
        book: QueueBook | None,
    ) -> dict[str, Victims]:
        plan = self.reservations.get(job_key(pod))
        rules_of, queue_of = self.rules_of(policy), self._queue_of(book)
        spared = self.evictions.through_workload.keys()
        return narrow(snapshot, pod, candidates, now, plan, rules_of, queue_of, self.first, spared)
