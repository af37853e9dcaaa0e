"""The running parts around the core: the store, how it is fed, the binder, the metrics.

`Runtime.start()` must run in the gunicorn worker (after the fork): it starts the watch threads.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from typing import Any

from extender.binder import ApiBinder, Binder, StoreBinder
from extender.cache.handlers import POD_GROUP_KINDS, handlers_for
from extender.cache.reflector import Reflector
from extender.cache.static import load_cluster_file
from extender.cache.store import ClusterStore
from extender.core.gang_scheduler import GangConfig, GangScheduler
from extender.kicker import (
    AlwaysLeader,
    ApiPatcher,
    Kicker,
    Leadership,
    LeaseLeadership,
    LogPatcher,
    Patcher,
    default_identity,
)
from extender.metrics import Metrics
from extender.settings import Settings

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
    ) -> None:
        self.store = store
        self.binder = binder
        self.metrics = metrics
        self.reflectors = list(reflectors)
        self.gangs = gangs or GangScheduler()
        # One lock for the gang state: a plan is made and read whole.
        self.lock = threading.Lock()
        self.clock = clock
        self._preloaded = preloaded
        self._threads: list[threading.Thread] = []
        self.kicker = Kicker(
            self.kick_candidates,
            patcher or LogPatcher(),
            leadership or AlwaysLeader(),
            kick_interval,
            on_kick=lambda n: metrics.kicks.inc(n),
        )
        metrics.watch_cache(store.counts, self._contacts)
        metrics.watch_gangs(self.gang_counts)

    def kick_candidates(self) -> list[tuple[str, str]]:
        with self.lock:
            refs = self.gangs.kick_candidates(self.store.snapshot(), self.clock())
        self.publish()
        return refs

    def gang_counts(self) -> tuple[dict[str, int], int]:
        with self.lock:
            return self.gangs.gang_counts(self.store.snapshot()), self.gangs.reserved_pods()

    def publish(self) -> None:
        """Move what the gang scheduler counted into the metrics."""
        with self.lock:
            outcomes = self.gangs.take_outcomes()
        self.metrics.record_gang_outcomes(outcomes)

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

    def stop(self, timeout: float = 2.0) -> None:
        self.kicker.stop()
        for reflector in self.reflectors:
            reflector.stop()
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))

    def ready(self) -> tuple[bool, str]:
        """Ready once every kind has been listed in full (or the view came from a file)."""
        if self._preloaded:
            return True, "cluster view loaded from file"
        waiting = [r.kind for r in self.reflectors if not r.synced.is_set()]
        if waiting:
            return False, f"waiting for the first full list of {', '.join(waiting)}"
        return True, "cache synced"


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
    configuration.connection_pool_maxsize = 8
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
    if settings.cluster_file:
        counts = load_cluster_file(Path(settings.cluster_file), store)
        log.info(
            "serving the cluster view in %s: %s",
            settings.cluster_file,
            ", ".join(f"{n} {k}" for k, n in counts.items()),
        )
        return Runtime(store, StoreBinder(), metrics, preloaded=True, gangs=gangs)
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
    )
