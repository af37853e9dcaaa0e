"""The periodic pass, run by the kicker's thread every half second (`service/kicker.py`).

While this replica's scheduler leads: the plans earlier processes recorded are read back once,
the mix of job shapes placement keeps room for is learned every minute, the core decides (holds,
nudges, reclaim planning) under the lock, the plans made since are recorded, the evictions the
core queued are carried out (`service/evictions.py`), so are the workloads it suspends or resumes
(only once the requeue records they belong to are kept: no workload is left suspended with no
record to resume it by), and what the core counted goes into the metrics; once the nudges are
out, its notices become Events. Leading or not: the pending pods are looked through once the
first full lists are in, and a PodGroup kind that pods wait for is looked for again. Each of
these is a step (`steps.py`): one that raises is logged (once a minute while it repeats) and
counted in `gangplank_periodic_errors_total{step}`, and the others still run.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TypeVar

from extender.cache.handlers import POD_GROUP_KINDS
from extender.cache.store import ClusterStore
from extender.core.consolidation.moves import Move
from extender.core.engine import Engine
from extender.core.gangs.plan_record import ToWrite
from extender.core.lifecycle.watchdog import Look
from extender.core.lifecycle.workloads import Resume, Suspension
from extender.core.model.notices import Notice
from extender.core.model.snapshot import Snapshot
from extender.core.placement.scoring import mix_of
from extender.core.preemption.evictions import Eviction
from extender.core.preemption.shrinks import Shrink
from extender.kube.events import EventRecorder, tell
from extender.kube.plan_recorder import PlanRecorder, RecordError
from extender.observe.metrics import Metrics
from extender.service.decision_lock import DecisionLock
from extender.service.evictions import Evictions, Suspensions
from extender.service.history_io import HistoryIO
from extender.service.lifecycle_io import LifecycleIO
from extender.service.moves import Moves
from extender.service.readiness import Readiness
from extender.service.steps import Steps

REDISCOVER_SECONDS = 3.0  # how often a PodGroup kind that pods wait for is looked for again
LEARN_SECONDS = 60.0  # how often the mix of job shapes placement scores keep room for is counted
# How long after the view is fresh again the pending pods are looked through: the resumed watches
# deliver what happened meanwhile first.
CATCH_UP_SECONDS = 1.0

log = logging.getLogger("gangplank")
T = TypeVar("T")


@dataclass
class Decided:
    """What the core's part of a pass handed out (nothing when that step raised)."""

    refs: list[tuple[str, str]] = field(default_factory=list)  # pods to nudge
    evictions: list[Eviction] = field(default_factory=list)
    notices: list[Notice] = field(default_factory=list)
    records: Sequence[ToWrite] = ()  # plans' records to write ahead of their first bind
    snapshot: Snapshot | None = None
    suspensions: list[Suspension] = field(default_factory=list)  # requeues through a workload
    resumes: list[Resume] = field(default_factory=list)  # suspended workloads whose backoff ended
    moves: list[Move] = field(default_factory=list)  # consolidation's plans to carry out
    resizes: list[Shrink] = field(default_factory=list)  # workloads made smaller, grown back


class PeriodicPass:
    def __init__(
        self,
        *,
        lifecycle_io: LifecycleIO,
        store: ClusterStore,
        scheduler: Engine,
        lock: DecisionLock,
        clock: Callable[[], float],
        readiness: Readiness,
        recorder: PlanRecorder,
        evictions: Evictions,
        suspensions: Suspensions,
        events: EventRecorder,
        metrics: Metrics,
        leading: Callable[[], bool],
        publish: Callable[[], None],
        on_error: Callable[[str], None],
        history_io: HistoryIO | None = None,
    ) -> None:
        """`leading`: the last answer of the leader election (no API call); `publish`: moves what
        the core counted into the metrics; `on_error(step)`: a step raised."""
        self.lifecycle_io = lifecycle_io
        self.history_io = history_io
        self.store = store
        self.scheduler = scheduler
        self.lock = lock
        self.clock = clock
        self.readiness = readiness
        self.recorder = recorder
        self.evictions = evictions
        self.suspensions = suspensions
        self.moves = Moves(
            evictions.evictor,
            suspensions.suspender,
            recorder,
            scheduler=scheduler,
            store=store,
            lock=lock,
            metrics=metrics,
            on_error=on_error,
        )
        self.events = events
        self.metrics = metrics
        self.leading = leading
        self.publish = publish
        self._steps = Steps(on_error)
        self._learned_at = float("-inf")
        self._rediscovered_at = float("-inf")
        self._untold: list[tuple[list[Notice], Snapshot]] = []
        self._plans_restored = False  # the records of earlier processes read back (see below)
        # The core is asked about every pending pod of the profile (`adopt_pending`) once the
        # first full lists are in (before /readyz says ready), at the first pass after the
        # scheduler takes the Lease, and CATCH_UP_SECONDS after the view is fresh again.
        self._adopted_at_start = False
        self._adopt_at = float("inf")  # when next (infinity: not due)
        self._adopted: list[tuple[str, str]] = []  # pods it found may go ahead, to nudge
        self._was_stale = False

    def _step(self, step: str, work: Callable[[], T]) -> T | None:
        return self._steps.run(step, work)

    def every(self) -> None:
        """Work of every pass, leading or not."""
        self._step("adopt", self.adopt_at_start)
        self._step("rediscover", self.rediscover)

    def kick_candidates(self) -> list[tuple[str, str]]:
        """The periodic pass (only while this replica's scheduler leads): holds, nudges,
        reclaim planning, and the evictions planned since the last pass. Returns the pods to
        nudge."""
        self._step("restore-plans", self.restore_plans)
        self._step("requeues-read", self.read_requeues)
        self._step("history-read", self.read_history)
        self._step("learn-mix", self.learn_mix)
        self._step("gpu-use", self.lifecycle_io.read_use)
        decided = self._step("decide", self.decide) or Decided()
        kept = self._step("requeues-kept", self.lifecycle_io.save_records)
        if self.history_io is not None:
            self._step("history-kept", self.history_io.write)
        # plans made since the last pass are recorded ahead of their first bind
        self._step("record-plans", partial(self.record, decided.records))
        self._step("evictions", partial(self.evictions.carry_out, decided.evictions))
        self._step("resizes", partial(self.evictions.resize, decided.resizes))
        suspensions = decided.suspensions
        if suspensions and not kept:  # their records are not kept: not suspended yet
            with self.lock.by("suspensions put back"):
                self.scheduler.lifecycle.put_back_suspensions(suspensions)
            suspensions = []
        moves = decided.moves
        if moves and not kept:  # the moved jobs' records are not kept: not moved yet
            with self.lock.by("moves put back"):
                self.scheduler.consolidation.put_back(moves)
            moves = []
        self._step("moves", partial(self.moves.carry_out, moves))
        work = partial(self.suspensions.carry_out, suspensions, decided.resumes)
        self._step("workloads", work)
        if decided.snapshot is not None:
            self._untold.append((decided.notices, decided.snapshot))
        self._step("publish", self.publish)
        return decided.refs

    def decide(self) -> Decided:
        """The core's part of the pass, under the lock."""
        stale = self.readiness.staleness()
        if self._was_stale and not stale:  # fresh again: what was parked meanwhile may go ahead
            self._adopt_at = min(self._adopt_at, time.monotonic() + CATCH_UP_SECONDS)
        self._was_stale = bool(stale)
        adopt = time.monotonic() >= self._adopt_at and not stale and self.readiness.synced()
        engine, use = self.scheduler, self.lifecycle_io.use
        look = review = None
        if engine.policy is not None and not stale:  # judged off the lock, acted on under it
            look = Look(
                self.store.snapshot(),
                self.clock(),
                engine.policy,
                use,
                engine.scheduler_names,
                engine.reservations.jobs(),
            )
            review = engine.lifecycle.judge(look)
        with self.lock.by("periodic pass"):
            snapshot = self.store.snapshot()
            if look is not None and review is not None:
                current = replace(look, snapshot=snapshot, now=self.clock())
                engine.lifecycle.apply(
                    review, replace(current, completing=engine.reservations.jobs())
                )
            refs, self._adopted = self._adopted, []
            if adopt:
                self._adopt_at = float("inf")
                refs += self.scheduler.adopt_pending(snapshot, self.clock())
            refs += self.scheduler.kick_candidates(snapshot, self.clock(), stale, use)
            # Evictions planned before the view went stale wait until it is fresh again, and so
            # do they if the replica has learned, since this pass began, that its scheduler no
            # longer leads (the last answer: no API call under the lock).
            keep = stale or not self.leading()
            evictions = [] if keep else self.scheduler.preemption.take_evictions()
            suspensions = [] if keep else engine.lifecycle.take_suspensions()
            resumes = [] if keep else engine.lifecycle.resumes_due(self.clock())
            moves = [] if keep else engine.consolidation.take_moves()
            resizes = [] if keep else engine.regrowths(snapshot, self.clock())
            notices = self.scheduler.take_notices()
            records = self.scheduler.records_to_write(snapshot)
        return Decided(
            refs, evictions, notices, records, snapshot, suspensions, resumes, moves, resizes
        )

    def record(self, records: Sequence[ToWrite]) -> None:
        try:
            self.recorder.write(records)
        except RecordError as err:
            log.debug("plans recorded at the next bind instead: %s", err)

    def restore_plans(self) -> None:
        """Once the cache holds the whole cluster (after a start, and again on taking the
        Lease): the plans earlier processes recorded, back in the decision state, before any
        decision is made on the view (`core/gangs/plan_record.py`)."""
        if self._plans_restored or not self.readiness.synced():
            return
        with self.lock.by("plans restored"):
            if self._plans_restored:
                return
            restored = self.scheduler.restore_plans(self.store.snapshot(), self.clock())
            self._plans_restored = True
        if restored:
            log.info("restored %d plan(s) recorded before this process led", restored)

    def lead_taken(self) -> None:
        """The scheduler took the Lease: its plans are read back from their records at the next
        pass or call, and the next pass asks the core about every pending pod of the profile
        (`Engine.adopt_pending`). kube-scheduler may hold some parked that this
        process never saw filtered, and would retry them only on a cluster event or its
        5-minute flush."""
        self._adopted = []  # found while standing by: looked for again now
        with self.lock.by("lead taken"):
            dropped = self.scheduler.lifecycle.drop_suspensions()
        if dropped:
            log.info("%d suspension(s) decided before the Lease was taken dropped", dropped)
        self.lifecycle_io.lead_taken()  # the requeue records: read back again
        if self.history_io is not None:
            self.history_io.lead_taken()  # and the usage history
        self._adopt_at = time.monotonic()
        self._plans_restored = False  # the plans the replica that led recorded: read back

    def read_requeues(self, asked: bool = False) -> None:
        """Once the cache is synced (after a start, and on taking the Lease): the requeue
        records kept by earlier processes (`asked`: by a filter or preempt call, which comes
        first when kube-scheduler asks for its pending pods at once)."""
        if self.readiness.synced():
            self.lifecycle_io.load_records(asked)

    def read_history(self) -> None:
        """Once the cache is synced (after a start, and on taking the Lease): the queues' usage
        history kept by earlier processes."""
        if self.history_io is not None and self.readiness.synced():
            self.history_io.read()

    def adopt_at_start(self) -> None:
        """Once the first full lists are in: the same for the pods of the cluster as this process
        found it (any of them may have been parked before it started). Done by the first pass or
        readiness check that sees the lists in; its finds are nudged by the first pass that
        leads."""
        if self._adopted_at_start or not self.readiness.synced():
            return
        with self.lock.by("pending pods looked through"):
            if not self._adopted_at_start:
                self._adopted_at_start = True
                self._adopted += self.scheduler.adopt_pending(self.store.snapshot(), self.clock())

    def learn_mix(self) -> None:
        """Every minute, the mix of job shapes placement scores keep room for, counted on a
        snapshot outside the lock (tens of milliseconds at 50,000 pods)."""
        now = time.monotonic()
        if now - self._learned_at < LEARN_SECONDS:
            return
        self._learned_at = now
        mix = mix_of(self.store.snapshot())
        if mix is not None:
            with self.lock.by("mix learned"):
                self.scheduler.scorer.learn(mix)

    def tell_untold(self) -> None:
        """Events for the notices of the last pass (after its nudges went out)."""
        untold, self._untold = self._untold, []
        for notices, snapshot in untold:
            tell(self.events, notices, snapshot, self.metrics.events.inc)

    def rediscover(self) -> None:
        """A PodGroup kind that was not installed is looked for again within seconds once a
        waiting pod names a PodGroup of it (its CRD may have been installed since; Kubernetes'
        own may have been switched on), rather than at the next 60-second poll."""
        now = time.monotonic()
        if now - self._rediscovered_at < REDISCOVER_SECONDS:
            return
        self._rediscovered_at = now
        absent = {
            POD_GROUP_KINDS[r.kind][0]: r
            for r in self.readiness.reflectors
            if r.absent and r.kind in POD_GROUP_KINDS
        }
        if not absent:
            return
        for key, members in self.store.snapshot().groups.items():
            source = key.split(":", 1)[0]
            reflector = absent.get(source)
            if reflector is not None and any(p.active and p.node_name is None for p in members):
                log.debug("%s: pods of %s wait for it; looking for the kind again", source, key)
                reflector.recheck()
                del absent[source]
                if not absent:
                    return
