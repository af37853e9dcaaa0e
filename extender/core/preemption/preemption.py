"""Preemption and reclaim: when a waiting job may take running jobs' place, plan it whole first.

`Preemption.plan` is asked about a job that its queue admits but that does not fit: it searches
victims (`victims.find_victims`) by the priority rule, then — if the job keeps its queue within its
guarantee — by the reclaim rule. A plan found becomes the job's reservation (the capacity the
victims free is kept for it, nobody else takes it) and its victims' pods are queued for eviction,
which the runtime carries out through the Eviction API (PodDisruptionBudgets hold) while its
scheduler leads. Evictions come at a bounded rate (`evictionsPerMinute` jobs), so the cluster
never thrashes.

`Preemption.narrow` answers kube-scheduler's preempt verb (its own preemption, for pods it found
no node for): a planned job keeps only its planned victims on its planned nodes; any other pod
keeps only victims the rules allow, never a gang member (a gang goes whole, by gangplank's own
plan), and only nodes where what is kept makes room and no PodDisruptionBudget is broken.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial

from extender.core.gangs.gang import resolve_gang
from extender.core.gangs.gang_scheduler import GangScheduler
from extender.core.model.answers import Victims
from extender.core.model.keys import is_single, job_key, job_name
from extender.core.model.quantity import format_amount
from extender.core.model.resources import GPU, total
from extender.core.model.snapshot import PodInfo, Snapshot
from extender.core.model.workload import queue_key
from extender.core.placement.candidates import could_hold
from extender.core.placement.domains import plan_in_topology
from extender.core.placement.fit import fits
from extender.core.placement.planner import FreeOf, PlanAttempt, plan_gang
from extender.core.preemption.quota_room import admits_once_gone, no_victims_reason
from extender.core.preemption.victim_candidates import (
    RunningJob,
    broken_first,
    priority_candidates,
    reclaim_candidates,
    running_jobs,
)
from extender.core.preemption.victims import Planner, PreemptionPlan, find_victims, placeable_nodes
from extender.core.queues.book import QueueBook
from extender.core.queues.policy import Policy, PreemptionRules

NO_POLICY_RATE = 10  # jobs evicted per minute when no policy says otherwise

RulesOf = Callable[[str | None], PreemptionRules]
QueueOf = Callable[[PodInfo], str | None]


def _default_rules(queue: str | None) -> PreemptionRules:
    return PreemptionRules()


def _no_queue(pod: PodInfo) -> str | None:
    return None


@dataclass(frozen=True, slots=True)
class Eviction:
    """One pod to evict, with what to tell the people involved."""

    job: str  # the victim job (its pods go together)
    namespace: str
    name: str
    uid: str
    grace_seconds: int | None
    rule: str  # priority or reclaim
    queue: str  # the victim's queue ("" for none)
    gpu_seconds: float  # what the victim's job had run, shared among its pods
    message: str  # the Event on the victim
    preemptor: tuple[str, str]  # namespace, name of the preemptor's first pod
    preemptor_message: str  # the Event on the preemptor (sent once, with its first victim)
    plan: str = ""  # the preemptor's job: its plan is recorded before the first eviction


@dataclass
class PreemptionOutcomes:
    waits_before: list[float] = field(default_factory=list)  # job created -> preemption decided
    waits_after: list[float] = field(default_factory=list)  # decided -> job running


class Preemption:
    def __init__(self, gangs: GangScheduler) -> None:
        self.gangs = gangs
        self.pending: list[Eviction] = []
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
    def _planner(self, snapshot: Snapshot, key: str) -> Planner:
        """How trial plans place the job: within one domain when its gang requires one."""
        if is_single(key):
            return plan_gang
        constraint = resolve_gang(snapshot, key).constraint
        if not constraint.required:
            return plan_gang
        topology = self.gangs.topology

        def in_topology(
            view: Snapshot, pods: list[PodInfo], needed: int, free_of: FreeOf
        ) -> PlanAttempt:
            return plan_in_topology(view, pods, needed, free_of, topology, constraint)

        return in_topology

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
    ) -> int:
        """Plan job `key` (its pending `pods`, `needed` of them) on what victims would free;
        returns how many jobs it evicts (0: no plan, nothing evicted)."""
        return self._plan(snapshot, key, pods, needed, queue, now, policy, book)[0]

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
    ) -> tuple[int, int, int]:
        """(jobs evicted, candidates looked at, jobs a plan would evict when more than this
        minute's budget allows, else 0). `past_quota`: the queue's quota must admit the
        job once its victims are gone, and victims are looked for in the whole queue."""
        budget = self.budget_left(policy, now)
        if budget <= 0 or not pods or key in self.gangs.plans:
            return 0, 0, 0
        rules_of = self.rules_of(policy)
        self.spared = {uid: until for uid, until in self.spared.items() if until > now}
        leaving = {uid for plan in self.gangs.plans.values() for uid in plan.victims}
        leaving |= self.spared.keys()  # not chosen again while a budget protects them
        queue_of = self._queue_of(book)
        free = partial(self.gangs.free_for, gang_key=key)
        priority = max(p.priority for p in pods)
        found: PreemptionPlan | None = None
        rule = "priority"
        # The nodes that could ever hold the job: names first (remembered while nodes stay as
        # they are); the node objects only when there are candidates to try.
        holding = could_hold(snapshot, pods)
        planner = self._planner(snapshot, key)
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
            looked_at += len(candidates)
            if not candidates:
                return None
            placeable = placeable_nodes(holding, snapshot)
            return find_victims(
                snapshot, pods, needed, free, candidates, now, placeable, planner, admits
            )

        if (queue is None or rules_of(queue).within_queue) and _runs_lower(
            snapshot, book, queue, priority
        ):
            lower = running_jobs(
                snapshot,
                queue_of,
                lambda p: (
                    p.priority < priority
                    and p.uid not in leaving
                    and queue_of(p) == queue
                    and p.requests.get(scarce, 0) > 0
                ),
                scanned,
            )
            found = try_victims(priority_candidates(lower, queue, priority, rules_of, now))
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
                        jobs, queue, book.borrowed, book.governed, rules_of, now, account
                    )
                )
        if found is None:
            return 0, looked_at, 0
        if len(found.victims) > budget:
            return 0, looked_at, len(found.victims)
        grace = max((rules_of(v.queue).grace_seconds or 30 for v in found.victims), default=30)
        self.gangs.install_plan(
            key,
            pods,
            found.assignments,
            {p.uid: p.node_name or "" for p in found.victim_pods},
            deadline=now + self.gangs.config.reservation_seconds + grace,
        )
        self.recent.extend([now] * len(found.victims))
        self.decided[key] = now
        created = min(p.created for p in pods)
        self.outcomes.waits_before.append(max(0.0, now - created))
        self._queue_evictions(found.victims, key, pods, queue, rule, rules_of, book, now)
        return len(found.victims), looked_at, 0

    def _runs_short(self, snapshot: Snapshot, job: RunningJob) -> bool:
        """A gang running fewer members than it needs, with no plan of gangplank's to complete
        it (a gang mid-bind under a plan is not short)."""
        if job.key in self.gangs.plans:
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

    def _queue_evictions(
        self,
        victims: Sequence[RunningJob],
        key: str,
        pods: Sequence[PodInfo],
        queue: str | None,
        rule: str,
        rules_of: RulesOf,
        book: QueueBook | None,
        now: float,
    ) -> None:
        preemptor = job_name(key)
        first = min(pods, key=lambda p: (p.created, p.name))
        if rule == "reclaim" and book is not None and queue is not None:
            resource = GPU if GPU in book.guarantee[queue] else next(iter(book.guarantee[queue]))
            why = (
                f"reclaim for queue {queue} (guarantee "
                f"{format_amount(resource, book.guarantee[queue].get(resource, 0))} {resource}, "
                f"using {format_amount(resource, book.state[queue].used.get(resource, 0))})"
            )
        else:
            where = f"in queue {queue}" if queue else "(no queue)"
            why = f"priority {first.priority} {where}"
        names = ", ".join(job_name(v.key) for v in victims)
        told = f"gangplank evicts {len(victims)} job(s) for this {preemptor}: {why}: {names}"
        for victim in victims:
            share = victim.gpu_seconds(now) / len(victim.pods)
            for pod in victim.pods:
                self.pending.append(
                    Eviction(
                        job=victim.key,
                        namespace=pod.namespace,
                        name=pod.name,
                        uid=pod.uid,
                        grace_seconds=rules_of(victim.queue).grace_seconds,
                        rule=rule,
                        queue=victim.queue or "",
                        gpu_seconds=share,
                        message=f"evicted by gangplank: {why}, for {preemptor} "
                        f"(all {len(victim.pods)} pod(s) of {job_name(victim.key)} go together)",
                        preemptor=(first.namespace, first.name),
                        preemptor_message=told,
                        plan=key,
                    )
                )

    def evict_broken(self, key: str, pods: Sequence[PodInfo], now: float) -> None:
        """Evict the bound members of gang `key`, whole: after a restart its recorded plan no
        longer holds and its missing members fit nowhere, so the room goes to gangs with more
        members bound and its GPUs come back (rule `recovery`; no eviction budget: these pods
        hold GPUs for a job that cannot run)."""
        bound = [p for p in pods if p.node_name is not None and p.active]
        name = job_name(key)
        why = (
            f"evicted by gangplank: {name} runs {len(bound)} of its pods and the rest fit nowhere "
            "since gangplank restarted (gangs with more pods bound keep the room); "
            f"all {len(bound)} bound pod(s) go together so their GPUs come back"
        )
        self._recover(bound, why, min(pods, key=lambda p: (p.created, p.name)), now)

    def evict_recorded(
        self, key: str, victims: Sequence[PodInfo], preemptor: PodInfo, now: float
    ) -> None:
        """Evict the victims a restored plan of job `key` still waits for: the process that
        chose them stopped before it evicted them all (none is evicted twice: pods already
        leaving are not among them)."""
        why = (
            f"evicted by gangplank: finishing the preemption planned for {job_name(key)} "
            "before gangplank restarted (its plan was recorded with these victims)"
        )
        self._recover(victims, why, preemptor, now, plan=key)

    def _recover(
        self, pods: Sequence[PodInfo], why: str, told: PodInfo, now: float, plan: str = ""
    ) -> None:
        queued = {e.uid for e in self.pending}
        for pod in pods:
            if pod.uid in queued:
                continue
            self.pending.append(
                Eviction(
                    job=job_key(pod),
                    namespace=pod.namespace,
                    name=pod.name,
                    uid=pod.uid,
                    grace_seconds=None,
                    rule="recovery",
                    queue="",
                    gpu_seconds=pod.requests.get(GPU, 0) * max(0.0, now - (pod.started or now)),
                    message=why,
                    preemptor=(told.namespace, told.name),
                    preemptor_message=why,
                    plan=plan,
                )
            )

    def refused(self, uids: set[str], now: float, spare_seconds: float = 600.0) -> None:
        """The API server refused to evict these pods (a PodDisruptionBudget): plans counting on
        them are dropped at once (their capacity is not held in vain) and the pods are not chosen
        again for `spare_seconds`."""
        for uid in uids:
            self.spared[uid] = now + spare_seconds
        for key in [k for k, plan in self.gangs.plans.items() if uids & plan.victims.keys()]:
            self.gangs.drop_plan(key)
            self.decided.pop(key, None)

    def take_evictions(self) -> list[Eviction]:
        taken, self.pending = self.pending, []
        return taken

    def put_back(self, evictions: Sequence[Eviction]) -> None:
        """Evictions taken but not carried out (their plan could not be recorded): next pass."""
        self.pending[:0] = evictions

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
        plan = self.gangs.plans.get(job_key(pod))
        if plan is not None and pod.uid in plan.assignments:
            node = plan.assignments[pod.uid]
            proposed = candidates.get(node)
            if proposed is None or proposed.pdb_violations:
                return {}
            planned = tuple(uid for uid in proposed.uids if plan.victims.get(uid) == node)
            return {node: Victims(planned, proposed.pdb_violations)} if planned else {}
        if not is_single(job_key(pod)):
            return {}  # a gang member without a plan: its gang cannot be made room for
        rules_of = self.rules_of(policy)
        queue_of = self._queue_of(book)
        queue = queue_of(pod)
        out: dict[str, Victims] = {}
        for node_name, proposed in candidates.items():
            info = snapshot.nodes.get(node_name)
            if info is None or not proposed.uids or proposed.pdb_violations:
                continue  # gangplank never breaks a PodDisruptionBudget
            by_uid = {p.uid: p for p in info.pods}
            kept = []
            room = {k: info.allocatable.get(k, 0) - info.requested.get(k, 0) for k in pod.requests}
            for uid in proposed.uids:
                victim = by_uid.get(uid)
                if victim is None or not self._alone_may_go(
                    victim, pod, queue, queue_of, rules_of, now
                ):
                    continue
                kept.append(uid)
                for name in room:
                    room[name] += victim.requests.get(name, 0)
            if kept and fits(pod.requests, room):
                out[node_name] = Victims(tuple(kept), proposed.pdb_violations)
        return out

    @staticmethod
    def _alone_may_go(
        victim: PodInfo,
        pod: PodInfo,
        queue: str | None,
        queue_of: QueueOf,
        rules_of: RulesOf,
        now: float,
    ) -> bool:
        if not is_single(job_key(victim)):
            return False  # a gang member: the gang goes whole, by gangplank's own plan
        job = RunningJob(
            job_key(victim),
            queue_of(victim),
            victim.priority,
            victim.started or victim.created,
            (victim,),
            {},
        )
        return bool(priority_candidates([job], queue, pod.priority, rules_of, now))


def _runs_lower(
    snapshot: Snapshot, book: QueueBook | None, queue: str | None, priority: int
) -> bool:
    """Whether any pod of `queue` holding resources has a priority below `priority`, read from
    the store's per-queue floor (no pod read); true when the snapshot does not keep it."""
    floors = snapshot.queue_floor
    if floors is None:
        return True
    if book is None:
        return any(lowest < priority for lowest in floors.values())
    return any(
        lowest < priority and book.queue_of_key(qkey) == queue for qkey, lowest in floors.items()
    )
