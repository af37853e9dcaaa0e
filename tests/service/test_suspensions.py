"""The periodic pass carries out requeues through the workload: a suspension only once its
requeue record is kept (a workload is never left suspended with no record to resume it by), a
refused one undoes its requeue, and a workload whose backoff ended is resumed once."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from prometheus_client import generate_latest

from extender.core.lifecycle.workloads import Resume, Suspension
from extender.kube.binder import StoreBinder
from extender.observe.metrics import Metrics
from extender.service.runtime import Runtime
from tests.cluster import Cluster
from tests.core.lifecycle.test_lifecycle import UNREADY, job_gang, nodes, policy

JOB = "gangplank:default/train"
NOW = 1_800_000_000.0


class _Suspender:
    """Answers `outcome` and remembers what it was asked, in order."""

    def __init__(self, outcome: str = "suspended", resumed: str = "resumed") -> None:
        self.outcome, self.resumed = outcome, resumed
        self.calls: list[tuple[str, str]] = []

    def suspend(self, suspension: Suspension) -> str:
        self.calls.append(("suspend", suspension.workload.name))
        return self.outcome

    def resume(self, resume: Resume) -> str:
        self.calls.append(("resume", resume.workload.name))
        return self.resumed


class _Records:
    """Requeue records in memory; `down` makes each save raise, as an API server away does."""

    def __init__(self) -> None:
        self.kept: dict[str, dict[str, Any]] = {}
        self.down = False

    def load(self) -> dict[str, dict[str, Any]]:
        return dict(self.kept)

    def save(self, changes: Mapping[str, dict[str, Any] | None]) -> None:
        if self.down:
            raise RuntimeError("ConfigMap gangplank-system/gangplank-requeues: unreachable")
        for job, record in changes.items():
            if record is None:
                self.kept.pop(job, None)
            else:
                self.kept[job] = record


def runtime(
    suspender: _Suspender, records: _Records, clock: list[float] | None = None, pods: bool = True
) -> Runtime:
    """gangplank with Job train's 4 pods bound, one never Ready for 11 minutes (readyTimeout
    10m, backoff 1m): the first pass requeues it. `pods=False`: the Job is suspended, no pods;
    `clock[0]`: the time now."""
    now = clock or [NOW]
    cluster = Cluster(nodes=nodes(), pods=job_gang(NOW - 11 * 60, **UNREADY) if pods else [])
    rules = policy(readyTimeout="10m", requeue={"backoff": "1m", "maxBackoff": "1h", "limit": 3})
    return Runtime(
        cluster.store,
        StoreBinder(),
        Metrics(),
        preloaded=True,
        policy=rules,
        suspender=suspender,
        requeue_store=records,
        clock=lambda: now[0],
    )


def test_a_suspension_waits_until_its_requeue_record_is_kept() -> None:
    suspender, records = _Suspender(), _Records()
    run = runtime(suspender, records)
    records.down = True
    run.kicker.run_once()
    assert suspender.calls == [], "not suspended: a restart now would find no record"
    records.down = False
    run.kicker.run_once()
    assert suspender.calls == [("suspend", "train")]
    assert records.kept[JOB]["workload"]["name"] == "train", "kept before the suspension"


def test_a_suspension_refused_undoes_the_requeue_and_is_counted() -> None:
    suspender, records = _Suspender(outcome="blocked"), _Records()
    run = runtime(suspender, records)
    run.kicker.run_once()
    assert run.scheduler.lifecycle.requeues.get(JOB) is None, "the job runs on, no requeue"
    run.kicker.run_once()
    assert JOB not in records.kept, "the undone record is deleted too"
    text = generate_latest(run.metrics.registry).decode()
    assert (
        'gangplank_lifecycle_suspensions_total{action="suspend",kind="Job",outcome="blocked"} 1.0'
        in text
    )


def test_a_workload_whose_backoff_ended_is_resumed_once_and_that_is_kept() -> None:
    suspender, records = _Suspender(), _Records()
    runtime(suspender, records).kicker.run_once()
    later = runtime(suspender, records, [NOW + 61], pods=False)  # the next process
    later.kicker.run_once()
    later.kicker.run_once()
    assert suspender.calls == [("suspend", "train"), ("resume", "train")]
    assert records.kept[JOB]["resumed"] is True


def test_a_resume_that_failed_is_tried_again_and_the_record_says_not_resumed_meanwhile() -> None:
    suspender, records = _Suspender(resumed="failed"), _Records()
    runtime(suspender, records).kicker.run_once()
    clock = [NOW + 61]
    later = runtime(suspender, records, clock, pods=False)
    later.kicker.run_once()
    clock[0] += 1
    later.kicker.run_once()
    assert suspender.calls == [("suspend", "train"), ("resume", "train")], "not at once"
    assert records.kept[JOB]["resumed"] is False
    clock[0] += 5
    later.kicker.run_once()
    assert suspender.calls[-1] == ("resume", "train") and len(suspender.calls) == 3
