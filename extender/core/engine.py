"""The engine: holds the components and sequences them for each verb; it owns no rule.

    filter     a stale view or a requeued job's backoff: wait → the pod's queue and verdict,
               past its quota preemption may make room (`line.admit`) → the gang placer →
               lacking room, preemption may plan it → the waiting room or the ledger
    prioritize planned node, else the placement scorer
    preempt    the same gate, then kube-scheduler's candidates narrowed (`line.preempt`)
    bind       the reservations check and count the bind; the ledger hands the pod over
    pass       whom to retry (the waiting room); lifecycle, preemption, hold (`line.nudges`);
               each queue's use into the usage history (`sample_usage`)

Components (docs/architecture.md says what each owns): `Reservations`, `HoldKeeper`,
`GangPlacer`, `WaitingRoom`, `Ledger`, `QueueBook`, `Preemption`, `Lifecycle`. Per-call context
(`now`; `stale`: why the view may not be trusted, "" while fresh) is passed in.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from functools import partial

from extender.core import recovery
from extender.core.consolidation.consolidation import Consolidation
from extender.core.gangs.gang import Gang
from extender.core.gangs.holder import HoldKeeper
from extender.core.gangs.placer import GangConfig, GangPlacer, Placed
from extender.core.gangs.plan_record import ToWrite
from extender.core.gangs.plans import bound_answer, planned_answer
from extender.core.gangs.reservations import GangOutcomes, Reservations
from extender.core.lifecycle.lifecycle import Lifecycle
from extender.core.line import Line
from extender.core.model.answers import (
    MAX_SCORE,
    BindDecision,
    BindRequest,
    FilterResult,
    NodeScores,
    Victims,
)
from extender.core.model.gpu_use import GpuUse
from extender.core.model.keys import is_single, job_key
from extender.core.model.notices import Notice, Outbox
from extender.core.model.rejection import Rejection
from extender.core.model.snapshot import PodInfo, Snapshot
from extender.core.placement.scoring import PlacementScorer, ScoreWeights
from extender.core.placement.topology import DEFAULT_TOPOLOGY
from extender.core.preemption.preemption import Preemption
from extender.core.preemption.regrow import regrowths
from extender.core.preemption.shrinks import Shrink
from extender.core.queues.book import QueueBook
from extender.core.queues.gate import queue_of
from extender.core.queues.ledger import Ledger
from extender.core.queues.policy import Policy
from extender.core.queues.usage_history import UsageHistory
from extender.core.waiting import Ref, WaitingRoom

SAMPLE_SECONDS = 10.0  # the usage history's sampling interval, at most


class Engine:
    def __init__(
        self,
        config: GangConfig | None = None,
        policy: Policy | None = None,
        scheduler_names: Collection[str] = ("gangplank",),
    ) -> None:
        self.config = config or GangConfig()
        self.outbox = Outbox()  # state changes to tell people (drained by the adapter)
        self.waiting = WaitingRoom(self.outbox)
        self.reservations = Reservations(self.outbox, on_planned=self.waiting.planned)
        self.holder = HoldKeeper(self.config.hold_seconds, self.outbox)
        self.placer = GangPlacer(self.config, self.reservations, self.holder, self.waiting.rank)
        self.preemption = Preemption(
            self.reservations, self.placer.free_of, self.config.reservation_seconds
        )
        self.ledger = Ledger()
        review = self.config.lifecycle_review_seconds
        self.lifecycle = Lifecycle(self.preemption.evictions, self.outbox, self.waiting, review)
        self.consolidation = Consolidation(
            self.reservations,
            self.placer.free_of,
            self.lifecycle,
            self.outbox,
            self.config.reservation_seconds,
        )
        self.scorer = PlacementScorer()  # `learn` is fed by the adapter (off the lock)
        self.scorer.reserved = self.placer.reserved_pods
        self.line = Line(self)
        self.placer.spare = self._spare
        self.scheduler_names = frozenset(scheduler_names)
        self.policy: Policy | None = None
        self.book: QueueBook | None = None
        self.now = 0.0  # the time of the last call that told it (bind carries none)
        self.history = UsageHistory(0.0, 0.0)  # rates from the policy's `fairness:`
        # Why the cluster's usage history is not known here ("" while it is): the fair order
        # is then today's, without history (set by the adapter that reads it back).
        self.history_lost = ""
        self.set_policy(policy)

    # ---- policy and the book ------------------------------------------
    def new_book(self, policy: Policy) -> QueueBook:
        return QueueBook(policy, self.scheduler_names)

    def set_policy(self, policy: Policy | None, book: QueueBook | None = None) -> QueueBook | None:
        """Use `policy` from now on (None: no queues); refused jobs are looked at again. `book`:
        one made for `policy` beforehand (counted outside the lock). Returns the book replaced,
        for the caller to drop outside its lock (freeing a large one takes milliseconds)."""
        old = self.book
        self.policy = policy
        if policy is not None and (book is None or book.policy is not policy):
            book = self.new_book(policy)
        self.book = book if policy is not None else None
        fairness = policy.fairness if policy is not None else None
        if fairness is not None:
            self.history.set_rates(fairness.half_life, fairness.window)
        self._update_past()
        topology = policy.topology if policy is not None else DEFAULT_TOPOLOGY
        self.placer.auto_hold = policy is None
        self.placer.topology = self.preemption.topology = self.scorer.topology = topology
        self.scorer.set_weights(policy.weights if policy is not None else ScoreWeights())
        self.line.policy_changed = True
        return old

    def book_for(self, snapshot: Snapshot) -> QueueBook:
        """The queue book, counted on `snapshot` with what is admitted and not bound yet."""
        assert self.book is not None
        reserved, busy = self.ledger.reserved(self.reservations.amounts())
        self.book.refresh(snapshot, reserved, busy)
        return self.book

    def queue_of(self, pod: PodInfo) -> tuple[str | None, str]:
        """(the pod's queue, or None: not queued; why it may not use it, or ""). Needs a policy."""
        assert self.policy is not None
        return queue_of(self.policy, pod)

    def queue_name(self, pod: PodInfo) -> str | None:
        """The pod's queue (None: not queued, or no policy)."""
        return queue_of(self.policy, pod)[0] if self.policy is not None else None

    def try_move(self, snapshot: Snapshot, key: str, pods: Sequence[PodInfo], needed: int) -> bool:
        """Consolidation's chance for job `key`, which lacks room (before any preemption)."""
        return self.consolidation.try_move(
            snapshot, key, pods, needed, self.now, self.policy, self.queue_name
        )

    def _spare(self, snapshot: Snapshot, gang: Gang, pod: PodInfo, node: str) -> str:
        """Why an elastic gang's extra may not take `node` (the fair line's say; "" without
        queues: reservations and the hold are already kept from it)."""
        return self.line.spare(snapshot, gang, pod, node) if self.policy is not None else ""

    def sync(self, snapshot: Snapshot, now: float) -> None:
        """Bring the components up to `now` on `snapshot` (cheap when nothing is due)."""
        self.reservations.sync(snapshot, now)
        self.consolidation.sync(snapshot, now)
        self.holder.sync(now, self.reservations.jobs())
        self.waiting.forget_gone(snapshot, now)
        self.placer.forget(self.waiting.gang_keys())

    # ---- filter ------------------------------------------
    def filter(
        self, snapshot: Snapshot, pod: PodInfo, names: Sequence[str], now: float, stale: str = ""
    ) -> FilterResult:
        self.now = now
        moved = self.consolidation.claim(pod)
        if moved is not None:  # a new pod of a job moved to make room: to its kept place
            self.sync(snapshot, now)
            return planned_answer(snapshot, moved, pod, names)
        key = job_key(pod)
        planned = self.reservations.planned_node(pod) is not None
        if not planned and not is_single(key):
            bound = bound_answer(snapshot, key, pod, names)
            if bound is not None:  # bound with its plan's other members (`plan_binds`)
                return bound
        if stale and not planned:
            queue = self.queue_of(pod)[0] if self.policy is not None else None
            if not is_single(key) or queue is not None:
                return self.waiting.wait_for_fresh_view(pod, key, queue, stale, names, now)
        held = None if planned else self.lifecycle.gate(snapshot, pod, key, names, now)
        if held is not None:  # a requeued job waits out its backoff
            return held
        if self.policy is None:
            return self.place(snapshot, key, pod, names, now, stale)
        queue, problem = self.queue_of(pod)
        self.ledger.asked_again(pod.uid)
        if problem:
            return self.line.refuse(key, pod, names, queue or "", "unknown-queue", problem, now)
        if queue is None:
            return self.place(snapshot, key, pod, names, now, stale)
        if planned:
            result = self.place(snapshot, key, pod, names, now, stale)
            if result.passed:
                self.ledger.admit(key, pod, None, now, planned=True)
            return result
        return self.line.admit(snapshot, key, pod, queue, names, now, stale)

    def place(
        self,
        snapshot: Snapshot,
        key: str,
        pod: PodInfo,
        names: Sequence[str],
        now: float,
        stale: str = "",
        queue: str | None = None,
    ) -> FilterResult:
        """The gang placer's answer; a gang lacking room may preempt (not on a stale view)."""
        placed = self._placed(snapshot, pod, names, now)
        gang = placed.gang if placed.rejection == Rejection.NO_ROOM and not stale else None
        if gang is not None and self.line.make_room(snapshot, gang, queue, now):
            placed = self._placed(snapshot, pod, names, now)
        result = placed.result
        if not result.passed and self.policy is not None:
            reason = next(iter({**result.unresolvable, **result.failed}.values()), "")
            if reason:
                self.waiting.note_reason(key, reason, now)
        return result

    def _placed(self, snapshot: Snapshot, pod: PodInfo, names: Sequence[str], now: float) -> Placed:
        self.sync(snapshot, now)
        placed = self.placer.filter(snapshot, pod, names, now)
        if placed.gang is not None and placed.rejection is not None:
            self.waiting.park(placed.gang, pod, placed.rejection, placed.reason, now)
        plan = self.reservations.get(job_key(pod))
        if plan is not None and pod.uid in plan.assignments:
            self.waiting.awaits_victims(pod, plan.key, waits=not placed.result.passed)
        return placed

    # ---- the other verbs ------------------------------------------
    def scores(self, snapshot: Snapshot, pod: PodInfo, names: Sequence[str]) -> NodeScores:
        node = self.reservations.planned_node(pod)
        if node is not None:
            return NodeScores(0, {node: MAX_SCORE})
        return self.scorer.scores(snapshot, pod, names)

    def check_bind(self, request: BindRequest) -> BindDecision:
        return self.reservations.check_bind(request)

    def bound(self, request: BindRequest) -> PodInfo | None:
        """A pod was bound; returns it as admitted (for the cache to count it before the watch
        delivers it), or None when gangplank did not admit it."""
        started = self.reservations.bound(request.uid)
        if started is not None:
            self.preemption.started(started, self.now)
        return self.ledger.bound(request.uid)

    def preempt(
        self,
        snapshot: Snapshot,
        pod: PodInfo,
        candidates: Mapping[str, Victims],
        now: float,
        stale: str = "",
    ) -> dict[str, Victims]:
        """kube-scheduler's preemption candidates (for a pod its own filters found no room for),
        narrowed to what the rules allow. A gang member's whole gang is planned first."""
        self.now = now
        if stale:
            return {}  # no one is evicted on a stale view
        self.sync(snapshot, now)  # plans whose members all bound are gone (consolidation asks)
        return self.line.preempt(snapshot, pod, candidates, now)

    # ---- the periodic pass ------------------------------------------
    def kick_candidates(
        self, snapshot: Snapshot, now: float, stale: str = "", use: GpuUse | None = None
    ) -> list[Ref]:
        """Parked pods kube-scheduler should retry now (see `waiting.py`), after the pass's
        work (`line.nudges`; `use`: GPU use read from Prometheus, for `lifecycle/`)."""
        self.now = now
        self.sync(snapshot, now)
        refs = self.waiting.gang_nudges(
            snapshot,
            now,
            self.config.kick_interval_seconds,
            partial(self.reservations.victims_gone, snapshot),
            lambda gang: self.placer.fits_now(snapshot, gang),
        )
        refs += self.waiting.handed_in(fresh=not stale, now=now)
        if self.policy is not None:
            refs += self.line.nudges(snapshot, now, stale, use)
            if not stale:
                self.sample_usage(snapshot, now)
        return refs

    def regrowths(self, snapshot: Snapshot, now: float) -> list[Shrink]:
        """Workloads gangplank made smaller to raise by one member now (`regrow.py`)."""
        shrunk_at = self.preemption.evictions.shrunk_at
        free = partial(self.placer.free_of, None)
        after = self.config.regrow_after_seconds
        return regrowths(snapshot, shrunk_at, now, free, self.placer.topology, self._spare, after)

    def sample_usage(self, snapshot: Snapshot, now: float) -> None:
        """Each queue's use since the last sample into the usage history (at most every
        `SAMPLE_SECONDS`), and the fair order's view of it brought up to `now`."""
        if self.policy is None or not self.history.on:
            return
        last = self.history.last
        if last is not None and now - last < SAMPLE_SECONDS:
            return
        book = self.book_for(snapshot)
        self.history.sample(now, {q: s.used for q, s in book.state.items()})
        self._update_past()

    def history_known(self, lost: str, record: Mapping[str, object] | None = None) -> None:
        """What the adapter read back of the cluster's usage history: `record` to add to this
        process's own samples, or `lost`: why it could not be read ("" once it is known)."""
        if record is not None:
            self.history.restore(record)
        self.history_lost = lost
        self._update_past()

    def _update_past(self) -> None:
        if self.book is not None:
            known = self.history.on and not self.history_lost
            now = max(self.now, self.history.last or 0.0)  # read back before any call
            self.book.past = self.history.average(now) if known else {}

    # ---- what the adapters take and ask ------------------------------------------
    def take_notices(self) -> list[Notice]:
        """State changes to tell people since the last call (for Events)."""
        return self.outbox.take()

    def take_outcomes(self) -> GangOutcomes:
        return self.reservations.take_outcomes(self.placer.take_failures())

    def restore_plans(self, snapshot: Snapshot, now: float) -> int:
        """The plans an earlier process recorded, back in memory (see `recovery.py`)."""
        return recovery.restore_plans(self, snapshot, now)

    def adopt_pending(self, snapshot: Snapshot, now: float) -> list[Ref]:
        """Pending pods remembered as their filter would have left them (see `recovery.py`)."""
        self.now = now
        return recovery.adopt_pending(self, snapshot, now)

    def records_to_write(self, snapshot: Snapshot, uid: str = "", key: str = "") -> list[ToWrite]:
        return recovery.records_to_write(self, snapshot, uid, key)
