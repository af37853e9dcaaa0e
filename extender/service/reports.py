"""What the read-only APIs (/queues, /status, /why, /pods) and the metrics read of the decision
state: copied under the decision lock, written out after it. Snapshots and the policy are
immutable, so what is read of them alone needs no lock."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from extender.cache.store import ClusterStore
from extender.core.engine import Engine
from extender.core.report.counts import gang_counts
from extender.core.report.pools import Pool, pools
from extender.core.report.queue_report import collect_report, queue_numbers, render_report
from extender.core.report.why import (
    describe_pods,
    explain,
    explain_unseen,
    find_pod,
    list_pods,
    status,
)
from extender.observe.metrics import Metrics, QueueFigure
from extender.service.decision_lock import DecisionLock


class Reports:
    def __init__(
        self,
        store: ClusterStore,
        scheduler: Engine,
        lock: DecisionLock,
        metrics: Metrics,
        clock: Callable[[], float],
    ) -> None:
        self.store = store
        self.scheduler = scheduler
        self.lock = lock
        self.metrics = metrics
        self.clock = clock

    def queue_figures(self, only: str | None = None, jobs_per_queue: int = 20) -> Any:
        """The queue report as of now (None without a policy), for /queues: the figures are
        copied under the lock and written out after it."""
        with self.lock.by("queue report"):
            if self.scheduler.policy is None:
                return None
            raw = collect_report(
                self.scheduler,
                self.store.snapshot(),
                self.clock(),
                only=only,
                jobs_per_queue=jobs_per_queue,
            )
        return render_report(raw)

    def queue_metrics(self) -> list[QueueFigure]:
        with self.lock.by("metrics: queues"):
            figures = queue_numbers(self.scheduler, self.store.snapshot(), self.clock())
        return cast(list[QueueFigure], figures)  # the core types them dict[str, Any]

    def status_figures(self) -> dict[str, Any]:
        with self.lock.by("status"):
            return status(self.scheduler, self.store.snapshot(), self.clock())

    def why(self, namespace: str, name: str) -> dict[str, Any] | None:
        snapshot = self.store.snapshot()
        pod = find_pod(snapshot, namespace, name)  # an immutable snapshot: no lock needed
        with self.lock.by("why"):
            if pod is None:
                return explain_unseen(self.scheduler, namespace, name)
            return explain(self.scheduler, snapshot, pod, self.clock())

    def pods(
        self, limit: int, queue: str | None, namespace: str | None, waiting: bool
    ) -> dict[str, Any] | None:
        """gangplank's pods for `gangplank pods` (None: no such queue). Listed from the snapshot
        and the policy (both immutable: no lock); only the plans of those shown under it."""
        snapshot, policy = self.store.snapshot(), self.scheduler.policy
        names = self.scheduler.scheduler_names
        listed = list_pods(
            snapshot, policy, names, queue=queue, namespace=namespace, waiting=waiting
        )
        if listed is None:
            return None
        with self.lock.by("pods"):
            planned = self.scheduler.reservations.planned_node
            rows = describe_pods(listed[:limit], planned, self.clock())
        return {"pods": rows, "total": len(listed)}

    def pool_figures(self) -> list[Pool]:
        return pools(self.store.snapshot())  # an immutable snapshot: no lock needed

    def gang_counts(self) -> tuple[dict[str, int], int]:
        with self.lock.by("metrics: gangs"):
            counts = gang_counts(self.scheduler, self.store.snapshot())
            return counts, self.scheduler.reservations.pods()

    def publish(self) -> None:
        """Move what the core counted (gangs, queues, preemption, lifecycle) into the metrics."""
        with self.lock.by("metrics: outcomes"):
            outcomes = self.scheduler.take_outcomes()
            queue_outcomes = self.scheduler.ledger.take_outcomes()
            preemption = self.scheduler.preemption.take_outcomes()
            lifecycle = self.scheduler.lifecycle.take_outcomes()
            consolidation = self.scheduler.consolidation.take_outcomes()
        self.metrics.record_consolidation(consolidation.plans)
        self.metrics.record_gang_outcomes(outcomes)
        self.metrics.record_queue_outcomes(queue_outcomes)
        self.metrics.record_preemption(preemption)
        self.metrics.record_lifecycle(lifecycle)
