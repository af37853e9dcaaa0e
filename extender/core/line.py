"""The fair line: what the engine does for jobs in queues, in the order the policy gives them.

- A job its queue admits but that fits nowhere may have room made by moving movable jobs
  (`consolidation/`), and only when no move would do, preempt (`make_room`, and kube-scheduler's
  preempt verb: `preempt`); a job its queue's quota refuses may take the place of work the rules
  let it preempt (`past_quota`, see `preemption/quota_room.py`).
- Each pass (`nudges`): the first jobs of the fair line that kube-scheduler never sends (no node
  has room) get the same chance (`_reclaim_pass`); the hold goes to the first job of the line its
  quota admits (`_give_hold`); refused jobs their queue admits now are nudged.

An elastic gang's extra members (beyond its minimum) wait behind everyone: they are never the
head of the line, never get the hold, never preempt, and start only where the head of the line
would still fit (`spare`, `queues/head_room.py`).

It keeps no state of its own but when it last looked; the state is the components'.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

from extender.core.gangs.extras import extras_only
from extender.core.gangs.gang import Gang, resolve_gang
from extender.core.lifecycle.watchdog import Look
from extender.core.model.answers import FilterResult, Victims
from extender.core.model.gpu_use import GpuUse
from extender.core.model.keys import is_single, job_key
from extender.core.model.rejection import Rejection
from extender.core.model.snapshot import PodInfo, Snapshot
from extender.core.placement.planner import plan_gang
from extender.core.preemption.quota_room import QUOTA_RULES
from extender.core.queues.admission import Verdict, check_quota, check_state
from extender.core.queues.book import QueueBook
from extender.core.queues.fair_order import fair_order
from extender.core.queues.gate import admits_now, verdict_on_job
from extender.core.queues.head_room import kept_for_head, pods_needed
from extender.core.queues.waiting_jobs import WaitingJob
from extender.core.waiting import Ref

if TYPE_CHECKING:
    from extender.core.engine import Engine

HEAD_TRIES = 64  # jobs looked at for the head of the line (the first few are refused by quota)
RECLAIM_TRIES = 2  # jobs of the line looked at for preemption per pass (a dry run each)


class Line:
    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._reclaimed_at = float("-inf")
        self.policy_changed = False

    def admit(
        self,
        snapshot: Snapshot,
        key: str,
        pod: PodInfo,
        queue: str,
        names: Sequence[str],
        now: float,
        stale: str,
    ) -> FilterResult:
        """A pod of `queue` with no plan yet: its job's verdict, then placement."""
        engine = self._engine
        verdict = self.verdict(snapshot, key, pod, queue)
        if verdict is None:  # an invalid or incomplete gang: the gang placer says why
            return engine.place(snapshot, key, pod, names, now, stale)
        if not verdict.ok:
            missing = self.past_quota(snapshot, key, pod, queue, verdict, now, stale)
            if missing is not None:
                reason = f"{verdict.reason}; {missing}" if missing else verdict.reason
                return self.refuse(key, pod, names, queue, verdict.rule, reason, now)
        engine.waiting.admitted(key)
        result = engine.place(snapshot, key, pod, names, now, stale, queue)
        if result.passed:
            engine.ledger.admit(key, pod, queue, now, planned=key in engine.reservations)
            members = (pod,) if is_single(key) else snapshot.groups.get(key, (pod,))
            engine.ledger.count(key, queue, min((p.created for p in members), default=now), now)
        return result

    def refuse(
        self,
        key: str,
        pod: PodInfo,
        names: Sequence[str],
        queue: str,
        rule: str,
        reason: str,
        now: float,
    ) -> FilterResult:
        """`pod`'s job is refused by its queue: it waits, and is told why (once per rule)."""
        self._engine.waiting.refuse(key, pod, queue, rule, reason, now)
        self._engine.ledger.refused(queue, rule)
        return FilterResult(passed=[], unresolvable=dict.fromkeys(names, reason))

    def verdict(self, snapshot: Snapshot, key: str, pod: PodInfo, queue: str) -> Verdict | None:
        """The quota verdict on `pod`'s job, whole (None: an invalid or incomplete gang)."""
        engine = self._engine
        assert engine.policy is not None
        plan = engine.reservations.get(key)
        planned = plan.assignments.keys() if plan is not None else ()
        book = engine.book_for(snapshot)
        return verdict_on_job(engine.policy, book, snapshot, key, pod, queue, planned)

    def past_quota(
        self,
        snapshot: Snapshot,
        key: str,
        pod: PodInfo,
        queue: str,
        verdict: Verdict,
        now: float,
        stale: str = "",
    ) -> str | None:
        """A job its queue's quota refuses may take the place of work the rules let it preempt:
        None when a plan was made (victims are leaving for it); else why not ("" when preemption
        has no say: the queue is closed, the view stale)."""
        engine = self._engine
        if verdict.rule not in QUOTA_RULES or stale or key in engine.reservations:
            return ""
        assert engine.policy is not None
        book = engine.book_for(snapshot)
        state = ("quota", id(book), book.version, snapshot.origin, snapshot.capacity_generation)
        tried = engine.preemption.tried.known(key, state, now)
        if tried is not None:
            return tried
        pods: Sequence[PodInfo] = (pod,)
        needed = 1
        if not is_single(key):
            gang = resolve_gang(snapshot, key, asking=pod)
            if not gang.ready:
                return ""
            pods, needed = gang.pending, gang.needed
        evicted, why = engine.preemption.plan_past_quota(
            snapshot, key, pods, needed, queue, now, engine.policy, book
        )
        if evicted:
            engine.preemption.tried.found(key)
            engine.ledger.plan_queue(key, queue)
            entry = engine.waiting.admitted(key)
            if entry is not None:  # its other members were parked by the refusal: retry them
                engine.waiting.nudge_later(entry.pods)
            return None
        if engine.preemption.budget_left(engine.policy, now) > 0:
            engine.preemption.tried.remember(key, state, now, why)
        return why

    def make_room(self, snapshot: Snapshot, gang: Gang, queue: str | None, now: float) -> bool:
        """A gang its queue admits (or with no queue) lacks room: preemption may plan it on what
        victims free. True when a plan was made."""
        engine = self._engine
        if gang.key in engine.reservations or not gang.ready or extras_only(gang):
            return False  # an elastic gang's extras never preempt
        state = engine.placer.room_state(snapshot, gang)
        if engine.preemption.tried.known(gang.key, state, now) is not None:
            return False  # tried on this very state a moment ago: no victims then, none now
        if engine.try_move(snapshot, gang.key, gang.pending, gang.needed):
            return True  # moving movable jobs makes room: no one is preempted
        book = engine.book_for(snapshot) if engine.policy is not None else None
        if engine.preemption.plan(
            snapshot, gang.key, gang.pending, gang.needed, queue, now, engine.policy, book
        ):
            engine.preemption.tried.found(gang.key)
            return True
        if state is not None:
            engine.preemption.tried.remember(gang.key, state, now)
        return False

    def preempt(
        self, snapshot: Snapshot, pod: PodInfo, candidates: Mapping[str, Victims], now: float
    ) -> dict[str, Victims]:
        engine = self._engine
        key = job_key(pod)
        if engine.lifecycle.holds_back(key, now):
            return {}  # a requeued job waiting out its backoff: no one goes for it
        policy = engine.policy
        book = engine.book_for(snapshot) if policy is not None else None
        queue: str | None = None
        planned = engine.reservations.planned_node(pod) is not None
        if policy is not None:
            queue, problem = engine.queue_of(pod)
            if problem:
                return {}
            if queue is not None and not planned:
                verdict = self.verdict(snapshot, key, pod, queue)
                if verdict is None:
                    return {}
                if not verdict.ok:
                    missing = self.past_quota(snapshot, key, pod, queue, verdict, now)
                    if missing is not None:  # its queue would not admit it: no one is evicted
                        reason = f"{verdict.reason}; {missing}" if missing else verdict.reason
                        self.refuse(key, pod, (), queue, verdict.rule, reason, now)
                        return {}
                    planned = True  # victims chosen so that its queue admits it
        if engine.consolidation.moving(key):
            return {}  # room is being made by moving jobs: no one is preempted for it
        if not planned and is_single(key):
            if engine.try_move(snapshot, key, (pod,), 1):
                return {}
            # elastic gangs' extras go before any pod alone, by gangplank's plan (an extra
            # taken through its workload must not be deleted by kube-scheduler)
            engine.preemption.plan(snapshot, key, (pod,), 1, queue, now, policy, book, candidates)
        if not planned and not is_single(key):
            gang = resolve_gang(snapshot, key, asking=pod)
            if extras_only(gang) or (gang.elastic and key in engine.reservations):
                return {}  # an elastic gang's extra member: no one is evicted for it
            if not gang.ready:
                # Parked without a filter call (no node had room): nudged once it is complete.
                engine.waiting.park(gang, pod, Rejection.INCOMPLETE, "", now)
                engine.placer.count(Rejection.INCOMPLETE)
                return {}
            if engine.try_move(snapshot, key, gang.pending, gang.needed):
                return {}
            if not engine.preemption.plan(
                snapshot, key, gang.pending, gang.needed, queue, now, policy, book
            ):
                engine.waiting.park(gang, pod, Rejection.NO_ROOM, "", now)
        return engine.preemption.narrow(snapshot, pod, candidates, now, policy, book)

    # ---- each pass ------------------------------------------
    def nudges(self, snapshot: Snapshot, now: float, stale: str, use: GpuUse | None) -> list[Ref]:
        """The pass's work with a policy: jobs that hold GPUs and do not use them (`lifecycle/`,
        with `use`), the line's preemption and hold; returns the refused jobs their queue admits
        now."""
        engine = self._engine
        policy = engine.policy
        assert policy is not None
        book = engine.book_for(snapshot)
        if not stale:
            jobs = engine.reservations.jobs()
            engine.lifecycle.review(Look(snapshot, now, policy, use, engine.scheduler_names, jobs))
            engine.preemption.first = engine.lifecycle.reclaim_first()
            self._reclaim_pass(snapshot, book, now)
        book = engine.book_for(snapshot)
        self._give_hold(snapshot, book, now)
        changed, self.policy_changed = self.policy_changed, False
        admits = admits_now(policy, book)

        def waiting_pods(key: str) -> Sequence[PodInfo] | None:
            job = book.waiting_keys.get(key)
            return job.pods if job is not None else None

        refs = engine.waiting.queue_nudges(
            waiting_pods,
            admits,
            (id(book), book.version),
            changed,
            now,
            engine.config.kick_interval_seconds,
        )
        if refs is None:
            return []  # nothing new since the last look: no refused job can pass now
        engine.ledger.prune(now, engine.reservations.jobs())
        return refs

    def _reclaim_pass(self, snapshot: Snapshot, book: QueueBook, now: float) -> None:
        """The first jobs of the fair line that their queue admits but that do not fit (pods
        kube-scheduler never sends: no node has room) may preempt or reclaim; those their
        queue's quota refuses may take the place of work the rules let them preempt."""
        engine = self._engine
        if now - self._reclaimed_at < engine.config.kick_interval_seconds:
            return
        self._reclaimed_at = now
        policy = engine.policy
        assert policy is not None
        tried = 0
        for job in self._line(book, now, snapshot):
            if tried >= RECLAIM_TRIES:
                return
            pending = sorted(job.pods, key=lambda p: (p.created, p.name))
            verdict = check_quota(book, job.queue, job.requests, job.name)
            if not verdict.ok:
                if verdict.rule in QUOTA_RULES and check_state(policy, job.queue).ok:
                    tried += 1
                    missing = self.past_quota(
                        snapshot, job.key, pending[0], job.queue, verdict, now
                    )
                    if missing is not None:
                        reason = f"{verdict.reason}; {missing}" if missing else verdict.reason
                        for pod in pending:
                            engine.waiting.refuse(
                                job.key, pod, job.queue, verdict.rule, reason, now
                            )
                continue
            tried += 1
            needed = pods_needed(snapshot, job.key, pending)
            if needed is None:
                continue
            free = engine.placer.free_of(job.key, only={r for p in pending for r in p.requests})
            if plan_gang(snapshot, pending, needed, free, bounded=True).ok:
                continue  # it fits: kube-scheduler will place it
            if engine.try_move(snapshot, job.key, pending, needed):
                continue  # moving movable jobs makes room: no one is preempted
            engine.preemption.plan(snapshot, job.key, pending, needed, job.queue, now, policy, book)

    def _line(
        self, book: QueueBook, now: float, snapshot: Snapshot | None = None
    ) -> Iterator[WaitingJob]:
        """The first HEAD_TRIES waiting jobs in fair order, those with a plan, those a
        lifecycle rule holds back (a requeue's backoff, held) and a moved job's new pods (their
        places are kept) left out."""
        engine = self._engine
        moves = engine.consolidation
        for job in itertools.islice(fair_order(book), HEAD_TRIES):
            if job.key in engine.reservations or engine.lifecycle.holds_back(job.key, now):
                continue
            if not any(moves.kept_for(p) for p in job.pods[:1]):  # a moved job's new pods
                yield job

    def admissible(
        self, book: QueueBook, now: float, snapshot: Snapshot | None = None
    ) -> Iterator[WaitingJob]:
        """Waiting jobs in fair order that their queue's quota admits now (`snapshot`: elastic
        gangs' extras left out)."""
        for job in self._line(book, now, snapshot):
            if check_quota(book, job.queue, job.requests, job.name).ok:
                yield job

    def _give_hold(self, snapshot: Snapshot, book: QueueBook, now: float) -> None:
        """The hold goes to the first job of the fair line that its quota admits."""
        engine = self._engine
        for job in self.admissible(book, now, snapshot):
            pending = sorted(job.pods, key=lambda p: (p.created, p.name))
            if engine.holder.give(
                snapshot,
                job.key,
                pending,
                now,
                engine.placer.free_of(job.key),
                engine.placer.taken_nodes(snapshot),
                planned=job.key in engine.reservations,
            ):
                return
        hold = engine.holder.current
        if hold is not None and hold.key not in book.waiting_keys:
            engine.holder.release()

    def spare(self, snapshot: Snapshot, gang: Gang, pod: PodInfo, node: str) -> str:
        """Why extra member `pod` of elastic `gang` may not take room on `node` ("": it may): the
        room is kept for the head of the line (`queues/head_room.py`)."""
        engine = self._engine
        line = self.admissible(engine.book_for(snapshot), engine.now, snapshot)
        return kept_for_head(snapshot, line, gang, pod, node, engine.placer.free_of)
