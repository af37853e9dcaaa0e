"""The coordinator: joins the small decisions for each call, and owns none of their rules.

filter: the pod's queue (`policy`) → admission of its job by queue state and quota
(`admission`) → placement of the job, a gang whole (`gang_scheduler`). Without a policy it is the
gang scheduler alone, as before queues existed.

With a policy the hold (capacity kept from others so the first job in line is not starved) goes
to the head of the fair line (`fair_order`) instead of the first gang that failed to fit, and jobs
refused by quota are nudged when they would now be admitted (a pod finished, the policy changed).
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from extender.core.gangs.gang import resolve_gang
from extender.core.gangs.gang_scheduler import GangScheduler
from extender.core.gangs.plan_record import ToWrite, restore, to_write
from extender.core.model.answers import BindDecision, BindRequest, FilterResult, NodeScores, Victims
from extender.core.model.keys import is_single, job_key, job_name
from extender.core.model.notices import Notice
from extender.core.model.resources import total
from extender.core.model.snapshot import PodInfo, Snapshot
from extender.core.model.workload import queue_label
from extender.core.placement.planner import plan_gang
from extender.core.placement.scoring import PlacementScorer, ScoreWeights
from extender.core.placement.topology import DEFAULT_TOPOLOGY
from extender.core.preemption.preemption import Eviction, Preemption
from extender.core.preemption.quota_room import QUOTA_RULES
from extender.core.queues.admission import ADMITTED, Verdict, check_quota, check_state
from extender.core.queues.book import QueueBook
from extender.core.queues.fair_order import fair_order
from extender.core.queues.policy import Policy
from extender.core.queues.waiting_jobs import WaitingJob

IN_FLIGHT_SECONDS = 30.0  # an admitted pod counts against its queue this long before it binds
FORGET_SECONDS = 600.0  # a refused job the cache no longer shows waiting is forgotten after this
HEAD_TRIES = 64  # jobs looked at for the head of the line (the first few are refused by quota)
NO_VICTIMS_SECONDS = 30.0  # a search for victims that found none is not repeated on the same state
NO_VICTIMS_LIMIT = 10_000
STALE_WAITING_LIMIT = 100_000  # pods remembered to be nudged once the view is fresh
RECLAIM_TRIES = 2  # jobs of the line looked at for preemption per pass (a dry run each)


@dataclass
class QueueOutcomes:
    """Counted since the adapter last looked (for metrics); drained by `take_queue_outcomes`."""

    admitted: Counter[str] = field(default_factory=Counter)  # by queue
    refused: Counter[tuple[str, str]] = field(default_factory=Counter)  # by (queue, rule)
    waits: list[tuple[str, float]] = field(default_factory=list)  # (queue, seconds) on admission


@dataclass
class Refused:
    queue: str
    rule: str
    since: float
    pods: dict[str, tuple[str, str]] = field(default_factory=dict)  # uid -> (namespace, name)


class Coordinator:
    def __init__(
        self,
        gangs: GangScheduler | None = None,
        policy: Policy | None = None,
        scheduler_names: Collection[str] = ("gangplank",),
    ) -> None:
        self.gangs = gangs or GangScheduler()
        self.preemption = Preemption(self.gangs)
        self._now = 0.0  # the time of the last call that told it (bind carries none)
        self._reclaimed_at = float("-inf")
        self.scheduler_names = frozenset(scheduler_names)
        self.policy: Policy | None = None
        self.book: QueueBook | None = None
        self.refused: dict[str, Refused] = {}
        self.reasons: dict[str, tuple[str, float]] = {}  # job -> (last reason, when)
        # Why the cluster view may not be trusted now ("" while it is fresh): the adapter sets it
        # before each call. While stale, nothing is planned, admitted or evicted on it.
        self.stale = ""
        # Pods told to wait for a fresh view: nudged once it is fresh (uid -> namespace, name).
        self.stale_waiting: dict[str, tuple[str, str]] = {}
        self.admitted: dict[str, float] = {}  # job -> when (an admission counts once)
        self.nudged: dict[str, float] = {}  # job -> when its refused pods were last nudged
        # Admitted, not bound yet: single pods between filter and bind (uid -> queue, pod, until),
        # and the queue of each gang plan. Both count against their queue.
        self.in_flight: dict[str, tuple[str, PodInfo, float]] = {}
        self.plan_queues: dict[str, str] = {}
        # Admitted pods by uid, so that a bind can hand the pod to the cache before the watch
        # delivers it (kube-scheduler is often faster than the watch).
        self.admitted_pods: dict[str, tuple[PodInfo, float]] = {}
        self.outcomes = QueueOutcomes()
        self._policy_changed = False
        self._refused_checked: tuple[int, int, int] = (0, -1, -1)
        self.scorer = PlacementScorer()  # `learn` is fed by the adapter (off the lock)
        # Jobs preemption found no victims for, on which state, until when: retries on the same
        # capacity skip the search (victims also become eligible with time: minRuntime).
        self._no_victims: dict[str, tuple[tuple[object, ...], float, str]] = {}
        self._no_victims_prune_at = 256
        # Pods refused by quota whose job then got a preemption plan, and the members of plans
        # restored from their records: retried at the next pass.
        self._to_nudge: dict[str, tuple[str, str]] = {}
        self.set_policy(policy)

    # ---- policy ------------------------------------------
    def new_book(self, policy: Policy) -> QueueBook:
        return QueueBook(policy, self.scheduler_names)

    def set_policy(self, policy: Policy | None, book: QueueBook | None = None) -> QueueBook | None:
        """Use `policy` from now on (None: no queues). Refused jobs are looked at again. `book`:
        one made for `policy` beforehand (counted outside the lock). Returns the book replaced,
        for the caller to drop outside its lock (freeing a large one takes milliseconds)."""
        old = self.book
        self.policy = policy
        if policy is not None and (book is None or book.policy is not policy):
            book = self.new_book(policy)
        self.book = book if policy is not None else None
        self.gangs.auto_hold = policy is None
        self.gangs.topology = policy.topology if policy is not None else DEFAULT_TOPOLOGY
        self.scorer.set_weights(policy.weights if policy is not None else ScoreWeights())
        self._policy_changed = True
        return old

    def book_for(self, snapshot: Snapshot) -> QueueBook:
        return self._book(snapshot)

    def _book(self, snapshot: Snapshot) -> QueueBook:
        assert self.book is not None
        reserved: dict[str, dict[str, int]] = {}
        for gang, amounts in self.gangs.reservations().items():
            queue = self.plan_queues.get(gang)
            if queue is not None:
                _add(reserved.setdefault(queue, {}), amounts)
        busy = set(self.gangs.plans)
        for queue, pod, _ in self.in_flight.values():
            _add(reserved.setdefault(queue, {}), pod.requests)
            busy.add(job_key(pod))
        self.book.refresh(snapshot, reserved, busy)
        return self.book

    # ---- filter ------------------------------------------
    def filter(
        self, snapshot: Snapshot, pod: PodInfo, names: Sequence[str], now: float
    ) -> FilterResult:
        policy = self.policy
        self._now = now
        if self.stale:
            waits = self._stale_wait(pod, names, now)
            if waits is not None:
                return waits
        if policy is None:
            return self._place(snapshot, job_key(pod), pod, names, now)
        queue, problem = self.queue_of(pod)
        key = job_key(pod)
        self.in_flight.pop(pod.uid, None)  # asked again: its last admission did not bind
        if problem:
            return self._refuse(key, pod, names, queue or "", "unknown-queue", problem, now)
        if queue is None:
            return self._place(snapshot, key, pod, names, now)
        if self.gangs.planned_node(pod) is not None:
            result = self._place(snapshot, key, pod, names, now)
            if result.passed:
                self.admitted_pods[pod.uid] = (pod, now)
            return result
        verdict = self._admit(snapshot, key, pod, queue)
        if verdict is None:  # an invalid or incomplete gang: the gang scheduler says why
            return self._place(snapshot, key, pod, names, now)
        if not verdict.ok:
            missing = self._preempt_past_quota(snapshot, key, pod, queue, verdict, now)
            if missing is not None:
                reason = f"{verdict.reason}; {missing}" if missing else verdict.reason
                return self._refuse(key, pod, names, queue, verdict.rule, reason, now)
        self.refused.pop(key, None)
        result = self._place(snapshot, key, pod, names, now, queue)
        if result.passed:
            self._admitted(key, pod, queue, now)
        if result.passed and key not in self.admitted:
            self.admitted[key] = now
            self.outcomes.admitted[queue] += 1
            created = min((p.created for p in self._job_pods(snapshot, key, pod)), default=now)
            self.outcomes.waits.append((queue, max(0.0, now - created)))
        return result

    def _stale_wait(self, pod: PodInfo, names: Sequence[str], now: float) -> FilterResult | None:
        """While the view is stale, a gang or a queued job waits (nothing is planned or admitted
        on stale data); a pod already planned, or outside gangs and queues, goes on (None)."""
        key = job_key(pod)
        if self.gangs.planned_node(pod) is not None:
            return None
        queue = self.queue_of(pod)[0] if self.policy is not None else None
        if is_single(key) and queue is None:
            return None
        where = f" (queue {queue})" if queue else ""
        reason = (
            f"{job_name(key)}{where} waits: gangplank's view of the cluster is stale "
            f"({self.stale}); gangs and queued jobs are not planned or admitted on it until it "
            "is fresh (pods outside gangs and queues are still scheduled)"
        )
        self.reasons[key] = (reason, now)
        if len(self.stale_waiting) < STALE_WAITING_LIMIT:
            self.stale_waiting[pod.uid] = (pod.namespace, pod.name)
        return FilterResult(passed=[], unresolvable=dict.fromkeys(names, reason))

    def _remember_no_victims(
        self, key: str, state: tuple[object, ...], now: float, why: str = ""
    ) -> None:
        """Remember a fruitless search for victims for NO_VICTIMS_SECONDS; what has lapsed is
        dropped whenever the memory has doubled since it was last looked through."""
        if len(self._no_victims) >= self._no_victims_prune_at:
            self._no_victims = {k: v for k, v in self._no_victims.items() if v[1] > now}
            if len(self._no_victims) >= NO_VICTIMS_LIMIT:
                self._no_victims.clear()
            self._no_victims_prune_at = max(256, 2 * len(self._no_victims))
        self._no_victims[key] = (state, now + NO_VICTIMS_SECONDS, why)

    def queue_of(self, pod: PodInfo) -> tuple[str | None, str]:
        """(the pod's queue, or None: not queued; why it may not use it, or ""). Needs a policy."""
        assert self.policy is not None
        policy = self.policy
        label_key, label = queue_label(pod)
        queue, problem = policy.resolve(label, pod.namespace, label_key)
        if problem:
            return None, f"pod {pod.key}: {problem}"
        if queue is not None and not policy.is_leaf(queue):
            kids = ", ".join(policy.children.get(queue, ()))
            return queue, (
                f"pod {pod.key}: queue {queue} has child queues ({kids}) and holds no work "
                "itself; name one of them"
            )
        return queue, ""

    def _admit(self, snapshot: Snapshot, key: str, pod: PodInfo, queue: str) -> Verdict | None:
        """The quota verdict on the pod's job, whole; None for a gang that is invalid or not
        complete (no quota question yet)."""
        assert self.policy is not None
        request: dict[str, int] = dict(pod.requests)
        running = False
        if not is_single(key):
            gang = resolve_gang(snapshot, key, asking=pod)
            if not gang.ready:
                return None
            request = total(p.requests for p in gang.pending)
            running = bool(gang.bound)
        # A partly bound gang is running work: it is completed even in a closed queue.
        verdict = ADMITTED if running else check_state(self.policy, queue)
        if verdict.ok:
            verdict = check_quota(self._book(snapshot), queue, request, job_name(key))
        return verdict

    def _preempt_past_quota(
        self, snapshot: Snapshot, key: str, pod: PodInfo, queue: str, verdict: Verdict, now: float
    ) -> str | None:
        """A job its queue's quota refuses may take the place of work the rules let it preempt
        (`quota_room`): None when a plan was made (victims are leaving for it); else why not
        ("" when preemption has no say: the queue is closed, the view stale)."""
        if verdict.rule not in QUOTA_RULES or self.stale or key in self.gangs.plans:
            return ""
        assert self.policy is not None
        book = self._book(snapshot)
        state = ("quota", id(book), book.version, snapshot.origin, snapshot.capacity_generation)
        tried = self._no_victims.get(key)
        if tried is not None and tried[0] == state and now < tried[1]:
            return tried[2]
        pods: Sequence[PodInfo] = (pod,)
        needed = 1
        if not is_single(key):
            gang = resolve_gang(snapshot, key, asking=pod)
            if not gang.ready:
                return ""
            pods, needed = gang.pending, gang.needed
        evicted, why = self.preemption.plan_past_quota(
            snapshot, key, pods, needed, queue, now, self.policy, book
        )
        if evicted:
            self._no_victims.pop(key, None)
            self.plan_queues[key] = queue
            entry = self.refused.pop(key, None)
            if entry is not None:  # its other members were parked by the refusal: retry them
                self._to_nudge.update(entry.pods)
            return None
        if self.preemption.budget_left(self.policy, now) > 0:
            self._remember_no_victims(key, state, now, why)
        return why

    def _lacks_room(self, key: str, pod: PodInfo) -> bool:
        """Whether the gang scheduler just refused the pod's gang for want of room."""
        waiting = self.gangs.waiting.get(key)
        found = waiting.rejected.get(pod.uid) if waiting is not None else None
        return found is not None and found[2] == "no-room" and key not in self.gangs.plans

    def _admitted(self, key: str, pod: PodInfo, queue: str, now: float) -> None:
        self.admitted_pods[pod.uid] = (pod, now)
        if is_single(key):
            self.in_flight[pod.uid] = (queue, pod, now + IN_FLIGHT_SECONDS)
        elif key in self.gangs.plans:
            self.plan_queues[key] = queue

    def _job_pods(self, snapshot: Snapshot, key: str, pod: PodInfo) -> Sequence[PodInfo]:
        return (pod,) if is_single(key) else snapshot.groups.get(key, (pod,))

    def _place(
        self,
        snapshot: Snapshot,
        key: str,
        pod: PodInfo,
        names: Sequence[str],
        now: float,
        queue: str | None = None,
    ) -> FilterResult:
        result = self.gangs.filter(snapshot, pod, names, now)
        if not result.passed and not self.stale and self._lacks_room(key, pod):
            gang = resolve_gang(snapshot, key, asking=pod)
            state = self.gangs.room_state(snapshot, gang)
            tried = self._no_victims.get(key)
            if state is not None and tried is not None and tried[0] == state and now < tried[1]:
                pass  # tried on this very state a moment ago: no victims then, none now
            elif gang.ready:
                book = self._book(snapshot) if self.policy is not None else None
                if self.preemption.plan(
                    snapshot, key, gang.pending, gang.needed, queue, now, self.policy, book
                ):
                    self._no_victims.pop(key, None)
                    result = self.gangs.filter(snapshot, pod, names, now)
                elif state is not None:
                    self._remember_no_victims(key, state, now)
        if not result.passed and self.policy is not None:
            reason = next(iter({**result.unresolvable, **result.failed}.values()), "")
            if reason:
                self.reasons[key] = (reason, now)
        return result

    def _refuse(
        self,
        key: str,
        pod: PodInfo,
        names: Sequence[str],
        queue: str,
        rule: str,
        reason: str,
        now: float,
    ) -> FilterResult:
        self._hold_back(key, pod, queue, rule, reason, now)
        self.outcomes.refused[(queue, rule)] += 1
        return FilterResult(passed=[], unresolvable=dict.fromkeys(names, reason))

    def _hold_back(
        self, key: str, pod: PodInfo, queue: str, rule: str, reason: str, now: float
    ) -> None:
        """Remember that `pod`'s job is refused (to nudge it once it may go) and tell why."""
        entry = self.refused.get(key)
        if entry is None or entry.rule != rule:
            entry = self.refused[key] = Refused(queue, rule, now)
            self.gangs.notices.queue_held(key, reason, pod)
        entry.pods[pod.uid] = (pod.namespace, pod.name)
        self.reasons[key] = (reason, now)

    # ---- the other verbs ------------------------------------------
    def scores(self, snapshot: Snapshot, pod: PodInfo, names: Sequence[str]) -> NodeScores:
        if self.gangs.planned_node(pod) is not None:
            return self.gangs.scores(snapshot, pod, names)
        return self.scorer.scores(snapshot, pod, names)

    def take_notices(self) -> list[Notice]:
        """State changes to tell people since the last call (for Events)."""
        return self.gangs.notices.take()

    def check_bind(self, request: BindRequest) -> BindDecision:
        return self.gangs.check_bind(request)

    def bound(self, request: BindRequest) -> PodInfo | None:
        """A pod was bound; returns it as admitted (for the cache to count it before the watch
        delivers it), or None when gangplank did not admit it."""
        planned = [k for k, plan in self.gangs.plans.items() if request.uid in plan.assignments]
        self.gangs.bound(request)
        for key in planned:
            plan = self.gangs.plans.get(key)
            if plan is None or not plan.assignments:
                self.preemption.started(key, self._now)
        self.in_flight.pop(request.uid, None)
        found = self.admitted_pods.pop(request.uid, None)
        return found[0] if found is not None else None

    def preempt(
        self, snapshot: Snapshot, pod: PodInfo, candidates: Mapping[str, Victims], now: float
    ) -> dict[str, Victims]:
        """kube-scheduler's preemption candidates (for a pod its own filters found no room for),
        narrowed to what the rules allow. A gang member's whole gang is planned first."""
        self._now = now
        if self.stale:
            return {}  # no one is evicted on a stale view
        policy = self.policy
        book = self._book(snapshot) if policy is not None else None
        key = job_key(pod)
        queue: str | None = None
        planned = self.gangs.planned_node(pod) is not None
        if policy is not None:
            queue, problem = self.queue_of(pod)
            if problem:
                return {}
            if queue is not None and not planned:
                verdict = self._admit(snapshot, key, pod, queue)
                if verdict is None:
                    return {}
                if not verdict.ok:
                    missing = self._preempt_past_quota(snapshot, key, pod, queue, verdict, now)
                    if missing is not None:  # its queue would not admit it: no one is evicted
                        reason = f"{verdict.reason}; {missing}" if missing else verdict.reason
                        self._refuse(key, pod, (), queue, verdict.rule, reason, now)
                        return {}
                    planned = True  # victims chosen so that its queue admits it
        if not planned and not is_single(key):
            gang = resolve_gang(snapshot, key, asking=pod)
            if not gang.ready:
                # Parked without a filter call (no node had room): nudged once it is complete.
                self.gangs.note_waiting(gang, pod, "incomplete", now)
                return {}
            if not self.preemption.plan(
                snapshot, key, gang.pending, gang.needed, queue, now, policy, book
            ):
                self.gangs.note_waiting(gang, pod, "no-room", now)
        return self.preemption.narrow(snapshot, pod, candidates, now, policy, book)

    def take_evictions(self) -> list[Eviction]:
        return self.preemption.take_evictions()

    def restore_plans(self, snapshot: Snapshot, now: float) -> int:
        """The plans an earlier process recorded in the cluster, back in memory (`plan_record`):
        once after a start, and again on taking the Lease. Gangs running in part that can no
        longer be completed go whole. Returns how many plans were restored."""
        restored = restore(snapshot, self.gangs, now)
        self._to_nudge.update(restored.nudge)
        if self.policy is not None:
            for key, plan in self.gangs.plans.items():
                pods = _members(snapshot, key)
                queue = self.queue_of(pods[0])[0] if pods else None
                if queue is not None and plan.assignments:
                    self.plan_queues[key] = queue
        for broken in restored.broken:
            self.preemption.evict_broken(broken.key, broken.pods, now)
        for key, victims in restored.victims.items():
            pods = [
                p
                for node in set(victims.values())
                if (info := snapshot.nodes.get(node)) is not None
                for p in info.pods
                if p.uid in victims and p.active  # one being deleted is on its way out
            ]
            members = [p for p in _members(snapshot, key) if p.active]
            if pods and members:
                self.preemption.evict_recorded(key, pods, members[0], now)
        return restored.plans

    def has_plan(self, key: str) -> bool:
        return key in self.gangs.plans

    def records_to_write(self, snapshot: Snapshot, uid: str = "", key: str = "") -> list[ToWrite]:
        """The records to write before pod `uid` of a plan binds, or before plan `key`'s first
        eviction (neither: of every plan): the members the cache does not show recorded yet."""
        if not key and not uid:  # every plan's (the periodic pass writes them ahead)
            return [r for plan in self.gangs.plans.values() for r in to_write(snapshot, plan)]
        if not key:
            key = next((k for k, p in self.gangs.plans.items() if uid in p.assignments), "")
        plan = self.gangs.plans.get(key)
        return to_write(snapshot, plan) if plan is not None else []

    def _reclaim_pass(self, snapshot: Snapshot, book: QueueBook, now: float) -> None:
        """The first jobs of the fair line that their queue admits but that do not fit (pods
        kube-scheduler never sends: no node has room) may preempt or reclaim; those their
        queue's quota refuses may take the place of work the rules let them preempt."""
        if now - self._reclaimed_at < self.gangs.config.kick_interval_seconds:
            return
        self._reclaimed_at = now
        assert self.policy is not None
        tried = 0
        for job in self._line(book):
            if tried >= RECLAIM_TRIES:
                return
            pending = sorted(job.pods, key=lambda p: (p.created, p.name))
            verdict = check_quota(book, job.queue, job.requests, job.name)
            if not verdict.ok:
                if verdict.rule in QUOTA_RULES and check_state(self.policy, job.queue).ok:
                    tried += 1
                    missing = self._preempt_past_quota(
                        snapshot, job.key, pending[0], job.queue, verdict, now
                    )
                    if missing is not None:
                        reason = f"{verdict.reason}; {missing}" if missing else verdict.reason
                        for pod in pending:
                            self._hold_back(job.key, pod, job.queue, verdict.rule, reason, now)
                continue
            tried += 1
            needed = len(pending)
            if not is_single(job.key):
                gang = resolve_gang(snapshot, job.key)
                if not gang.ready:
                    continue
                needed = gang.needed
            free = partial(
                self.gangs.free_for,
                gang_key=job.key,
                only={r for p in pending for r in p.requests},
            )
            if plan_gang(snapshot, pending, needed, free, bounded=True).ok:
                continue  # it fits: kube-scheduler will place it
            self.preemption.plan(
                snapshot, job.key, pending, needed, job.queue, now, self.policy, book
            )

    # ---- the line, holds and nudges ------------------------------------------
    def _line(self, book: QueueBook) -> Iterator[WaitingJob]:
        """The first HEAD_TRIES waiting jobs in fair order, those with a plan left out."""
        assert self.policy is not None
        for job in itertools.islice(fair_order(book), HEAD_TRIES):
            if job.key not in self.gangs.plans:
                yield job

    def admissible(self, book: QueueBook) -> Iterator[WaitingJob]:
        """Waiting jobs in fair order that their queue's quota admits now."""
        for job in self._line(book):
            if check_quota(book, job.queue, job.requests, job.name).ok:
                yield job

    def kick_candidates(self, snapshot: Snapshot, now: float) -> list[tuple[str, str]]:
        """Parked pods kube-scheduler should retry now: gang members whose gang can go ahead, and
        jobs refused by quota that their queue would admit now."""
        self._now = now
        refs = self.gangs.kick_candidates(snapshot, now)
        if self.stale_waiting and not self.stale:  # fresh again: what waited for it goes on
            refs += self.stale_waiting.values()
            self.stale_waiting = {}
        if self._to_nudge:
            refs += self._to_nudge.values()
            self._to_nudge = {}
        if self.policy is None:
            return refs
        book = self._book(snapshot)
        if not self.stale:
            self._reclaim_pass(snapshot, book, now)
        book = self._book(snapshot)
        self._manage_hold(snapshot, book, now)
        changed, self._policy_changed = self._policy_changed, False
        seen = (id(book), book.version, len(self.refused))
        if not changed and seen == self._refused_checked:
            return refs  # nothing new since the last look: no refused job can pass now
        self._refused_checked = seen
        interval = self.gangs.config.kick_interval_seconds
        verdicts: dict[tuple[str, tuple[tuple[str, int], ...]], bool] = {}
        for key, entry in list(self.refused.items()):
            job = book.waiting_keys.get(key)
            if job is None:
                if changed and entry.rule == "unknown-queue":
                    refs += entry.pods.values()  # the new policy may know the queue
                    del self.refused[key]
                elif now - entry.since > FORGET_SECONDS:
                    del self.refused[key]
                continue
            if now - self.nudged.get(key, float("-inf")) < interval:
                continue
            # Jobs of one shape in one queue get one verdict (thousands may wait refused).
            shape = (job.queue, tuple(sorted(job.requests.items())))
            ok = verdicts.get(shape)
            if ok is None:
                ok = verdicts[shape] = (
                    check_state(self.policy, job.queue).ok
                    and check_quota(book, job.queue, job.requests, job.name).ok
                )
            if ok:
                waiting = {p.uid for p in job.pods}
                refs += [ref for uid, ref in entry.pods.items() if uid in waiting]
                del self.refused[key]
                self.nudged[key] = now
        for store in (self.reasons, self.admitted, self.nudged, self.admitted_pods):
            for key in [k for k, v in store.items() if _when(v) < now - FORGET_SECONDS]:
                del store[key]
        for uid in [u for u, (_, _, until) in self.in_flight.items() if until < now]:
            del self.in_flight[uid]
        for gang in [g for g in self.plan_queues if g not in self.gangs.plans]:
            del self.plan_queues[gang]
        return refs

    def adopt_pending(self, snapshot: Snapshot, now: float) -> list[tuple[str, str]]:
        """Once after a start, on taking the Lease, and when the view is fresh again: each
        pending pod of the profile is remembered as its filter would have left it, because
        kube-scheduler may hold it parked unseen by this process (which was not running, not
        leading, or not fresh). A job its queue refuses is refused; a gang member waits (invalid,
        incomplete or lacking room); the kick path nudges each once its job may go ahead. Returns
        the pods that may go ahead now: planned ones, and single pods their queue admits."""
        self._now = now
        jobs: dict[str, list[PodInfo]] = {}
        for waiting in snapshot.queue_pending.values():
            for pod in waiting:
                if pod.scheduler_name in self.scheduler_names and pod.active and not pod.node_name:
                    jobs.setdefault(job_key(pod), []).append(pod)
        ready: list[tuple[str, str]] = []
        for key, members in jobs.items():
            pods: list[PodInfo] = []
            for pod in members:
                if self.gangs.planned_node(pod) is not None:
                    ready.append((pod.namespace, pod.name))
                else:
                    pods.append(pod)
            if not pods:
                continue
            queue, rule = self.queue_of(pods[0]) if self.policy is not None else (None, "")
            if rule:
                rule = "unknown-queue"
            elif queue is not None:
                verdict = self._admit(snapshot, key, pods[0], queue)
                rule = verdict.rule if verdict is not None and not verdict.ok else ""
            if rule:
                entry = self.refused.get(key)
                if entry is None or entry.rule != rule:
                    entry = self.refused[key] = Refused(queue or "", rule, now)
                entry.pods.update({p.uid: (p.namespace, p.name) for p in pods})
                continue
            gang = None if is_single(key) else resolve_gang(snapshot, key)
            if gang is None or gang.basic:
                if queue is not None:  # its queue admits it now
                    ready += [(p.namespace, p.name) for p in pods]
                continue
            kind = "invalid" if gang.problem else "no-room"
            if not gang.problem and len(gang.members) < gang.size:
                kind = "incomplete"
            for pod in pods:
                self.gangs.note_waiting(gang, pod, kind, now)
        return ready

    def _manage_hold(self, snapshot: Snapshot, book: QueueBook, now: float) -> None:
        """The hold goes to the first job of the fair line that its quota admits."""
        for job in self.admissible(book):
            pending = sorted(job.pods, key=lambda p: (p.created, p.name))
            if self.gangs.take_hold(snapshot, job.key, pending, now):
                return
        hold = self.gangs.hold
        if hold is not None and hold.key not in book.waiting_keys:
            self.gangs.release_hold()

    def take_queue_outcomes(self) -> QueueOutcomes:
        outcomes, self.outcomes = self.outcomes, QueueOutcomes()
        return outcomes

    def reason_of(self, key: str) -> str:
        found = self.reasons.get(key)
        return found[0] if found else ""


def _members(snapshot: Snapshot, key: str) -> Sequence[PodInfo]:
    """The pods of job `key`: a gang's from its group, a pod alone's among the pending pods."""
    found = snapshot.groups.get(key)
    if found:
        return found
    return [p for w in snapshot.queue_pending.values() for p in w if job_key(p) == key]


def _add(into: dict[str, int], amounts: Mapping[str, int]) -> None:
    for name, amount in amounts.items():
        into[name] = into.get(name, 0) + amount


def _when(value: Any) -> float:
    return float(value[1] if isinstance(value, tuple) else value)
