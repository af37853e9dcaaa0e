"""Carrying out the evictions the core queues, each victim job through the Eviction API.

No victim leaves for a plan that a restart would forget: the preemptor's plan is recorded in the
cluster first (`kube/plan_recorder.py`), and evictions whose plan cannot be recorded go back to
the core for the next pass. What each eviction came to is logged and counted; one the API server
refused (a PodDisruptionBudget) or that failed is told to the core, which spares the pods a while.

`Suspensions` carries out the lifecycle rules' requeues through a workload (`kube/workloads.py`):
suspensions (a dry run of every pod's eviction, then the suspend flag) and the resumes whose
backoff ended. A suspension refused or failed undoes its requeue, as a refused eviction does;
a resume that failed is tried again a few seconds later. Each is logged and counted
(`gangplank_lifecycle_suspensions_total`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from functools import partial

from extender.cache.store import ClusterStore
from extender.core.engine import Engine
from extender.core.lifecycle.workloads import Resume, Suspension
from extender.core.preemption.evictions import Eviction
from extender.core.preemption.shrinks import Shrink
from extender.kube.evictor import Evictor
from extender.kube.plan_recorder import PlanRecorder, RecordError
from extender.kube.workloads import Suspender
from extender.observe.metrics import Metrics
from extender.service.decision_lock import DecisionLock
from extender.service.steps import Steps

log = logging.getLogger("gangplank")


class Evictions:
    def __init__(
        self,
        evictor: Evictor,
        recorder: PlanRecorder,
        *,
        scheduler: Engine,
        store: ClusterStore,
        lock: DecisionLock,
        metrics: Metrics,
        clock: Callable[[], float],
        on_error: Callable[[str], None],
    ) -> None:
        self.evictor = evictor
        self.recorder = recorder
        self.scheduler = scheduler
        self.store = store
        self.lock = lock
        self.metrics = metrics
        self.clock = clock
        self._steps = Steps(on_error)  # a victim job's eviction raised (step "evict")
        self._waited_for_record: set[str] = set()  # plans whose evictions wait for their record

    def carry_out(self, evictions: list[Eviction]) -> None:
        """Each victim job is its own step ("evict"): one that raises leaves the others going."""
        evictions = self._recorded_first(evictions)
        jobs: dict[str, list[Eviction]] = {}
        for eviction in evictions:
            jobs.setdefault(eviction.job, []).append(eviction)
        for pods in jobs.values():
            self._steps.run("evict", partial(self._evict, pods))

    def _evict(self, pods: list[Eviction]) -> None:
        outcome = self.evictor.evict(pods)
        first = pods[0]
        log.info(
            "%s %d pod(s) of %s (%s, queue %s): %s",
            outcome,
            len(pods),
            first.job.split(":", 1)[1],
            first.rule,
            first.queue or "-",
            first.message,
        )
        self.metrics.evicted(first.queue, first.rule, outcome, len(pods))
        if outcome in ("blocked", "failed"):
            with self.lock.by("eviction refused"):
                self.scheduler.preemption.refused({e.uid for e in pods}, self.clock())
                self.scheduler.lifecycle.refused({e.uid for e in pods})
        if outcome == "evicted":
            self.metrics.gpu_seconds_lost(first.queue, first.rule, sum(e.gpu_seconds for e in pods))

    def resize(self, changes: Sequence[Shrink]) -> None:
        """Workloads gangplank made smaller, each raised by one member (`regrow.py`)."""
        for change in changes:
            why = (
                "room for one more member is free and no waiting job needs it (its size before "
                "gangplank took extras back is on its annotation gangplank.io/shrunk-from)"
            )
            self._steps.run("resize", partial(self._resize, change, why))

    def _resize(self, change: Shrink, why: str) -> None:
        outcome = self.evictor.resize(change, why)
        self.metrics.regrown(change.kind, outcome)
        log.info("%s %s: from %d to %d", outcome, change.shown, change.current, change.to)

    def _recorded_first(self, evictions: list[Eviction]) -> list[Eviction]:
        """The evictions whose preemptor's plan is recorded in the cluster (written now when it
        is not yet); the others go back for the next pass: no victim leaves for a plan that a
        restart would forget."""
        plans = {e.plan for e in evictions if e.plan}
        if not plans:
            return evictions
        unrecorded: set[str] = set()
        for key in plans:
            with self.lock.by("plan records"):
                alive = key in self.scheduler.reservations
                records = self.scheduler.records_to_write(self.store.snapshot(), key=key)
            if not alive:
                if key in self._waited_for_record:  # it lapsed while its evictions waited
                    self._waited_for_record.discard(key)
                    log.info("evictions for %s dropped: its plan is gone", key.split(":", 1)[1])
                    evictions = [e for e in evictions if e.plan != key]
                # else it completed (kube-scheduler's own preemption deleted the victims first):
                # the evictions go on, find the pods gone, and tell who evicted them and why
                continue
            try:
                self.recorder.write(records)
                self._waited_for_record.discard(key)
            except RecordError as err:
                log.warning("evictions for %s wait: %s", key.split(":", 1)[1], err)
                unrecorded.add(key)
                self._waited_for_record.add(key)
        later = [e for e in evictions if e.plan in unrecorded]
        if later:
            with self.lock.by("evictions put back"):
                self.scheduler.preemption.put_back(later)
        return [e for e in evictions if e.plan not in unrecorded]


class Suspensions:
    def __init__(
        self,
        suspender: Suspender,
        *,
        scheduler: Engine,
        lock: DecisionLock,
        metrics: Metrics,
        on_error: Callable[[str], None],
    ) -> None:
        self.suspender = suspender
        self.scheduler = scheduler
        self.lock = lock
        self.metrics = metrics
        self._steps = Steps(on_error)  # one suspension or resume raised (step suspend/resume)
        self._resume_failures: dict[str, int] = {}  # job -> resumes failed in a row

    def carry_out(self, suspensions: Sequence[Suspension], resumes: Sequence[Resume]) -> None:
        """Each is its own step: one that raises leaves the others going."""
        for suspension in suspensions:
            self._steps.run("suspend", partial(self._suspend, suspension))
        for resume in resumes:
            self._steps.run("resume", partial(self._resume, resume))

    def _suspend(self, s: Suspension) -> None:
        outcome = self.suspender.suspend(s)
        undone = outcome != "suspended"
        log.info(
            "%s %s (%d pod(s) of %s, %s, queue %s)%s: %s",
            outcome,
            s.workload.shown,
            len(s.pods),
            s.job.split(":", 1)[1],
            s.rule,
            s.queue or "-",
            "; the requeue is undone, the job runs on" if undone else "",
            s.message,
        )
        self.metrics.suspended(s.workload.kind, "suspend", outcome)
        if undone:
            with self.lock.by("suspension refused"):
                self.scheduler.lifecycle.refused({uid for _, _, uid in s.pods})
        else:
            self.metrics.gpu_seconds_lost(s.queue, s.rule, s.gpu_seconds)

    def _resume(self, r: Resume) -> None:
        outcome = self.suspender.resume(r)
        failures = self._resume_failures.pop(r.job, 0)
        if outcome == "failed":
            self._resume_failures[r.job] = failures + 1
        if outcome != "failed" or failures % 12 == 0:  # tried every 5 s: a line a minute
            log.info(
                "%s %s (%s)%s",
                outcome,
                r.workload.shown,
                r.job.split(":", 1)[1],
                f"; tried again shortly ({failures + 1} tries)" if outcome == "failed" else "",
            )
        self.metrics.suspended(r.workload.kind, "resume", outcome)
        with self.lock.by("resumed"):
            self.scheduler.lifecycle.resumed(r.job, done=outcome != "failed")
