"""Prometheus metrics: requests per verb, and the health of the cluster cache.

One registry per app (tests build many apps in one process); gunicorn runs one worker, so no
multiprocess mode is needed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, TypedDict

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

if TYPE_CHECKING:  # what the core counts and reports, read here
    from extender.core.gangs.reservations import GangOutcomes as Outcomes
    from extender.core.lifecycle.lifecycle import LifecycleOutcomes
    from extender.core.model.gpu_use import GpuUse
    from extender.core.preemption.preemption import PreemptionOutcomes
    from extender.core.queues.ledger import QueueOutcomes
    from extender.core.queues.policy import Policy
    from extender.core.report.pools import Pool

# Server time of a call: tens of microseconds for a pass-through pod, up to seconds for a bad day.
LATENCY_BUCKETS = (
    0.0001,
    0.00025,
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
)


class QueueFigure(TypedDict):
    """One queue's figures, in base units (`core/report/queue_report.py: queue_numbers`)."""

    queue: str
    share: float
    pending_jobs: int
    oldest_pending_seconds: float
    failing_jobs: int
    waiting_longer_than: Mapping[str, int]  # jobs waiting longer than a threshold (5m, 1h, 6h)
    # guarantee, max, usage, ... -> resource -> amount (decayed_usage: resource-seconds)
    by_resource: Mapping[str, Mapping[str, float]]


class Metrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.requests = Counter(
            "gangplank_requests",
            "Extender calls answered, by verb and HTTP status.",
            ["verb", "code"],
            registry=r,
        )
        self.latency = Histogram(
            "gangplank_request_duration_seconds",
            "Server time of an extender call, by verb.",
            ["verb"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.lock_held = Histogram(
            "gangplank_decision_lock_held_seconds",
            "How long each call (by verb) and each periodic pass held the decision lock.",
            ["holder"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.lock_wait = Histogram(
            "gangplank_decision_lock_wait_seconds",
            "How long each call (by verb) and each periodic pass waited for the decision lock.",
            ["holder"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self._lock_children: dict[str, tuple[Histogram, Histogram]] = {}
        self.gc_pause = Histogram(
            "gangplank_gc_pause_seconds",
            "How long each garbage collection stopped the worker, by generation.",
            ["generation"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self._gc_children = [self.gc_pause.labels(str(g)) for g in range(3)]
        self.events = Counter(
            "gangplank_events",
            "Kubernetes Events written on pods (gang planned, plan expired, holding, queue held).",
            registry=r,
        )
        self.binds = Counter(
            "gangplank_binds",
            "Bind calls by outcome (bound; already-bound: by gangplank, with its plan's other "
            "members; refused; failed).",
            ["outcome"],
            registry=r,
        )
        self.relists = Counter(
            "gangplank_cache_relists",
            "Full relists of a kind after its watch history expired (410 Gone).",
            ["kind"],
            registry=r,
        )
        self.watch_errors = Counter(
            "gangplank_watch_errors",
            "List or watch calls that failed or were dropped, by kind and error.",
            ["kind", "reason"],
            registry=r,
        )
        # Counted per watch event in a plain dict (a labelled Counter's lock and lookups cost
        # more than the rest of a status-only event) and exported at scrape time.
        self._watch_events: dict[str, dict[str, int]] = {}
        r.register(_WatchEventCollector(self._watch_events))
        self.list_seconds = Gauge(
            "gangplank_cache_last_list_duration_seconds",
            "How long the last full list of a kind took.",
            ["kind"],
            registry=r,
        )

        self.periodic_errors = Counter(
            "gangplank_periodic_errors",
            "Steps of gangplank's periodic pass that raised (logged with a traceback; the pass "
            "goes on), by step: every, adopt, rediscover, leadership, lead-taken, pass, "
            "restore-plans, learn-mix, decide, record-plans, evictions, evict, publish, nudge, "
            "events.",
            ["step"],
            registry=r,
        )
        self.kicks = Counter(
            "gangplank_gang_kicks",
            "Parked gang members nudged to be retried at once (annotation patch).",
            registry=r,
        )
        self.plans = Counter(
            "gangplank_gang_plans",
            "Gangs planned (all members placed and reserved).",
            registry=r,
        )
        self.expired = Counter(
            "gangplank_gang_reservations_expired",
            "Gang plans released because members did not bind in time.",
            registry=r,
        )
        self.plan_failures = Counter(
            "gangplank_gang_plan_failures",
            "Gang members rejected, by reason: incomplete (members missing), no-room, invalid "
            "(size or PodGroup problems).",
            ["reason"],
            registry=r,
        )
        self.start_latency = Histogram(
            "gangplank_gang_start_seconds",
            "Time from the last member's creation to all members bound.",
            buckets=(0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800),
            registry=r,
        )

        self.admissions = Counter(
            "gangplank_queue_admissions",
            "Jobs (a gang whole, a pod alone) admitted by their queue's quota, by queue.",
            ["queue"],
            registry=r,
        )
        self.rejections = Counter(
            "gangplank_queue_rejections",
            "Filter calls refused by queue rules, by queue and reason (unknown-queue, closed, "
            "draining, max, borrow); queue is empty when the named queue does not exist.",
            ["queue", "reason"],
            registry=r,
        )
        self.admission_wait = Histogram(
            "gangplank_queue_admission_wait_seconds",
            "Time from a job's creation to its admission, by queue.",
            ["queue"],
            buckets=(1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600, 86400),
            registry=r,
        )
        self.policy_reloads = Counter(
            "gangplank_policy_reloads",
            "Policy loads by outcome: loaded, or refused (invalid; the last good one stays).",
            ["outcome"],
            registry=r,
        )
        self.policy_valid = Gauge(
            "gangplank_policy_last_load_ok",
            "1 when the last policy load or reload succeeded, 0 when it was refused.",
            registry=r,
        )
        self.policy_queues = Gauge(
            "gangplank_policy_queues", "Queues in the policy in force.", registry=r
        )
        self.policy_loaded_at = Gauge(
            "gangplank_policy_last_success_timestamp_seconds",
            "When the policy in force was loaded (Unix time).",
            registry=r,
        )

        self.evictions = Counter(
            "gangplank_preemption_evictions",
            "Pods gangplank evicted itself, by the victim's queue (empty: none), rule (priority, "
            "reclaim, recovery: a gang a restart left in part that fits nowhere) and outcome "
            "(evicted; shrunk: an elastic gang's extras taken back by a smaller size of their "
            "workload; blocked by a PodDisruptionBudget, gone, failed).",
            ["queue", "rule", "outcome"],
            registry=r,
        )
        self.regrowths = Counter(
            "gangplank_elastic_regrowths",
            "Elastic workloads gangplank made smaller, raised by one member on spare room, by "
            "kind (Job, PyTorchJob) and outcome (grown; gone, failed).",
            ["kind", "outcome"],
            registry=r,
        )
        self.suspensions = Counter(
            "gangplank_lifecycle_suspensions",
            "Workloads the lifecycle rules requeued through their suspend flag, by kind (Job, "
            "JobSet, PyTorchJob...), action (suspend, resume) and outcome (suspended or "
            "resumed; blocked by a PodDisruptionBudget, gone, failed: the requeue is undone).",
            ["kind", "action", "outcome"],
            registry=r,
        )
        self.consolidation_moves = Counter(
            "gangplank_consolidation_moves",
            "Jobs gangplank moved to make room for a waiting job (consolidation), by how "
            "(suspend, evict) and outcome (moved; blocked by a PodDisruptionBudget, gone, failed, "
            "dropped: the plan fell before this move, nothing more of it moves).",
            ["way", "outcome"],
            registry=r,
        )
        self.consolidation_plans = Counter(
            "gangplank_consolidation_plans",
            "Consolidation plans, by outcome (made; refused: a move was refused, dropped: what it "
            "counted on changed; in both the waiting job's and the moved jobs' places are freed).",
            ["outcome"],
            registry=r,
        )
        self.lost = Counter(
            "gangplank_preemption_victim_gpu_seconds",
            "GPU-seconds the evicted jobs had run (work lost unless they checkpointed).",
            ["queue", "rule"],
            registry=r,
        )
        self.preemption_wait = Histogram(
            "gangplank_preemption_wait_seconds",
            "A preempting job's wait: before (created -> victims chosen) and after (chosen -> "
            "running).",
            ["phase"],
            buckets=(1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 21600),
            registry=r,
        )
        self._gpu_use = _GpuUseCollector()
        r.register(self._gpu_use)
        self._records = _RecordsCollector()
        r.register(self._records)
        self._history = _HistoryCollector()
        r.register(self._history)

        self.waste = Counter(
            "gangplank_waste_gpu_seconds",
            "GPU-seconds held by jobs that do not use them, by kind: not-ready (bound, never all "
            "Running and Ready), broken (lost members after running whole), idle (GPUs below "
            "the idleGpu threshold over its window). Counted only under a lifecycle: policy.",
            ["kind"],
            registry=r,
        )
        self.freed = Counter(
            "gangplank_lifecycle_freed_gpus",
            "GPUs given back by evicting jobs under a lifecycle rule (not-ready, stale-gang, "
            "max-runtime, idle).",
            ["rule"],
            registry=r,
        )
        self.requeues = Counter(
            "gangplank_requeues",
            "Jobs evicted whole and requeued, by rule (not-ready; max-runtime: held at once).",
            ["rule"],
            registry=r,
        )
        self.held_jobs = Gauge(
            "gangplank_jobs_held",
            "Jobs held until a person acts: past their requeue limit, or stopped at maxRuntime.",
            registry=r,
        )
        self.idle_jobs = Gauge(
            "gangplank_idle_jobs", "Running jobs whose GPUs are idle (the last review).", registry=r
        )
        self.idle_gpus = Gauge(
            "gangplank_idle_gpus", "GPUs held by idle jobs (the last review).", registry=r
        )

    def record_lifecycle(self, outcomes: LifecycleOutcomes) -> None:
        for kind, seconds in outcomes.waste.items():
            self.waste.labels(kind).inc(seconds)
        for rule, gpus in outcomes.freed.items():
            self.freed.labels(rule).inc(gpus)
        for rule, jobs in outcomes.requeues.items():
            self.requeues.labels(rule).inc(jobs)
        self.held_jobs.set(outcomes.held)
        self.idle_jobs.set(outcomes.idle)
        self.idle_gpus.set(outcomes.idle_gpus)

    def periodic_error(self, step: str) -> None:
        """A step of the periodic pass raised (see extender/service/periodic.py)."""
        self.periodic_errors.labels(step).inc()

    def evicted(self, queue: str, rule: str, outcome: str, pods: int) -> None:
        self.evictions.labels(queue, rule, outcome).inc(pods)

    def regrown(self, kind: str, outcome: str) -> None:
        self.regrowths.labels(kind, outcome).inc()

    def suspended(self, kind: str, action: str, outcome: str) -> None:
        self.suspensions.labels(kind, action, outcome).inc()

    def moved(self, way: str, outcome: str) -> None:
        self.consolidation_moves.labels(way, outcome).inc()

    def record_consolidation(self, plans: Mapping[str, int]) -> None:
        for outcome, count in plans.items():
            self.consolidation_plans.labels(outcome).inc(count)

    def gpu_seconds_lost(self, queue: str, rule: str, seconds: float) -> None:
        self.lost.labels(queue, rule).inc(seconds)

    def record_preemption(self, outcomes: PreemptionOutcomes) -> None:
        for seconds in outcomes.waits_before:
            self.preemption_wait.labels("before").observe(seconds)
        for seconds in outcomes.waits_after:
            self.preemption_wait.labels("after").observe(seconds)

    def gpu_use_read(self, use: GpuUse) -> None:
        """One read of GPU utilisation from Prometheus (see extender/observe/gpu_use.py)."""
        self._gpu_use.read(use)

    def usage_history_read(self, ok: bool) -> None:
        """Whether the fair order has the usage history (see extender/service/history_io.py)."""
        self._history.up = ok

    def requeue_records_read(self, ok: bool) -> None:
        """One attempt to read the requeue records back (see extender/service/lifecycle_io.py)."""
        self._records.up = ok

    def lock_hold(self, holder: str, waited: float, held: float) -> None:
        """One hold of the decision lock (see extender/service/decision_lock.py)."""
        children = self._lock_children.get(holder)
        if children is None:
            children = (self.lock_wait.labels(holder), self.lock_held.labels(holder))
            self._lock_children[holder] = children
        children[0].observe(waited)
        children[1].observe(held)

    def gc_paused(self, generation: int, seconds: float) -> None:
        """One garbage collection (see extender/observe/gc_pauses.py)."""
        self._gc_children[min(generation, 2)].observe(seconds)

    def policy_loaded(self, policy: Policy | None) -> None:
        self.policy_valid.set(1)
        self.policy_queues.set(len(policy.queues) if policy is not None else 0)
        if policy is not None:
            self.policy_reloads.labels("loaded").inc()
            self.policy_loaded_at.set(time.time())

    def policy_refused(self, message: str) -> None:
        self.policy_valid.set(0)
        self.policy_reloads.labels("refused").inc()

    def record_queue_outcomes(self, outcomes: QueueOutcomes) -> None:
        for queue, count in outcomes.admitted.items():
            self.admissions.labels(queue).inc(count)
        for (queue, rule), count in outcomes.refused.items():
            self.rejections.labels(queue, rule).inc(count)
        for queue, seconds in outcomes.waits:
            self.admission_wait.labels(queue).observe(seconds)

    def watch_queues(self, figures: Callable[[], Iterable[QueueFigure]]) -> None:
        self.registry.register(_QueueCollector(figures))

    def record_gang_outcomes(self, outcomes: Outcomes) -> None:
        self.plans.inc(outcomes.planned)
        self.expired.inc(outcomes.expired)
        for reason, count in outcomes.failures.items():
            self.plan_failures.labels(reason).inc(count)
        for seconds in outcomes.start_latencies:
            self.start_latency.observe(seconds)

    def watch_pools(self, figures: Callable[[], Iterable[Pool]]) -> None:
        self.registry.register(_PoolCollector(figures))

    def watch_leader(self, leading: Callable[[], bool]) -> None:
        self.registry.register(_LeaderCollector(leading))

    def watch_gangs(self, counts: Callable[[], tuple[Mapping[str, int], int]]) -> None:
        self.registry.register(_GangCollector(counts))

    # WatchObserver
    def listed(self, kind: str, count: int, seconds: float) -> None:
        self.list_seconds.labels(kind).set(seconds)

    def relisted(self, kind: str, reason: str) -> None:
        self.relists.labels(kind).inc()

    def event_counts(self, kind: str) -> dict[str, int]:
        # Counted in by the one reflector thread of the kind, once per watch event: no lock.
        return self._watch_events.setdefault(kind, {})

    def error(self, kind: str, reason: str) -> None:
        self.watch_errors.labels(kind, reason).inc()

    def watch_cache(
        self,
        counts: Callable[[], Mapping[str, int]],
        contacts: Callable[[], Iterable[tuple[str, float, bool]]],
        clock: Callable[[], float] = time.monotonic,
        stale: Callable[[], str] = str,
    ) -> None:
        """Export cache size, age and staleness, read at scrape time."""
        self.registry.register(_CacheCollector(counts, contacts, clock, stale))


class _WatchEventCollector(Collector):
    def __init__(self, counts: dict[str, dict[str, int]]) -> None:
        self._counts = counts

    def collect(self) -> Iterable[CounterMetricFamily]:
        family = CounterMetricFamily(
            "gangplank_watch_events",
            "Watch events applied to the cache, by kind and type.",
            labels=["kind", "type"],
        )
        for kind, by_type in list(self._counts.items()):
            for event_type, count in list(by_type.items()):
                family.add_metric([kind, event_type], count)
        return [family]


class _GpuUseCollector(Collector):
    """GPU use reads: no series before the first (without --prometheus-url, none at all), so an
    alert on `gangplank_gpu_use_up == 0` does not fire where the idle-GPU rule is off."""

    def __init__(self) -> None:
        self._reads = 0
        self._errors = 0
        self._up = False
        self._pods = 0

    def read(self, use: GpuUse) -> None:
        self._reads += 1
        self._up = use.ok
        self._pods = len(use.busiest) if use.ok else 0
        if not use.ok:
            self._errors += 1

    def collect(self) -> Iterable[GaugeMetricFamily | CounterMetricFamily]:
        if not self._reads:
            return []
        up = GaugeMetricFamily(
            "gangplank_gpu_use_up",
            "1 when the last read of GPU utilisation from Prometheus (--prometheus-url) "
            "succeeded, 0 when it failed: the idle-GPU rule then acts on no job.",
        )
        up.add_metric([], 1.0 if self._up else 0.0)
        errors = CounterMetricFamily(
            "gangplank_gpu_use_read_errors",
            "Reads of GPU utilisation from Prometheus that failed (unreachable, HTTP error, bad "
            "answer, query error).",
        )
        errors.add_metric([], self._errors)
        pods = GaugeMetricFamily(
            "gangplank_gpu_use_pods",
            "Pods with GPU utilisation data over the whole idle window in the last read (0 when "
            "it failed); running GPU pods not counted here have no data and are not acted on.",
        )
        pods.add_metric([], self._pods)
        return [up, errors, pods]


class _RecordsCollector(Collector):
    """Whether the requeue records were read back: no series before the first attempt (none
    where they are not kept: the demo, --cluster-file; none on a replica that never led)."""

    NAME = "gangplank_requeue_records_up"
    HELP = (
        "1 when the requeue records (--requeue-configmap) were read back, 0 while they "
        "cannot be: the not-ready and max-runtime lifecycle rules then requeue no job."
    )

    def __init__(self) -> None:
        self.up: bool | None = None

    def collect(self) -> Iterable[GaugeMetricFamily]:
        if self.up is None:
            return []
        up = GaugeMetricFamily(self.NAME, self.HELP)
        up.add_metric([], 1.0 if self.up else 0.0)
        return [up]


class _HistoryCollector(_RecordsCollector):
    """Whether the fair order has the queues' usage history: no series while the policy keeps
    none (or before the first attempt to read it back)."""

    NAME = "gangplank_usage_history_up"
    HELP = (
        "1 when the queues' usage history (--usage-history-configmap, the policy's fairness:) "
        "is read back and used, 0 while it is lost or cannot be read: the fair order is then "
        "by current use alone."
    )


class _GangCollector(Collector):
    def __init__(self, counts: Callable[[], tuple[Mapping[str, int], int]]) -> None:
        self._counts = counts

    def collect(self) -> Iterable[GaugeMetricFamily]:
        by_state, reserved = self._counts()
        gangs = GaugeMetricFamily(
            "gangplank_gangs",
            "Gangs by state: waiting, planned (reserved), running.",
            labels=["state"],
        )
        for state, count in by_state.items():
            gangs.add_metric([state], count)
        held = GaugeMetricFamily(
            "gangplank_gang_reserved_pods", "Gang members holding a reservation, not yet bound."
        )
        held.add_metric([], reserved)
        return [gangs, held]


_QUEUE_GAUGES = {
    "guarantee": "Guarantee of a queue (a parent without its own: its children's sum).",
    "max": "Ceiling of a queue, where the policy sets one.",
    "usage": "Requests of a queue's running pods plus its gang reservations (subtree).",
    "borrowed": "What a queue uses beyond its guarantee.",
    "lent": "The part of a queue's unused guarantee its siblings are borrowing.",
    "pending_requests": "Requests of the jobs waiting in a queue (open queues).",
    "decayed_usage": "A queue's decayed use in resource-seconds (GPU-seconds, core-seconds, "
    "byte-seconds), halved every half-life of the policy's fairness: (subtree).",
}


class _QueueCollector(Collector):
    def __init__(self, figures: Callable[[], Iterable[QueueFigure]]) -> None:
        self._figures = figures

    def collect(self) -> Iterable[GaugeMetricFamily]:
        gauges = {
            key: GaugeMetricFamily(f"gangplank_queue_{key}", text, labels=["queue", "resource"])
            for key, text in _QUEUE_GAUGES.items()
        }
        pending = GaugeMetricFamily(
            "gangplank_queue_pending_jobs", "Jobs waiting in a queue (subtree).", labels=["queue"]
        )
        oldest = GaugeMetricFamily(
            "gangplank_queue_oldest_pending_seconds",
            "How long the longest-waiting job of a leaf queue has waited.",
            labels=["queue"],
        )
        failing = GaugeMetricFamily(
            "gangplank_queue_jobs_failing",
            "Running jobs of a queue failing repeatedly: 3+ container restarts across its pods, "
            "or 2+ pods of a gang failed (and replaced).",
            labels=["queue"],
        )
        longer = GaugeMetricFamily(
            "gangplank_queue_jobs_waiting_longer_than",
            "Jobs of a leaf queue waiting longer than a threshold (5m, 1h, 6h).",
            labels=["queue", "threshold"],
        )
        share = GaugeMetricFamily(
            "gangplank_queue_share",
            "Dominant-resource share of a queue against its weight (fair order: lowest first).",
            labels=["queue"],
        )
        for figure in self._figures():
            queue = figure["queue"]
            pending.add_metric([queue], figure["pending_jobs"])
            share.add_metric([queue], figure["share"])
            oldest.add_metric([queue], figure.get("oldest_pending_seconds", 0.0))
            failing.add_metric([queue], figure.get("failing_jobs", 0))
            for threshold, count in figure.get("waiting_longer_than", {}).items():
                longer.add_metric([queue, threshold], count)
            for key, values in figure["by_resource"].items():
                for resource, amount in values.items():
                    value = amount / 1000 if resource == "cpu" else float(amount)
                    gauges[key].add_metric([queue, resource], value)
        return [*gauges.values(), pending, share, oldest, longer, failing]


class _PoolCollector(Collector):
    def __init__(self, figures: Callable[[], Iterable[Pool]]) -> None:
        self._figures = figures

    def collect(self) -> Iterable[GaugeMetricFamily]:
        gpus = GaugeMetricFamily(
            "gangplank_pool_gpus",
            "GPUs of a node pool (nodes by GPU model): allocatable, allocated, free, and stranded "
            "(free on nodes with fewer free GPUs than the smallest GPU pod waiting).",
            labels=["pool", "state"],
        )
        for pool in self._figures():
            for state in ("allocatable", "allocated", "free", "stranded"):
                gpus.add_metric([pool.name, state], getattr(pool, state))
        return [gpus]


class _LeaderCollector(Collector):
    def __init__(self, leading: Callable[[], bool]) -> None:
        self._leading = leading

    def collect(self) -> Iterable[GaugeMetricFamily]:
        leader = GaugeMetricFamily(
            "gangplank_leader",
            "1 while this replica's kube-scheduler holds the leader Lease (or runs without one).",
        )
        leader.add_metric([], 1.0 if self._leading() else 0.0)
        return [leader]


class _CacheCollector(Collector):
    def __init__(
        self,
        counts: Callable[[], Mapping[str, int]],
        contacts: Callable[[], Iterable[tuple[str, float, bool]]],
        clock: Callable[[], float],
        stale: Callable[[], str] = str,
    ) -> None:
        self._counts = counts
        self._contacts = contacts
        self._clock = clock
        self._stale = stale

    def collect(self) -> Iterable[GaugeMetricFamily]:
        objects = GaugeMetricFamily(
            "gangplank_cache_objects", "Objects in the cluster cache, by kind.", labels=["kind"]
        )
        for kind, count in self._counts().items():
            objects.add_metric([kind], count)
        age = GaugeMetricFamily(
            "gangplank_cache_age_seconds",
            "Seconds since the API server last sent news of a kind (event, bookmark or list).",
            labels=["kind"],
        )
        synced = GaugeMetricFamily(
            "gangplank_cache_synced", "1 once a kind has been fully listed.", labels=["kind"]
        )
        now = self._clock()
        for kind, last_contact, is_synced in self._contacts():
            synced.add_metric([kind], 1.0 if is_synced else 0.0)
            if is_synced:
                age.add_metric([kind], max(0.0, now - last_contact))
        stale = GaugeMetricFamily(
            "gangplank_cache_stale",
            "1 while a watch has been down longer than --stale-after: gangs and queued jobs wait "
            "and nothing is evicted until the cluster view is fresh.",
        )
        stale.add_metric([], 1.0 if self._stale() else 0.0)
        return [objects, age, synced, stale]
