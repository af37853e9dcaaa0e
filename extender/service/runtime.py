"""The wiring: the parts around the core, built and connected.

The store and how it is fed (the reflectors of `watches.py`, or a file), the binder, the core
and its decision lock, the periodic pass (`periodic.py`) and the thread that runs it
(`kicker.py`), the evictions it carries out (`evictions.py`), readiness and staleness
(`readiness.py`), what the read-only APIs and the metrics read (`reports.py`), the policy
watcher and the switch it makes (`policy_switch.py`), and the metrics.
`Runtime.start()` must run in the gunicorn worker (after the fork): it starts the threads.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from extender.cache.reflector import Reflector
from extender.cache.static import load_cluster_file
from extender.cache.store import ClusterStore
from extender.core.engine import Engine
from extender.core.gangs.placer import GangConfig
from extender.core.queues.policy import Policy
from extender.kube.binder import ApiBinder, Binder, StoreBinder
from extender.kube.events import ApiEventRecorder, EventRecorder, LogEventRecorder
from extender.kube.evictor import ApiEvictor, Evictor, LogEvictor
from extender.kube.leader import AlwaysLeader, Leadership, LeaseLeadership, default_identity
from extender.kube.patcher import ApiPatcher, LogPatcher, Patcher
from extender.kube.plan_recorder import PlanRecorder
from extender.kube.requeue_store import RequeueStore
from extender.kube.workloads import ApiSuspender, LogSuspender, Suspender
from extender.observe.gc_pauses import GcPauses
from extender.observe.gpu_use import GpuUseReader
from extender.observe.metrics import Metrics
from extender.policy.file import PolicyWatcher, load_policy, log_warnings
from extender.service.decision_lock import DecisionLock
from extender.service.evictions import Evictions, Suspensions
from extender.service.history_io import HistoryIO
from extender.service.kicker import Kicker
from extender.service.lifecycle_io import LifecycleIO, RecordStore, UseReader
from extender.service.periodic import PeriodicPass
from extender.service.policy_switch import PolicySwitch
from extender.service.readiness import Readiness
from extender.service.reports import Reports
from extender.service.settings import Settings
from extender.service.watches import api_clients, build_reflectors

log = logging.getLogger("gangplank")


class Runtime:
    def __init__(
        self,
        store: ClusterStore,
        binder: Binder,
        metrics: Metrics,
        reflectors: Iterable[Reflector] = (),
        *,
        preloaded: bool = False,
        config: GangConfig | None = None,
        patcher: Patcher | None = None,
        leadership: Leadership | None = None,
        clock: Callable[[], float] = time.time,
        kick_interval: float = 0.5,
        policy: Policy | None = None,
        policy_path: str | None = None,
        scheduler_names: frozenset[str] = frozenset({"gangplank"}),
        evictor: Evictor | None = None,
        suspender: Suspender | None = None,
        events: EventRecorder | None = None,
        stale_after: float = 30.0,
        gpu_use: UseReader | None = None,
        requeue_store: RecordStore | None = None,
        history_store: RecordStore | None = None,
        bind_planned: bool = False,
    ) -> None:
        self.store = store
        self.binder = binder
        # Planned gang members bound at plan time (`plan_binds.py`): `gangplank serve` passes
        # --bind-planned-members, on by default; off here for runtimes built in process
        self.bind_planned = bind_planned
        self.metrics = metrics
        self.reflectors = list(reflectors)
        self.clock = clock
        if policy is None and policy_path and Path(policy_path).exists():
            policy = load_policy(policy_path)
        self.scheduler = Engine(config, policy, scheduler_names)
        self.scheduler.lifecycle.suspend_workloads = True  # carried out by `Suspensions` below
        self.scheduler.consolidation.active = True  # its moves carried out by the periodic pass
        # One lock for the decision state: a plan is made and read whole. Timed per holder.
        self.lock = DecisionLock(metrics.lock_hold)
        self.gc_pauses = GcPauses(metrics.gc_paused)
        self.policy_switch = PolicySwitch(store, self.scheduler, self.lock, metrics)
        self.policy_watcher = (
            PolicyWatcher(
                policy_path,
                self.policy_switch.set_policy,
                metrics.policy_refused,
                offered=self.policy_switch.offered_resources,
            )
            if policy_path
            else None
        )
        metrics.policy_loaded(policy)
        self._threads: list[threading.Thread] = []
        patcher = patcher or LogPatcher()
        self.recorder = PlanRecorder(patcher)
        leadership = leadership or AlwaysLeader()
        on_error = metrics.periodic_error
        self.reports = Reports(store, self.scheduler, self.lock, metrics, clock)
        self.readiness = Readiness(
            self.reflectors,
            preloaded=preloaded,
            stale_after=stale_after,
            on_whole=lambda: self.periodic.adopt_at_start(),
        )
        self.lifecycle_io = LifecycleIO(
            self.scheduler, self.lock, metrics, clock, gpu_use, requeue_store
        )
        self.history_io = HistoryIO(self.scheduler, self.lock, metrics, history_store, clock)
        self.periodic = PeriodicPass(
            lifecycle_io=self.lifecycle_io,
            history_io=self.history_io,
            store=store,
            scheduler=self.scheduler,
            lock=self.lock,
            clock=clock,
            readiness=self.readiness,
            recorder=self.recorder,
            evictions=Evictions(
                evictor or LogEvictor(),
                self.recorder,
                scheduler=self.scheduler,
                store=store,
                lock=self.lock,
                metrics=metrics,
                clock=clock,
                on_error=on_error,
            ),
            suspensions=Suspensions(
                suspender or LogSuspender(),
                scheduler=self.scheduler,
                lock=self.lock,
                metrics=metrics,
                on_error=on_error,
            ),
            events=events or LogEventRecorder(),
            metrics=metrics,
            leading=leadership.last_known,
            publish=self.reports.publish,
            on_error=on_error,
        )
        self.kicker = Kicker(
            self.periodic.kick_candidates,
            patcher,
            leadership,
            kick_interval,
            on_kick=lambda n: metrics.kicks.inc(n),
            after=self.periodic.tell_untold,
            every=self.periodic.every,
            on_lead=self.periodic.lead_taken,
            on_error=on_error,
        )
        metrics.watch_cache(store.counts, self.readiness.contacts, stale=self.staleness)
        metrics.watch_gangs(self.reports.gang_counts)
        metrics.watch_queues(self.reports.queue_metrics)
        metrics.watch_pools(self.reports.pool_figures)
        metrics.watch_leader(self.leading)

    def leading(self) -> bool:
        return self.kicker.leadership.last_known()

    def staleness(self) -> str:
        return self.readiness.staleness()

    def ready(self) -> tuple[bool, str]:
        """Readiness (`readiness.py`), its detail telling when GPU use or the requeue records
        could not be read: never a reason to fail it, as only lifecycle rules wait (they act on
        no job meanwhile) while scheduling goes on, and a replica whose pod is not ready cannot
        be rolled out past nor fail over to."""
        ready, reason = self.readiness.ready()
        problem = self.lifecycle_io.problem
        if problem:
            reason += f"; GPU use not read, no job is found idle meanwhile: {problem}"
        paused = self.lifecycle_io.paused()
        if paused:
            reason += f"; lifecycle rules paused: {paused}"
        lost = self.history_io.lost()
        if lost:
            reason += f"; {lost}"
        return ready, reason

    def status_figures(self) -> dict[str, Any]:
        """What `gangplank status` shows: the decision state (`reports.py`), and under `paused`
        the rules that act on no job now, with why."""
        paused = {"lifecycle": self.lifecycle_io.paused(), "fair order": self.history_io.lost()}
        return {**self.reports.status_figures(), "paused": {k: v for k, v in paused.items() if v}}

    def restore_plans(self) -> None:
        """What earlier processes kept, back before a decision: the plans recorded on pods, and
        the requeue records (called by filter and preempt before they decide)."""
        self.periodic.restore_plans()
        self.periodic.read_requeues(asked=True)

    def publish(self) -> None:
        self.reports.publish()

    def start(self) -> None:
        for reflector in self.reflectors:
            thread = threading.Thread(
                target=reflector.run, name=f"watch-{reflector.kind}", daemon=True
            )
            thread.start()
            self._threads.append(thread)
        self.kicker.start()
        self.lock.start_watchdog()
        self.gc_pauses.install()
        if self.policy_watcher is not None:
            self.policy_watcher.start()

    def stop(self, timeout: float = 2.0) -> None:
        self.kicker.stop()
        self.recorder.close()
        self.lock.stop_watchdog()
        self.gc_pauses.remove()
        if self.policy_watcher is not None:
            self.policy_watcher.stop()
        for reflector in self.reflectors:
            reflector.stop()
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))


def build_runtime(settings: Settings, metrics: Metrics | None = None) -> Runtime:
    metrics = metrics or Metrics()
    store = ClusterStore()
    config = GangConfig(
        reservation_seconds=settings.reservation_seconds, hold_seconds=settings.hold_seconds
    )
    policy: Policy | None = None
    if settings.policy and Path(settings.policy).exists():
        policy = load_policy(settings.policy)
        log_warnings(policy)
    elif settings.policy:
        log.warning("no policy at %s yet: running without queues until it appears", settings.policy)
    queues: dict[str, Any] = {
        "policy": policy,
        "policy_path": settings.policy,
        "scheduler_names": settings.scheduler_name_set,
    }
    if settings.cluster_file:
        counts = load_cluster_file(Path(settings.cluster_file), store)
        log.info(
            "serving the cluster view in %s: %s",
            settings.cluster_file,
            ", ".join(f"{n} {k}" for k, n in counts.items()),
        )
        return Runtime(
            store,
            StoreBinder(store),
            metrics,
            preloaded=True,
            config=config,
            gpu_use=gpu_use_reader(settings),
            **queues,
        )
    from kubernetes import client

    watch_client, bind_client = api_clients(settings)
    evictor = ApiEvictor(client.CoreV1Api(bind_client), custom=client.CustomObjectsApi(bind_client))
    lease = f", the scheduler's Lease {settings.leader_lease}" if settings.leader_lease else ""
    log.info(
        "gangplank's namespace is %s (from %s): requeue records in ConfigMap %s, usage history "
        "in %s%s",
        settings.namespace.name,
        settings.namespace.source,
        settings.requeue_configmap,
        settings.usage_history_configmap,
        lease,
    )
    leadership: Leadership = AlwaysLeader()
    if settings.leader_lease:
        namespace, name = settings.leader_lease.split("/", 1)
        leadership = LeaseLeadership(
            client.CoordinationV1Api(bind_client),
            namespace,
            name,
            settings.identity or default_identity(),
        )
    return Runtime(
        store,
        ApiBinder(client.CoreV1Api(bind_client)),
        metrics,
        build_reflectors(store, watch_client, metrics, settings),
        config=config,
        patcher=ApiPatcher(client.CoreV1Api(bind_client)),
        leadership=leadership,
        evictor=evictor,
        suspender=ApiSuspender(
            client.CoreV1Api(bind_client), client.CustomObjectsApi(bind_client), evictor
        ),
        events=ApiEventRecorder(client.CoreV1Api(bind_client)),
        stale_after=settings.stale_after,
        bind_planned=settings.bind_planned_members,
        gpu_use=gpu_use_reader(settings),
        requeue_store=requeue_store(settings, client.CoreV1Api(bind_client)),
        history_store=history_store(settings, client.CoreV1Api(bind_client)),
        **queues,
    )


def gpu_use_reader(settings: Settings) -> UseReader | None:
    """The Prometheus reader of GPU use (`--prometheus-url`; None: idle GPUs are not measured)."""
    if not settings.prometheus_url:
        return None
    return GpuUseReader(
        settings.prometheus_url,
        settings.gpu_util_metric,
        settings.gpu_util_namespace_label,
        settings.gpu_util_pod_label,
    )


def requeue_store(settings: Settings, core: Any) -> RecordStore:
    """Where requeue records are kept: the ConfigMap `--requeue-configmap` names."""
    namespace, name = settings.requeue_configmap.split("/", 1)
    return RequeueStore(core, namespace, name)


def history_store(settings: Settings, core: Any) -> RecordStore:
    """Where the queues' usage history is kept: the ConfigMap `--usage-history-configmap` names."""
    namespace, name = settings.usage_history_configmap_ref
    return RequeueStore(
        core, namespace, name, what="usage history", flag="--usage-history-configmap"
    )
