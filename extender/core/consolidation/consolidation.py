"""Consolidation: make room for a waiting job by moving running movable jobs, before preempting.

Asked (`try_move`) about a job its queue admits that fits nowhere on what is free now, first in
the leader's pass (kube-scheduler never sends a pod that its own filters fit nowhere, such as an
8-GPU pod on scattered GPUs) and at filter time when a gang lacks room, both before preemption.
It finds the plan among the candidates (`candidates.candidate_jobs`; `plan.plan_moves`: whole
jobs, the fewest moves, then the fewest GPUs moved, each moved job onto capacity free now; each job
a plan moves judged by `candidates.movable`, a refused one left out and the plan made again),
checks every
moved pod may go to its new node (`candidates.placeable`: its node selector, taints, the other
resources), and then, before anything moves:

- reserves the waiting job's place as preemption does (`Plan.with_victims`, the moved pods as its
  victims, `moved`): its pods pass only once the moved pods have left;
- reserves each moved job's new places by job and shape (`moved:<old uid>` slots in a plan of
  its own): a new pod of the same controller with the same requests takes one (`claim`), since
  a recreated pod has a new uid and, for most controllers, a new name;
- hands the moves to the service (`take_moves`; `moves.py`): a kind with a suspend field is
  suspended and resumed a few seconds later through a kept record (`Lifecycle.move`: no requeue
  spent, resumed once whoever leads), other recreating controllers' pods are evicted; every pod
  of the plan is evicted as a dry run first and one refusal drops the whole plan (`refused`).

No move loop: at most `consolidation.movesPerMinute` jobs a minute, a job moved is not moved
again for MOVED_AGAIN_SECONDS (the kept records remember it across a restart), a job is moved
only for one of its priority or higher, and a search that found nothing is not repeated on the
same state. A plan is dropped when what it counted on changes: a moved job's new node or the
waiting job goes (`sync`).
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from extender.core.consolidation.candidates import Judge, QueueOf, candidate_jobs
from extender.core.consolidation.movable import how_moved
from extender.core.consolidation.moves import (
    Move,
    MovedJob,
    move_message,
    moved_job,
    planned_message,
    waiting_job,
)
from extender.core.consolidation.plan import MovePlan
from extender.core.gangs.hold import FreeOf
from extender.core.gangs.plans import Plan
from extender.core.gangs.reservations import Reservations
from extender.core.lifecycle.lifecycle import Lifecycle
from extender.core.model.keys import is_single
from extender.core.model.notices import Notice, Outbox
from extender.core.model.resources import GPU
from extender.core.model.snapshot import PodInfo, Snapshot
from extender.core.placement.candidates import could_hold
from extender.core.queues.policy import MOVES_PER_MINUTE, Policy

MOVED_AGAIN_SECONDS = 600.0  # a job moved is not moved again for this long
# A job's search that found nothing is not made again this soon, whatever changed: on 5,000
# nodes it costs 110-130 ms of the leader's pass (docs/benchmarks.md); moves take seconds anyway.
SEARCH_AGAIN_SECONDS = 10.0
SLOT_SECONDS = 180.0  # beyond the reservation time: its pods leave, are recreated, bind
SLOT = "moved:"  # the uids of a moved job's kept places: `moved:<the old pod's uid>`
PLANNED = "ConsolidationPlanned"  # the Event on the waiting job


@dataclass
class ConsolidationOutcomes:
    plans: Counter[str] = field(default_factory=Counter)  # made, dropped, refused


@dataclass
class _Flight:
    key: str  # the waiting job
    move: Move
    decided: float


class Consolidation:
    def __init__(
        self,
        reservations: Reservations,
        free_of: Callable[..., FreeOf],
        lifecycle: Lifecycle,
        outbox: Outbox,
        reservation_seconds: float,
    ) -> None:
        self._reservations = reservations
        self._free_of = free_of  # the placer's: what each node has left for a job
        self._lifecycle = lifecycle
        self._outbox = outbox
        self.reservation_seconds = reservation_seconds
        self.recent: deque[float] = deque()  # when each job was moved (the rate budget)
        self.moved: dict[str, float] = {}  # job -> when it was moved
        self._flights: dict[str, _Flight] = {}  # waiting job -> its plan in flight
        self._slots: dict[tuple[str, str], str] = {}  # (namespace, owner uid) -> slot plan
        # job -> the state nothing was found on, and when
        self._tried: dict[str, tuple[tuple[object, ...], float]] = {}
        self._moves: list[Move] = []  # decided, not taken by the service yet
        self.outcomes = ConsolidationOutcomes()
        # Whether someone carries the moves out: set by the service (`service/moves.py`); off,
        # nothing is planned (the simulator, which does not move jobs yet).
        self.active = False

    # ---- the budget ------------------------------------------
    def budget_left(self, policy: Policy | None, now: float) -> int:
        while self.recent and self.recent[0] < now - 60.0:
            self.recent.popleft()
        rate = policy.consolidation.moves_per_minute if policy is not None else MOVES_PER_MINUTE
        return rate - len(self.recent)

    # ---- planning ------------------------------------------
    def try_move(
        self,
        snapshot: Snapshot,
        key: str,
        pods: Sequence[PodInfo],
        needed: int,
        now: float,
        policy: Policy | None,
        queue_of: QueueOf,
    ) -> bool:
        """Plan moves after which job `key` (its pending `pods`, `needed` of them) fits; True
        when a plan was made (its place and the moved jobs' new places are reserved)."""
        if not self.active or key in self._reservations or key in self._flights or not pods:
            return False
        budget = self.budget_left(policy, now)
        pending = sorted(pods, key=lambda p: (p.created, p.name))[:needed]
        asks = [(p.uid, p.requests.get(GPU, 0)) for p in pending]
        if budget <= 0 or not any(gpus for _, gpus in asks):
            return False
        state = (
            snapshot.origin,
            snapshot.capacity_generation,
            self._reservations.version,
            id(policy),
            budget,  # a plan too long for this minute's budget may fit the next's
        )
        tried = self._tried.get(key)
        if tried is not None and (
            (snapshot.capacity_generation >= 0 and tried[0] == state)
            or now - tried[1] < SEARCH_AGAIN_SECONDS
        ):
            return False  # nothing found on this very state, or moments ago (a search is dear)
        found = self._search(snapshot, key, pending, asks, budget, now, policy, queue_of)
        if found is None:
            self._tried[key] = (state, now)
            if len(self._tried) > 4096:
                self._tried.clear()
            return False
        self._tried.pop(key, None)
        self._install(snapshot, key, pending, *found, now, policy, queue_of)
        return True

    def _search(
        self,
        snapshot: Snapshot,
        key: str,
        pending: Sequence[PodInfo],
        asks: Sequence[tuple[str, int]],
        budget: int,
        now: float,
        policy: Policy | None,
        queue_of: QueueOf,
    ) -> tuple[MovePlan, Mapping[str, tuple[PodInfo, ...]]] | None:
        # Nodes the waiting job could use; the moved jobs are re-placed among them too (checked
        # below against each moved pod's own constraints).
        holding = could_hold(snapshot, pending)
        free = self._free_of(key, only=(GPU,))
        free_gpus = {n: max(0, free(snapshot.nodes[n]).get(GPU, 0)) for n in holding}
        since = now - MOVED_AGAIN_SECONDS
        recently = {k for k, at in self.moved.items() if at >= since}
        candidates = candidate_jobs(
            snapshot,
            key,
            pending,
            set(holding),
            policy,
            queue_of,
            recently=recently | self._lifecycle.moved_since(since),
            reservations=self._reservations,
        )
        suspends = self._lifecycle.suspend_workloads
        judge = Judge(snapshot, candidates, policy, queue_of, suspends)
        return judge.plan(pending, free_gpus, asks, budget)

    def _install(
        self,
        snapshot: Snapshot,
        key: str,
        pending: Sequence[PodInfo],
        plan: MovePlan,
        movable: Mapping[str, tuple[PodInfo, ...]],
        now: float,
        policy: Policy | None,
        queue_of: QueueOf,
    ) -> None:
        deadline = now + self.reservation_seconds + SLOT_SECONDS
        pods = {p.uid: p for k, _ in plan.moves for p in movable[k]}
        victims = {uid: old for _, targets in plan.moves for uid, (old, _) in targets.items()}
        waiting = Plan.with_victims(key, pending, plan.assignments, victims, deadline)
        waiting.moved = True
        self._reservations.install(waiting)
        whom = waiting_job(key, pending)
        first = pending[0]
        jobs: list[MovedJob] = []
        for moved_key, targets in plan.moves:
            members = tuple(pods[uid] for uid in targets)
            message = move_message(moved_key, members, targets, whom)
            slots = Plan(
                key=moved_key,
                assignments={SLOT + uid: new for uid, (_, new) in targets.items()},
                requests={SLOT + uid: pods[uid].requests for uid in targets},
                deadline=deadline,
                last_member_created=now,
            )
            self._reservations.install(slots, quiet=True)
            for pod in members:
                if pod.owner is not None:
                    self._slots[(pod.namespace, pod.owner.uid)] = moved_key
            queue = queue_of(members[0]) or ""
            allows = policy is not None and policy.movable_queue(queue or None)
            way, workload, _ = how_moved(snapshot, moved_key, members, allows)
            assert way is not None
            jobs.append(
                moved_job(
                    self._lifecycle,
                    moved_key,
                    way,
                    workload,
                    members,
                    targets,
                    message,
                    queue,
                    first,
                    now,
                )
            )
            self.recent.append(now)
            self.moved[moved_key] = now
        move = Move(key, tuple(jobs))
        self._flights[key] = _Flight(key, move, now)
        self._moves.append(move)
        self.outcomes.plans["made"] += 1
        told = planned_message(whom, jobs)
        self._outbox.add(Notice(key, PLANNED, told, pod=first if is_single(key) else None))

    # ---- the moved jobs' new pods ------------------------------------------
    def claim(self, pod: PodInfo) -> Plan | None:
        """The plan keeping a place for `pod` (a new pod of a moved job: the same controller and
        requests as a pod moved), with `pod` in one of its free places; None: not one."""
        if not self._slots or pod.owner is None or pod.node_name is not None:
            return None
        slot_key = self._slots.get((pod.namespace, pod.owner.uid))
        if slot_key is None:
            return None
        plan = self._reservations.get(slot_key)
        if plan is None:
            del self._slots[(pod.namespace, pod.owner.uid)]
            return None
        if pod.uid in plan.assignments:
            return plan
        for uid in plan.assignments:
            if uid.startswith(SLOT) and plan.requests[uid] == pod.requests:
                self._reservations.swap_member(slot_key, uid, pod)
                return plan
        return None

    def kept_for(self, pod: PodInfo) -> bool:
        """Whether a place is kept for `pod` (a new pod of a moved job): the fair line leaves
        it out, kube-scheduler brings it to its place."""
        if not self._slots or pod.owner is None:
            return False
        return self._slots.get((pod.namespace, pod.owner.uid)) in self._reservations

    # ---- what changes under a plan ------------------------------------------
    def sync(self, snapshot: Snapshot, now: float) -> None:
        """Plans whose waiting job started, went or lost its plan are done (the reservations
        saw to it); one whose moved job's new node went is dropped (its places released)."""
        if not self._flights and not self._slots:
            return
        for key, flight in list(self._flights.items()):
            gone_nodes = any(
                to not in snapshot.nodes for j in flight.move.jobs for to in j.targets.values()
            )
            if key not in self._reservations:
                del self._flights[key]  # started, or its reservation ran out
            elif gone_nodes:
                self._drop(flight, "dropped")
        live = {k for k in self._reservations.jobs()}
        self._slots = {owner: k for owner, k in self._slots.items() if k in live}
        if self.moved:
            since = now - MOVED_AGAIN_SECONDS
            self.moved = {k: at for k, at in self.moved.items() if at >= since}

    def _drop(self, flight: _Flight, outcome: str) -> None:
        self._flights.pop(flight.key, None)
        self._reservations.release(flight.key)
        for job in flight.move.jobs:
            plan = self._reservations.get(job.key)
            if plan is not None and all(uid.startswith(SLOT) for uid in plan.assignments):
                self._reservations.release(job.key)
        self._moves = [m for m in self._moves if m.key != flight.key]
        self.outcomes.plans[outcome] += 1

    def moving(self, key: str) -> bool:
        """Whether the plan for waiting job `key` still stands (the service asks before each
        move it carries out)."""
        return key in self._flights

    def refused(self, key: str) -> None:
        """A move of the plan for job `key` was refused (a PodDisruptionBudget, an error): the
        plan is dropped and nothing else of it moves."""
        flight = self._flights.get(key)
        if flight is not None:
            self._drop(flight, "refused")

    def in_flight(self, key: str) -> Move | None:
        flight = self._flights.get(key)
        return flight.move if flight is not None else None

    def take_moves(self) -> list[Move]:
        taken, self._moves = self._moves, []
        return taken

    def put_back(self, moves: Sequence[Move]) -> None:
        """Taken but not carried out (records not kept): next pass, if their plan stands."""
        self._moves[:0] = [m for m in moves if m.key in self._flights]

    def take_outcomes(self) -> ConsolidationOutcomes:
        outcomes, self.outcomes = self.outcomes, ConsolidationOutcomes()
        return outcomes
