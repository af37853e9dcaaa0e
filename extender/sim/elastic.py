"""Elastic jobs in the simulator: which jobs of a workload are elastic (`with_elastic`), and how
the driver runs them (`ElasticPlay`).

An elastic job has a minimum (`JobSpec.members`, its pods' `gangplank.io/gang-size`) and a
maximum of workers (`JobSpec.max_members`, `gangplank.io/gang-max`); all its pods are created at
once, as a Job with that parallelism would. It starts once its minimum is bound (gangplank
places the minimum whole, extras only from spare room: docs/elastic.md) and its work is
`duration` x its maximum, in worker-seconds: each second it runs it does as much work as it has
workers bound, so at its maximum it runs `duration`, at half of it twice as long. A worker bound
later adds to its pace from then on; a worker taken back (preempted or reclaimed while the
others keep the minimum) slows it from then on, and its controller creates the pod again (a new
uid), which waits for spare room like any extra. Taking a job below its minimum takes it whole:
it is recreated and starts again from the beginning (no checkpoint), as any preempted job.
"""

from __future__ import annotations

import copy
import dataclasses
import random
from collections.abc import Sequence

from extender.core.model.resources import GPU
from extender.kube.convert import pod_from_api
from extender.sim.runs import Run, SimPod
from extender.sim.state import DriverState
from extender.sim.workload import JobSpec, stamp


def with_elastic(jobs: Sequence[JobSpec], share: float, seed: int) -> list[JobSpec]:
    """`jobs`, a seeded share of their gangs elastic: a gang of N pods becomes a job of N//2 up
    to N workers (the same pods, the same work at its maximum). Each gang draws from its own
    generator (its name and `seed`): which gangs are elastic does not depend on the others.
    Jobs with a fault stay as they are. Share 0: `jobs` as they are."""
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"the share of elastic gangs is between 0 and 1, not {share}")
    out = []
    for job in jobs:
        chosen = share and job.members > 1 and not job.fault and not job.elastic
        if chosen and random.Random(f"elastic:{seed}:{job.name}").random() < share:
            job = dataclasses.replace(job, members=job.members // 2, max_members=job.members)
        out.append(job)
    return out


class ElasticPlay(DriverState):
    """Elastic jobs' workers coming and going, and their work done at the pace of their
    workers, over the driver's state."""

    def _elastic_start(self, run: Run) -> None:
        """`run`'s minimum is bound: it runs, at the pace of its workers bound."""
        spec = run.record.spec
        run.workers = run.bound
        run.work_left = spec.duration * spec.pods
        run.progress_at = self.now
        self._elastic_workers += run.workers
        self._elastic_most += spec.pods
        self._elastic_jobs += 1
        self._workers_seen(run)
        self._elastic_finish(run)

    def _extra_bound(self, run: Run, pod: SimPod) -> None:
        """An extra worker of running `run` is bound: its pace goes up from now."""
        self._progress(run)
        run.workers += 1
        self._running[run.record.spec.queue] += pod.requests.get(GPU, 0)
        self._elastic_workers += 1
        self.extras_started += 1
        if self.periods is not None:
            self.periods.count("extras started", self.now)
        self._workers_seen(run)
        self._elastic_finish(run)

    def _elastic_gone(self, run: Run) -> None:
        """Running `run` is removed (ended or evicted whole): what it ran is counted."""
        self._progress(run)
        self._elastic_workers -= run.workers
        self._elastic_most -= run.record.spec.pods
        self._elastic_jobs -= 1

    def _elastic_settle(self) -> None:
        """The run is over: what the elastic jobs still running ran is counted up to now."""
        running = {id(p.run): p.run for p in self.live.values() if p.run.started is not None}
        for run in running.values():
            if run.record.spec.elastic:
                self._progress(run)

    def _progress(self, run: Run) -> None:
        span = self.now - run.progress_at
        if span > 0:
            run.work_left -= run.workers * span
            run.record.worker_seconds += run.workers * span
            run.record.run_seconds += span
        run.progress_at = self.now

    def _workers_seen(self, run: Run) -> None:
        record = run.record
        record.fewest = min(record.fewest or run.workers, run.workers)
        record.most = max(record.most, run.workers)

    def _elastic_finish(self, run: Run) -> None:
        """When `run` ends at its pace now (an earlier finish pushed is stale: `Run.ends_at`)."""
        run.ends_at = self.now + max(0.0, run.work_left) / run.workers
        self._push(run.ends_at, "finish", run)

    def _take(self, run: Run, pods: Sequence[SimPod], why: str) -> None:
        """`pods` of `run` taken (preempted, reclaimed): those alone when `run` is an elastic job
        running and keeps its minimum without them (its controller creates them again), else
        the whole run (recreated, it waits again)."""
        if run.gone:
            return
        taken = [p for p in pods if p.node is not None and p in run.pods]
        spec = run.record.spec
        if not (
            spec.elastic
            and run.started is not None
            and taken
            and run.bound - len(taken) >= spec.members
        ):
            self._evict(run, why)
            return
        self._account(self.now)
        self._progress(run)
        for pod in taken:
            self._running[spec.queue] -= pod.requests.get(GPU, 0)
            self._release(pod)
            run.bound -= 1
            run.workers -= 1
            self._elastic_workers -= 1
            self._recreate(run, pod)
        self.extras_taken += len(taken)
        if self.periods is not None:
            self.periods.count("extras taken", self.now, len(taken))
        self.on_event("preempted", f"{len(taken)} extra worker(s) of {spec.name} ({why})")
        self._last_change = self.now
        self._workers_seen(run)
        self._elastic_finish(run)

    def _recreate(self, run: Run, pod: SimPod) -> None:
        """`pod` gone, and its controller's new one (the same name, a new uid) waiting."""
        self.live.pop(pod.uid, None)
        self.extender.deleted([pod], self.now)
        raw = copy.deepcopy(pod.raw)
        raw["metadata"]["uid"] = f"uid-{next(self._uids):08d}"
        raw["metadata"]["creationTimestamp"] = stamp(self.now)
        raw["spec"].pop("nodeName", None)
        new = SimPod(raw, pod_from_api(raw), run)
        run.pods[run.pods.index(pod)] = new
        self.pending[new.uid] = new
        self.live[new.uid] = new
        self.extender.created([new], self.now)
        self._enqueue(new)
