"""Lifecycle: what gangplank does about jobs that hold GPUs and do not use them.

It owns the requeue ledger (`requeues.py`), the watchdog's memory (`watchdog.py`), the idle jobs
of the last pass, and the waste counted since the adapter last looked. Each pass (`review`, only
with a policy that has `lifecycle:` rules and a fresh view) it turns the watchdog's findings into
evictions of whole jobs (no eviction budget: these free what is held and not used), requeues
(not ready: backoff, then held after `limit`; past `maxRuntime`: held) and notices (an idle job
is told once). A requeue goes through the job's workload where its kind can be suspended
(`workloads.py`: a Job, JobSet, PyTorchJob, RayJob...): the workload is suspended for the
backoff and resumed when it ends (`take_suspensions`, `resumes_due`; carried out by the service
while its scheduler leads), or left suspended when held. Other jobs (bare pods, kinds without
suspend) are evicted; at filter time (`gate`) their new pods wait out the backoff, with the
reason, and are nudged when it ends.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from extender.core.lifecycle.events import MOVED, TOLD, requeue_suspension, resume_message
from extender.core.lifecycle.requeues import RequeueRecord, Requeues, identity
from extender.core.lifecycle.watchdog import Finding, Idle, Look, Review, Watchdog
from extender.core.lifecycle.workloads import Resume, Suspension, Workload, workload_of
from extender.core.model.answers import FilterResult
from extender.core.model.keys import is_single, job_name
from extender.core.model.notices import Notice, Outbox
from extender.core.model.quantity import format_age
from extender.core.model.resources import GPU
from extender.core.model.snapshot import PodInfo, Snapshot
from extender.core.preemption.evictions import EvictionQueue
from extender.core.queues.gate import queue_of
from extender.core.waiting import WaitingRoom

REQUEUED = ("not-ready", "max-runtime")  # the rules that count a requeue
REVIEW_SECONDS = 10.0  # how often running jobs are looked at (by default)
ACTED_SECONDS = 300.0  # pods acted on are not judged again while they leave
RESUME_RETRY_SECONDS = 5.0  # a resume that failed is tried again after this long


@dataclass
class LifecycleOutcomes:
    """Counted since the adapter last looked (for metrics)."""

    waste: dict[str, float] = field(default_factory=dict)  # kind -> GPU-seconds held, not used
    freed: Counter[str] = field(default_factory=Counter)  # rule -> GPUs given back
    requeues: Counter[str] = field(default_factory=Counter)  # rule -> jobs requeued
    held: int = 0  # jobs held until a person acts (a gauge: the state now)
    idle: int = 0  # idle jobs now (a gauge)
    idle_gpus: int = 0  # GPUs they hold (a gauge)


class Lifecycle:
    def __init__(
        self,
        evictions: EvictionQueue,
        outbox: Outbox,
        waiting: WaitingRoom,
        review_seconds: float = REVIEW_SECONDS,
    ) -> None:
        """`review_seconds`: how often running jobs are reviewed (a pass in between skips it)."""
        self.review_seconds = review_seconds
        self.requeues = Requeues()
        self._watchdog = Watchdog()
        self._evictions = evictions
        self._outbox = outbox
        self._waiting = waiting
        self._idle: dict[str, Idle] = {}  # the last pass's idle jobs
        self._told_idle: set[str] = set()
        self._acted: dict[str, float] = {}  # pod uid -> when its eviction was decided
        self._evicting: dict[str, str] = {}  # pod uid -> its requeued job, until it is gone
        self._before: dict[str, RequeueRecord | None] = {}  # requeued job -> its record before
        self._suspensions: list[Suspension] = []  # decided, not taken by the service yet
        # Whether requeues go through the workload where its kind can be suspended: set by the
        # service, which carries suspensions out; off, every requeue evicts (the simulator).
        self.suspend_workloads = False
        self._resuming: dict[str, float] = {}  # job -> when its resume was last handed out
        self._reviewed = float("-inf")
        self.outcomes = LifecycleOutcomes()
        self._totals = LifecycleOutcomes()  # what earlier outcomes held, for `saved`

    # ---- filter ------------------------------------------
    def gate(
        self, snapshot: Snapshot, pod: PodInfo, key: str, names: Sequence[str], now: float
    ) -> FilterResult | None:
        """The new pods of a requeued job wait out its backoff (or until a person acts)."""
        if not len(self.requeues):
            return None
        members = (pod,) if is_single(key) else snapshot.groups.get(key, (pod,))
        # The pod asked for as kube-scheduler sent it: it retries a parked pod the moment it is
        # annotated (retry: "now"), often before the watch brings the annotation to the cache.
        others = [p for p in members if not p.node_name and p.uid != pod.uid]
        reason = self.requeues.gate(key, [pod, *others], now)
        if reason is None:
            return None
        record = self.requeues.get(key)
        self._waiting.note_reason(key, reason, now)
        if record is not None and not record.held:
            self._waiting.nudge_at(pod, record.next_try)
        return FilterResult(passed=[], unresolvable=dict.fromkeys(names, reason))

    # ---- each pass ------------------------------------------
    def review(self, look: Look) -> None:
        """Judge and act, when a review is due (`judge` then `apply`)."""
        review = self.judge(look)
        if review is not None:
            self.apply(review, look)

    def judge(self, look: Look) -> Review | None:
        """The watchdog's findings, when a review is due (None: not yet). It reads only the
        snapshot and the watchdog's memory, which the periodic pass alone touches, so the
        service calls it off the decision lock (about 0.1 s at 20,000 running pods)."""
        if look.now - self._reviewed < self.review_seconds:
            return None
        return self._watchdog.review(look)

    def apply(self, review: Review, look: Look) -> None:
        """Act on a review (under the decision lock; `look` as it is now, which may be later
        than the judged one): evictions, requeues, JobIdle. A gang got a plan since it was
        judged broken is being completed: left alone."""
        now, use = look.now, look.use
        self._reviewed = now
        self._acted = {k: t for k, t in self._acted.items() if now - t < ACTED_SECONDS}
        self._evicting = {u: k for u, k in self._evicting.items() if u in self._acted}
        self._before = {k: r for k, r in self._before.items() if k in self._evicting.values()}
        for kind, seconds in review.waste.items():
            self.outcomes.waste[kind] = self.outcomes.waste.get(kind, 0.0) + seconds
        self._idle = review.idle
        for key in review.idle.keys() - self._told_idle:
            self._tell_idle(key, review.idle[key])
        if use is not None and use.ok:  # a read that failed found no one idle: told again later
            self._told_idle &= review.idle.keys()
        for finding in review.findings:
            if finding.rule == "stale-gang" and finding.job in look.completing:
                continue
            if not any(p.uid in self._acted for p in finding.pods):  # its new pods: judged
                self._act(finding, look)
        self.requeues.prune(now, set(look.snapshot.groups))

    def _act(self, finding: Finding, look: Look) -> None:
        rule, key, now = finding.rule, finding.job, look.now
        if rule in REQUEUED and not self.requeues.known:
            return  # the kept counts are not read yet: judged again at the next review
        self._acted.update(dict.fromkeys((p.uid for p in finding.pods), now))
        self.outcomes.freed[rule] += sum(p.requests.get(GPU, 0) for p in finding.pods)
        requeue = finding.rules.requeue
        owner = identity(finding.pods)
        what = f"evicted by gangplank: {job_name(key)} {TOLD[rule]}: {finding.reason}"
        if rule in REQUEUED:
            workload = workload_of(finding.pods) if self.suspend_workloads else None
            self._before[key] = self.requeues.get(key)
            self._evicting.update(dict.fromkeys((p.uid for p in finding.pods), key))
            record = self.requeues.requeue(
                key, finding.reason, now, requeue, owner, rule == "max-runtime", workload
            )
            self.outcomes.requeues[rule] += 1
            if workload is not None:
                queue = queue_of(look.policy, finding.pods[0])[0] or ""
                self._suspensions.append(requeue_suspension(finding, record, workload, queue, now))
                return
            if record.held:
                what += '; held until it is recreated or annotated gangplank.io/retry: "now"'
            else:
                what += f"; requeued ({record.count} of {record.limit})"
        self._evictions.evict_whole(finding.pods, rule, f"{what} (all its pods go together)", now)

    # ---- requeues through the workload (carried out by the service while it leads) ----
    def move(
        self,
        key: str,
        pods: Sequence[PodInfo],
        workload: Workload,
        queue: str,
        message: str,
        now: float,
        resume_after: float,
    ) -> Suspension:
        """Suspend job `key` through `workload` to move it (consolidation) and resume it
        `resume_after` seconds later: a record kept like a requeue's (so a restart resumes it
        once) that spends none of its requeues; a refusal undoes it as it undoes a requeue."""
        self._before[key] = self.requeues.get(key)
        self._evicting.update(dict.fromkeys((p.uid for p in pods), key))
        self._acted.update(dict.fromkeys((p.uid for p in pods), now))
        self.requeues.move(key, message, now, identity(pods), workload, now + resume_after)
        return Suspension(
            job=key,
            workload=workload,
            pods=tuple((p.namespace, p.name, p.uid) for p in pods),
            rule="consolidation",
            queue=queue,
            reason=MOVED,
            message=f"suspended by gangplank to move it: {message}; resumed in "
            f"{format_age(resume_after)}, its pods start on the nodes kept for them",
            gpu_seconds=sum(p.gpu_seconds(now) for p in pods),
        )

    def moved_since(self, since: float) -> set[str]:
        """Jobs suspended to move them since `since` (kept records: a restart remembers)."""
        return self.requeues.moved_since(since)

    def take_suspensions(self) -> list[Suspension]:
        taken, self._suspensions = self._suspensions, []
        return taken

    def put_back_suspensions(self, suspensions: Sequence[Suspension]) -> None:
        """Taken but not carried out (their records could not be kept first): next pass."""
        self._suspensions[:0] = suspensions

    def drop_suspensions(self) -> int:
        """The scheduler took the Lease (again): suspensions decided before and not carried
        out are dropped, with their requeues not kept yet, so the records another leader kept
        meanwhile are read back in their place and no job is suspended on what this replica
        saw before (its pods may be recreated or running well by now). Returns how many."""
        dropped, self._suspensions = self._suspensions, []
        for suspension in dropped:
            for _, _, uid in suspension.pods:
                self._acted.pop(uid, None)
                self._evicting.pop(uid, None)
            self._before.pop(suspension.job, None)
        self.requeues.forget_changes({s.job for s in dropped})
        return len(dropped)

    def resumes_due(self, now: float) -> list[Resume]:
        """The suspended workloads whose backoff is over, each handed out again only after
        RESUME_RETRY_SECONDS while its resume has not been done; none before the kept records
        are read (this replica may remember one the leader since resumed)."""
        if not self.requeues.known:
            return []
        due = []
        for record in self.requeues.resumes_due(now):
            if now - self._resuming.get(record.job, float("-inf")) < RESUME_RETRY_SECONDS:
                continue
            assert record.workload is not None  # resumes_due returns suspended records only
            self._resuming[record.job] = now
            due.append(Resume(record.job, record.workload, resume_message(record)))
        return due

    def resumed(self, job: str, done: bool) -> None:
        """The service's resume of `job`'s workload: `done` (resumed, or the workload is
        gone), else tried again later."""
        if done:
            self._resuming.pop(job, None)
            self.requeues.resumed(job)

    def refused(self, uids: Collection[str]) -> None:
        """These pods were not evicted (a PodDisruptionBudget, an error): a requeue counted for
        their job goes back to what it was (the job still runs; judged again later)."""
        for key in {self._evicting.pop(uid) for uid in uids if uid in self._evicting}:
            self.requeues.undo(key, self._before.pop(key, None))

    def _tell_idle(self, key: str, idle: Idle) -> None:
        self._told_idle.add(key)
        single = idle.pods[0] if is_single(key) else None
        message = f"{job_name(key)} is idle: {idle.why}"
        if idle.action == "reclaim-first":
            message += "; it is the first to go when capacity is needed"
        self._outbox.add(Notice(key, "JobIdle", message, warning=True, pod=single))

    # ---- what others ask ------------------------------------------
    def holds_back(self, key: str, now: float) -> bool:
        """Whether job `key` waits out a backoff or is held (so it gets no hold of capacity
        and no one is preempted for it)."""
        record = self.requeues.get(key)
        return record is not None and (record.held or now < record.next_try)

    def reclaim_first(self) -> frozenset[str]:
        """Idle jobs whose rule makes them the first victims of preemption and reclaim."""
        return frozenset(k for k, idle in self._idle.items() if idle.action == "reclaim-first")

    def idle_reason(self, key: str) -> str:
        idle = self._idle.get(key)
        return idle.why if idle is not None else ""

    def idle(self) -> dict[str, str]:
        """Idle jobs and why (for `gangplank status`)."""
        return {key: idle.why for key, idle in self._idle.items()}

    def saved(self) -> dict[str, dict[str, float]]:
        """Since this process started: GPU-seconds held and not used by kind, GPUs given back
        and requeues by rule (for `gangplank status`)."""
        out: dict[str, dict[str, float]] = {}
        for name in ("waste", "freed", "requeues"):
            total = dict(getattr(self._totals, name))
            for key, value in getattr(self.outcomes, name).items():
                total[key] = total.get(key, 0) + value
            out[name] = total
        return out

    def take_outcomes(self) -> LifecycleOutcomes:
        outcomes, self.outcomes = self.outcomes, LifecycleOutcomes()
        for key, seconds in outcomes.waste.items():
            self._totals.waste[key] = self._totals.waste.get(key, 0.0) + seconds
        self._totals.freed.update(outcomes.freed)
        self._totals.requeues.update(outcomes.requeues)
        outcomes.held, outcomes.idle = len(self.requeues.held()), len(self._idle)
        outcomes.idle_gpus = sum(idle.gpus for idle in self._idle.values())
        return outcomes
