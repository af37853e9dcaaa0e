"""A kube-scheduler stand-in that replays a workload, in simulated time or in real time.

The event loop: arrivals, the ends of jobs, faults showing, gangplank's periodic pass, the
flush of parked pods and the samples, each at its time, and scheduling cycles in between
(`kube_scheduler.py`: kube-scheduler v1.36 as tests/data/kube-scheduler/NOTES.md describes
it). A job runs its duration once every member is bound, then its pods go away. Evicted jobs
(preemption or gangplank's reclaim) are re-created by their controller and wait again. Gangs
that never complete hold what their bound members hold (the baseline shows it). Jobs with a
fault waste what they hold, and jobs gangplank's lifecycle rules evict are recreated or end
(`faults.py`). With `Options.consolidate`, a pod with no room makes room by moving running jobs
(`moves.py`). The state and its bookkeeping are `state.py`'s; the options and clocks a caller
gives are named here too.
"""

from __future__ import annotations

import heapq
import math
import time
from typing import Any

from extender.sim.elastic import ElasticPlay
from extender.sim.faults import LIFECYCLE_RULES, FaultPlay
from extender.sim.kube_scheduler import KubeSchedulerModel
from extender.sim.moves import MovePlay
from extender.sim.options import FLUSH_AFTER, FLUSH_EVERY, Options, WallClock
from extender.sim.runs import Run, SimPod

__all__ = ["Driver", "Options", "WallClock"]


class Driver(KubeSchedulerModel, FaultPlay, MovePlay, ElasticPlay):
    """Replays `jobs` on `nodes` through `extender` (`DriverState` takes them), until every job
    has ended, nothing moves, or `Options.until`."""

    def run(self) -> None:
        started = time.perf_counter()
        self.extender.start(self.raw_nodes)
        self._last_arrival = max((r.spec.arrival for r in self.records), default=0.0)
        shown = -math.inf
        try:
            while self._events or self._backoff:
                t = min(self._next_wake(), self._free_at if self._active else math.inf)
                if self._ends_before(t):
                    break
                self.clock.wait_until(t)
                self.now = t
                moved = False
                while self._events and self._events[0][0] <= t:
                    _, _, kind, payload = heapq.heappop(self._events)
                    moved = self._handle(kind, payload) or moved
                if moved:
                    self._requeue_parked()
                self._schedule()
                if self.progress is not None and self.now >= shown + self.options.progress_every:
                    shown = self.now
                    self.progress(self.now)
        finally:
            self._account(self.now)
            self._elastic_settle()
            self.extender.stop()
            self.wall_seconds = time.perf_counter() - started

    def _handle(self, kind: str, payload: Any) -> bool:
        """Returns whether it was a cluster event (parked pods are retried)."""
        if kind == "arrive":
            self._create_run(payload)
            return True
        if kind == "finish":
            run: Run = payload
            # an elastic job's pace changed since this was pushed: it ends at its new time
            stale = run.record.spec.elastic and run.ends_at != self.now
            if not run.gone and not stale:
                run.record.ended = self.now
                run.record.outcome = run.ending
                self._last_change = self.now
                self._remove_run(run)
                self.on_event("finished", run.record.spec.name)
                return True
            return False
        if kind in ("crash", "restart", "lose", "idle"):
            run = payload
            return not run.gone and self._fault(kind, run)
        if kind == "tick":
            self._tick()
            self._push(self.now + self.options.kick_seconds, "tick", None)
            return False
        if kind == "flush":
            for pod in [
                p for p in self.parked.values() if self.now - (p.parked_at or 0) >= FLUSH_AFTER
            ]:
                self._activate(pod)
            self._push(self.now + FLUSH_EVERY, "flush", None)
            return False
        if kind == "sample":
            self._sample()
            self._push(self.now + self.options.sample_seconds, "sample", None)
            return False
        raise ValueError(kind)

    def _tick(self) -> None:
        if not (self.pending or self._incomplete or self.watching or self.samples_usage):
            return
        tick = self.extender.tick(self.now)
        for uid in tick.nudged:
            pod = self.pending.get(uid)
            if pod is not None and uid in self.parked:
                self._activate(pod)
        runs: dict[int, tuple[Run, str, list[SimPod]]] = {}
        for uid in tick.evicted:
            found = self.live.get(uid)
            if found is not None:
                entry = runs.setdefault(id(found.run), (found.run, tick.rules.get(uid, ""), []))
                entry[2].append(found)
        for run, rule, pods in runs.values():
            if rule in LIFECYCLE_RULES:
                self._lifecycle_evict(run, rule)
            else:
                self.evictions_by_extender += 1
                self._take(run, pods, "reclaimed by gangplank")
        if runs:
            self._requeue_parked()
