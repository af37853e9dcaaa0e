"""Carrying out consolidation's moves (`core/consolidation/`), each plan whole or not at all.

For each plan, while it still stands: the waiting job's plan is recorded first (as a preemption
plan is: its record names no victims, so a restarted process never moves them again), every pod
of every job to move is evicted as a dry run (a PodDisruptionBudget that forbids one drops the
plan: nothing of it moves), then each job moves: a suspendable kind through its workload's
suspend flag (the lifecycle's `Suspender`; resumed a few seconds later by the kept record), the
others by the Eviction API (the `Evictor`). A refusal on the way drops the rest of the plan.
Each move is logged and counted (`gangplank_consolidation_moves_total{way,outcome}`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from functools import partial

from extender.cache.store import ClusterStore
from extender.core.consolidation.movable import Way
from extender.core.consolidation.moves import Move, MovedJob
from extender.core.engine import Engine
from extender.kube.evictor import Evictor
from extender.kube.plan_recorder import PlanRecorder, RecordError
from extender.kube.workloads import Suspender
from extender.observe.metrics import Metrics
from extender.service.decision_lock import DecisionLock
from extender.service.steps import Steps

log = logging.getLogger("gangplank")

DONE = ("suspended", "evicted", "gone")


class Moves:
    def __init__(
        self,
        evictor: Evictor,
        suspender: Suspender,
        recorder: PlanRecorder,
        *,
        scheduler: Engine,
        store: ClusterStore,
        lock: DecisionLock,
        metrics: Metrics,
        on_error: Callable[[str], None],
    ) -> None:
        self.evictor = evictor
        self.suspender = suspender
        self.recorder = recorder
        self.scheduler = scheduler
        self.store = store
        self.lock = lock
        self.metrics = metrics
        self._steps = Steps(on_error)  # one plan's moves raised (step "move")

    def carry_out(self, moves: Sequence[Move]) -> None:
        """Each plan is its own step: one that raises leaves the others going."""
        for move in moves:
            self._steps.run("move", partial(self._move, move))

    def _move(self, move: Move) -> None:
        name = move.key.split(":", 1)[1]
        with self.lock.by("move records"):
            standing = self.scheduler.consolidation.moving(move.key)
            records = self.scheduler.records_to_write(self.store.snapshot(), key=move.key)
        if not standing:
            log.info("moves for %s dropped: its plan is gone", name)
            self._count(move.jobs, "dropped")
            with self.lock.by("moves dropped"):
                self.scheduler.lifecycle.refused({p.uid for j in move.jobs for p in j.pods})
            return
        try:
            self.recorder.write(records)
        except RecordError as err:
            log.warning("moves for %s wait: %s", name, err)
            with self.lock.by("moves put back"):
                self.scheduler.consolidation.put_back([move])
            return
        refused = self.evictor.dry_run(move.pods())
        if refused:
            log.info("no job moves for %s: %s (dry run of every pod)", name, refused)
            self._drop(move, move.jobs, refused)
            return
        for i, job in enumerate(move.jobs):
            outcome = self._one(job)
            log.info("%s %s for %s: %s", outcome, job.key.split(":", 1)[1], name, job.message)
            if outcome not in DONE:
                self._drop(move, move.jobs[i:], outcome)
                return
            self.metrics.moved(job.way.value, "moved")

    def _one(self, job: MovedJob) -> str:
        if job.way is Way.SUSPEND:
            assert job.suspension is not None
            return self.suspender.suspend(job.suspension)
        return self.evictor.evict(job.evictions)

    def _drop(self, move: Move, left: Sequence[MovedJob], outcome: str) -> None:
        """The plan falls: the jobs `left` do not move (the first of them got `outcome`)."""
        self.metrics.moved(left[0].way.value, outcome)
        self._count(left[1:], "dropped")
        with self.lock.by("move refused"):
            self.scheduler.consolidation.refused(move.key)
            self.scheduler.lifecycle.refused({p.uid for j in left for p in j.pods})

    def _count(self, jobs: Sequence[MovedJob], outcome: str) -> None:
        for job in jobs:
            self.metrics.moved(job.way.value, outcome)
