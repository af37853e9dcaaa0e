"""The running parts around the core: the store, how it is fed, the binder, the metrics.

`Runtime.start()` must run in the gunicorn worker (after the fork): it starts the watch threads.
"""

from __future__ import annotations

import gc
import logging
import threading
import time
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from typing import Any

from extender.cache.handlers import POD_GROUP_KINDS, handlers_for
from extender.cache.reflector import Reflector
from extender.cache.static import load_cluster_file
from extender.cache.store import ClusterStore
from extender.core.coordinator import Coordinator
from extender.core.gangs.gang_scheduler import GangConfig, GangScheduler
from extender.core.model.notices import Notice
from extender.core.model.snapshot import Snapshot
from extender.core.placement.scoring import mix_of
from extender.core.preemption.preemption import Eviction
from extender.core.queues.policy import Policy
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
from extender.kube.binder import ApiBinder, Binder, StoreBinder
from extender.kube.events import ApiEventRecorder, EventRecorder, LogEventRecorder
from extender.kube.evictor import ApiEvictor, Evictor, LogEvictor
from extender.kube.leader import AlwaysLeader, Leadership, LeaseLeadership, default_identity
from extender.kube.plan_recorder import PlanRecorder, RecordError
from extender.observe.gc_pauses import GcPauses
from extender.observe.metrics import Metrics
from extender.policy.file import PolicyWatcher, load_policy, log_warnings
from extender.service.decision_lock import DecisionLock
from extender.service.kicker import ApiPatcher, Kicker, LogPatcher, Patcher
from extender.service.settings import Settings

REDISCOVER_SECONDS = 3.0  # how often a PodGroup kind that pods wait for is looked for again
LEARN_SECONDS = 60.0  # how often the mix of job shapes placement scores keep room for is counted
# How long after the view is fresh again the pending pods are looked through: the resumed watches
# deliver what happened meanwhile first.
CATCH_UP_SECONDS = 1.0

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
        gangs: GangScheduler | None = None,
        patcher: Patcher | None = None,
        leadership: Leadership | None = None,
        clock: Callable[[], float] = time.time,
        kick_interval: float = 0.5,
        policy: Policy | None = None,
        policy_path: str | None = None,
        scheduler_names: frozenset[str] = frozenset({"gangplank"}),
        evictor: Evictor | None = None,
        events: EventRecorder | None = None,
        stale_after: float = 30.0,
    ) -> None:
        self.store = store
        self.stale_after = stale_after
        self.binder = binder
        self.metrics = metrics
        self.reflectors = list(reflectors)
        self.gangs = gangs or GangScheduler()
        if policy is None and policy_path and Path(policy_path).exists():
            policy = load_policy(policy_path)
        self.scheduler = Coordinator(self.gangs, policy, scheduler_names)
        self.evictor: Evictor = evictor or LogEvictor()
        self.events: EventRecorder = events or LogEventRecorder()
        # One lock for the decision state: a plan is made and read whole. Timed per holder.
        self.lock = DecisionLock(metrics.lock_hold)
        self.gc_pauses = GcPauses(metrics.gc_paused)
        self._learned_at = float("-inf")
        self._untold: list[tuple[list[Notice], Snapshot]] = []
        self.policy_watcher = (
            PolicyWatcher(
                policy_path, self.set_policy, self.policy_refused, offered=self.offered_resources
            )
            if policy_path
            else None
        )
        metrics.policy_loaded(policy)
        self.clock = clock
        self._preloaded = preloaded
        self._heap_settled = False
        self._threads: list[threading.Thread] = []
        patcher = patcher or LogPatcher()
        self.recorder = PlanRecorder(patcher)
        self._plans_restored = False  # the records of earlier processes read back (see below)
        self._listed = False  # every kind listed in full once (see staleness)
        self._waited_for_record: set[str] = set()  # plans whose evictions wait for their record
        self.kicker = Kicker(
            self.kick_candidates,
            patcher,
            leadership or AlwaysLeader(),
            kick_interval,
            on_kick=lambda n: metrics.kicks.inc(n),
            after=self.tell_untold,
            every=self.every_pass,
            on_lead=self.lead_taken,
            on_error=lambda step: metrics.periodic_errors.labels(step).inc(),
        )
        # The core is asked about every pending pod of the profile (`adopt_pending`) once the
        # first full lists are in (before /readyz says ready), at the first pass after the
        # scheduler takes the Lease, and CATCH_UP_SECONDS after the view is fresh again.
        self._adopted_at_start = False
        self._adopt_at = float("inf")  # when next (infinity: not due)
        self._adopted: list[tuple[str, str]] = []  # pods it found may go ahead, to nudge
        self._was_stale = False
        self._rediscovered_at = float("-inf")
        metrics.watch_cache(store.counts, self._contacts, stale=self.staleness)
        metrics.watch_gangs(self.gang_counts)
        metrics.watch_queues(self.queue_metrics)
        metrics.watch_pools(self.pool_figures)
        metrics.watch_leader(self.leading)

    def set_policy(self, policy: Policy | None) -> None:
        """Switch to `policy`. Its book is counted on the current snapshot first, without the
        lock, so the switch itself only catches up with what changed meanwhile."""
        book = None
        if policy is not None:
            book = self.scheduler.new_book(policy)
            book.refresh(self.store.snapshot(), {}, ())
        with self.lock.by("policy reload"):
            old = self.scheduler.set_policy(policy, book)
            if policy is not None:
                self.scheduler.book_for(self.store.snapshot())
        del old  # freed here, not under the lock
        self.metrics.policy_loaded(policy)

    def offered_resources(self) -> set[str]:
        """Resource names the cluster's nodes offer and its pods ask for: a policy naming
        another is warned about when it is loaded."""
        snapshot = self.store.snapshot()
        names = {name for node in snapshot.nodes.values() for name in node.allocatable}
        names.update(name for used in snapshot.queue_usage.values() for name in used)
        names.update(
            name for pods in snapshot.queue_pending.values() for p in pods for name in p.requests
        )
        return names

    def policy_refused(self, message: str) -> None:
        self.metrics.policy_refused(message)

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

    def queue_metrics(self) -> list[dict[str, Any]]:
        with self.lock.by("metrics: queues"):
            return queue_numbers(self.scheduler, self.store.snapshot(), time.time())

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
            rows = describe_pods(listed[:limit], self.gangs.planned_node, self.clock())
        return {"pods": rows, "total": len(listed)}

    def pool_figures(self) -> list[Pool]:
        return pools(self.store.snapshot())  # an immutable snapshot: no lock needed

    def leading(self) -> bool:
        return self.kicker.leadership.last_known()

    def restore_plans(self) -> None:
        """Once the cache holds the whole cluster (after a start, and again on taking the
        Lease): the plans earlier processes recorded, back in the decision state, before any
        decision is made on the view (`core/gangs/plan_record.py`)."""
        if self._plans_restored or not self.synced():
            return
        with self.lock.by("plans restored"):
            if self._plans_restored:
                return
            restored = self.scheduler.restore_plans(self.store.snapshot(), self.clock())
            self._plans_restored = True
        if restored:
            log.info("restored %d plan(s) recorded before this process led", restored)

    def kick_candidates(self) -> list[tuple[str, str]]:
        """The periodic pass (only while this replica's scheduler leads): holds, nudges,
        reclaim planning, and the evictions planned since the last pass."""
        self.restore_plans()
        self.learn_mix()
        stale = self.staleness()
        if self._was_stale and not stale:  # fresh again: what was parked meanwhile may go ahead
            self._adopt_at = min(self._adopt_at, time.monotonic() + CATCH_UP_SECONDS)
        self._was_stale = bool(stale)
        adopt = time.monotonic() >= self._adopt_at and not stale and self.synced()
        with self.lock.by("periodic pass"):
            snapshot = self.store.snapshot()
            self.scheduler.stale = stale
            refs, self._adopted = self._adopted, []
            if adopt:
                self._adopt_at = float("inf")
                refs += self.scheduler.adopt_pending(snapshot, self.clock())
            refs += self.scheduler.kick_candidates(snapshot, self.clock())
            # Evictions planned before the view went stale wait until it is fresh again, and so
            # do they if the replica has learned, since this pass began, that its scheduler no
            # longer leads (the last answer: no API call under the lock).
            keep = stale or not self.leading()
            evictions = [] if keep else self.scheduler.take_evictions()
            notices = self.scheduler.take_notices()
            records = self.scheduler.records_to_write(snapshot)
        try:  # plans made since the last pass are recorded ahead of their first bind
            self.recorder.write(records)
        except RecordError as err:
            log.debug("plans recorded at the next bind instead: %s", err)
        self.carry_out(evictions)
        self._untold.append((notices, snapshot))
        self.publish()
        return refs

    def lead_taken(self) -> None:
        """The scheduler took the Lease: its plans are read back from their records at the next
        pass or call, and the next pass asks the core about every pending pod of the profile
        (`Coordinator.adopt_pending`). kube-scheduler may hold some parked that this
        process never saw filtered, and would retry them only on a cluster event or its
        5-minute flush."""
        self._adopted = []  # found while standing by: looked for again now
        self._adopt_at = time.monotonic()
        self._plans_restored = False  # the plans the replica that led recorded: read back

    def adopt_at_start(self) -> None:
        """Once the first full lists are in: the same for the pods of the cluster as this process
        found it (any of them may have been parked before it started). Done by the first pass or
        readiness check that sees the lists in; its finds are nudged by the first pass that
        leads."""
        if self._adopted_at_start or not self.synced():
            return
        with self.lock.by("pending pods looked through"):
            if not self._adopted_at_start:
                self._adopted_at_start = True
                self._adopted += self.scheduler.adopt_pending(self.store.snapshot(), self.clock())

    def every_pass(self) -> None:
        """Work of every pass, leading or not."""
        self.adopt_at_start()
        self.rediscover()

    def synced(self) -> bool:
        return self._preloaded or all(r.synced.is_set() for r in self.reflectors)

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
            self.tell(notices, snapshot)

    def tell(self, notices: list[Notice], snapshot: Snapshot) -> None:
        """Events on the pods of each job a notice is about: its waiting pods first."""
        for notice in notices:
            if notice.pod is not None:
                pods = [notice.pod]
            else:
                pods = [p for p in snapshot.groups.get(notice.job, ()) if p.active]
                pods.sort(key=lambda p: (p.node_name is not None, p.created, p.name))
            self.metrics.events.inc(self.events.record(notice, pods))

    def carry_out(self, evictions: list[Eviction]) -> None:
        evictions = self._recorded_first(evictions)
        jobs: dict[str, list[Eviction]] = {}
        for eviction in evictions:
            jobs.setdefault(eviction.job, []).append(eviction)
        for pods in jobs.values():
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
            if outcome == "evicted":
                self.metrics.gpu_seconds_lost(
                    first.queue, first.rule, sum(e.gpu_seconds for e in pods)
                )

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
                alive = self.scheduler.has_plan(key)
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

    def gang_counts(self) -> tuple[dict[str, int], int]:
        with self.lock.by("metrics: gangs"):
            return self.gangs.gang_counts(self.store.snapshot()), self.gangs.reserved_pods()

    def publish(self) -> None:
        """Move what the gang scheduler counted into the metrics."""
        with self.lock.by("metrics: outcomes"):
            outcomes = self.gangs.take_outcomes()
            queue_outcomes = self.scheduler.take_queue_outcomes()
            preemption = self.scheduler.preemption.take_outcomes()
        self.metrics.record_gang_outcomes(outcomes)
        self.metrics.record_queue_outcomes(queue_outcomes)
        self.metrics.record_preemption(preemption)

    def _contacts(self) -> list[tuple[str, float, bool]]:
        return [(r.kind, r.last_contact, r.synced.is_set()) for r in self.reflectors]

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
            for r in self.reflectors
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

    def staleness(self) -> str:
        """Why the cached view may not be trusted now, or "" while every watch has been down
        for less than `stale_after` seconds. Before the first full list of every kind it is not
        whole yet: gangs and queued jobs wait (a gang planned on nodes whose pods are not listed
        yet could take room a recorded plan holds)."""
        if not self._listed:
            waiting = [r.kind for r in self.reflectors if not r.synced.is_set()]
            if waiting and not self._preloaded:
                return f"the first full list of {', '.join(waiting)} has not arrived yet"
            self._listed = True
        down = [(r.down_for(), r) for r in self.reflectors if not r.absent]
        down = [(seconds, r) for seconds, r in down if seconds >= self.stale_after]
        if not down:
            return ""
        seconds, worst = max(down, key=lambda d: d[0])
        kinds = ", ".join(sorted(r.kind for _, r in down))
        return (
            f"the API server has not answered the watch of {kinds} for {seconds:.0f} s: "
            f"{worst.down_reason}"
        )

    def ready(self) -> tuple[bool, str]:
        """Ready once every kind has been listed in full (or the view came from a file)."""
        if self._preloaded:
            self._settle_heap()
            self.adopt_at_start()
            return True, "cluster view loaded from file"
        waiting = [r.kind for r in self.reflectors if not r.synced.is_set()]
        if waiting:
            return False, f"waiting for the first full list of {', '.join(waiting)}"
        self._settle_heap()
        self.adopt_at_start()
        stale = self.staleness()
        if stale:
            # Still ready: kube-scheduler keeps calling, so pods outside gangs and queues keep
            # being scheduled; gangs and queued jobs wait (the reason says so) until it is fresh.
            return True, f"cache stale: {stale}"
        return True, "cache synced"

    def _settle_heap(self) -> None:
        """Once the first full lists are in, move the cache's objects out of the garbage
        collector's reach (`gc.freeze`): they live as long as the process, and full collections
        that walk them cost hundreds of milliseconds at 50,000 pods (measured on the preemption
        path). Done once; objects made later are collected as usual."""
        if not self._heap_settled:
            self._heap_settled = True
            gc.collect()
            gc.freeze()


def api_clients(settings: Settings) -> tuple[Any, Any]:
    """Two ApiClients: one for the long-lived watches, one for binds, so binds never queue
    behind a held watch connection."""
    from kubernetes import client, config

    configuration = client.Configuration()
    if settings.in_cluster:
        config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
    else:
        config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=settings.kubeconfig, client_configuration=configuration
        )
    # binds several at once, and a plan's records written 16 at a time (plan_recorder.AT_ONCE)
    configuration.connection_pool_maxsize = 24
    return client.ApiClient(configuration), client.ApiClient(configuration)


def build_reflectors(
    store: ClusterStore, watch_client: Any, metrics: Metrics, settings: Settings | None = None
) -> list[Reflector]:
    from kubernetes import client

    settings = settings or Settings()
    core = client.CoreV1Api(watch_client)
    scheduling = client.SchedulingV1Api(watch_client)
    custom = client.CustomObjectsApi(watch_client)
    handlers = handlers_for(store)
    calls: dict[str, Callable[..., Any]] = {
        "nodes": core.list_node,
        "pods": core.list_pod_for_all_namespaces,
        "namespaces": core.list_namespace,
        "priorityclasses": scheduling.list_priority_class,
        "jobs": client.BatchV1Api(watch_client).list_job_for_all_namespaces,
    }
    for kind, (_, group, version, plural) in POD_GROUP_KINDS.items():
        calls[kind] = partial(custom.list_cluster_custom_object, group, version, plural)
    return [
        Reflector(
            kind,
            call,
            handlers[kind],
            observer=metrics,
            watch_timeout=settings.watch_timeout,
            read_timeout=settings.read_timeout,
            optional=kind in POD_GROUP_KINDS,
        )
        for kind, call in calls.items()
    ]


def build_runtime(settings: Settings, metrics: Metrics | None = None) -> Runtime:
    metrics = metrics or Metrics()
    store = ClusterStore()
    gangs = GangScheduler(
        GangConfig(
            reservation_seconds=settings.reservation_seconds, hold_seconds=settings.hold_seconds
        )
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
        return Runtime(store, StoreBinder(), metrics, preloaded=True, gangs=gangs, **queues)
    from kubernetes import client

    watch_client, bind_client = api_clients(settings)
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
        gangs=gangs,
        patcher=ApiPatcher(client.CoreV1Api(bind_client)),
        leadership=leadership,
        evictor=ApiEvictor(client.CoreV1Api(bind_client)),
        events=ApiEventRecorder(client.CoreV1Api(bind_client)),
        stale_after=settings.stale_after,
        **queues,
    )
