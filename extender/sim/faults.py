"""Jobs that waste what they hold, played out, and what a controller does with the jobs
gangplank's lifecycle rules evict.

Jobs with a fault (`workload_faults.FAULTS`) waste what they hold as the kubelet and the job would
show it: a pod stuck not ready, restarts climbing, a member failed, GPUs idle (`Run.busiest`:
what dcgm-exporter would report). Evictions by gangplank's lifecycle rules (`LIFECYCLE_RULES`)
are what a controller does with them: a job evicted for not being ready, or a broken gang, is
recreated (the same job: the same pod names, new uids) and waits gangplank's backoff; one
evicted for idling or running past its time ends. The GPUs each kind of waste holds, and those
the rules free, are counted (`waste_seconds`, `freed_seconds`).
"""

from __future__ import annotations

from extender.core.model.resources import GPU
from extender.sim.runs import Run
from extender.sim.state import DriverState

CRASH_RUNS = 10.0  # seconds a crash-looping container runs before it fails again
CRASH_BACKOFF = (10.0, 20.0, 40.0, 80.0, 160.0, 300.0)  # kubelet's restart back-off, then 300 s

# What a controller does with a job gangplank's lifecycle rules evicted: recreate it (it waits
# gangplank's backoff, then runs again) or let it end.
LIFECYCLE_RULES = {
    "not-ready": "recreated",
    "stale-gang": "recreated",
    "idle": "ended",
    "max-runtime": "ended",
}


class FaultPlay(DriverState):
    """Faults played out and lifecycle evictions carried out, over the driver's state."""

    def _faulty_start(self, run: Run) -> None:
        """A run showing its fault started (every member bound): play the fault out."""
        record = run.record
        spec = record.spec
        record.faulty_starts += 1
        end = self.now + spec.duration
        if run.fault == "never-ready":
            self._waste(run, "not-ready")
            end, run.ending = self.now + spec.duration * self.options.stuck_factor, "gave up"
        elif run.fault == "crash":
            self._push(self.now + spec.fault_at * spec.duration, "crash", run)
            run.ends_at = end  # until it crashes; then its owner gives up on it (pushed then)
            return
        elif run.fault == "node-loss":
            self._push(self.now + spec.fault_at * spec.duration, "lose", run)
        elif run.fault == "idle":
            self._push(self.now + spec.fault_at * spec.duration, "idle", run)
        run.ends_at = end
        self._push(end, "finish", run)

    def _fault(self, kind: str, run: Run) -> bool:
        """A fault shows (`kind`: crash, restart, lose, idle); returns whether it freed room."""
        spec = run.record.spec
        if kind == "idle":
            run.idle_since = self.now
            self._waste(run, "idle")
            return False
        if kind == "lose":
            # one member's node goes: its pod fails, the others hang on their collective
            pod = run.pods[-1]
            self._account(self.now)
            self._waste(run, "")
            pod.phase, pod.ready = "Failed", False
            gpus = pod.requests.get(GPU, 0)
            self._release(pod)
            self._running[spec.queue] -= gpus
            run.lost, run.ending = pod, "hung"
            self._waste(run, "broken")
            self._last_change = self.now
            self.extender.updated([pod], self.now)
            self.on_event("lost", f"{spec.name}: {pod.info.name} failed with its node")
            return True
        pod = run.crashing or run.pods[-1]
        pod.restarts += 1
        if kind == "crash":
            run.crashing = pod
            pod.ready, pod.waiting_reason = False, "CrashLoopBackOff"
            self._waste(run, "not-ready")
            run.ends_at, run.ending = (
                self.now + spec.duration * self.options.stuck_factor,
                "gave up",
            )
            self._push(run.ends_at, "finish", run)
        delay = CRASH_BACKOFF[min(pod.restarts, len(CRASH_BACKOFF)) - 1]
        self._push(self.now + delay + CRASH_RUNS, "restart", run)
        self.extender.updated([pod], self.now)
        return False

    def _lifecycle_evict(self, run: Run, rule: str) -> None:
        """A lifecycle rule evicted `run` whole; its controller recreates it or lets it end
        (`LIFECYCLE_RULES`). Freed: what the job would have gone on holding without the rules,
        counted at its first such eviction (the attempts after it exist because of the rule:
        what they hold is counted as they hold it)."""
        if run.gone:
            return
        record = run.record
        held = sum(p.requests.get(GPU, 0) for p in run.pods if p.node is not None)
        if run.ends_at is not None and not record.requeued:
            self.freed.append((rule, held, self.now, run.ends_at))
        self.lifecycle_evictions[rule] += 1
        self._last_change = self.now
        self.on_event("evicted", f"{record.spec.name} ({rule})")
        if LIFECYCLE_RULES[rule] == "ended":
            record.ended, record.outcome = self.now, f"evicted: {rule}"
            self._remove_run(run)
            return
        record.requeued += 1
        self._remove_run(run)
        self._create_run(record, again=True)

    def freed_seconds(self) -> dict[str, float]:
        """GPU-seconds lifecycle evictions freed by the end of the run, by rule."""
        out: dict[str, float] = {}
        for rule, gpus, since, until in self.freed:
            out[rule] = out.get(rule, 0.0) + gpus * max(0.0, min(until, self.now) - since)
        return out
