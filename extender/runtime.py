"""The running parts around the core: the store, how it is fed, the binder, the metrics.

`Runtime.start()` must run in the gunicorn worker (after the fork): it starts the watch threads.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from extender.binder import ApiBinder, Binder, StoreBinder
from extender.cache.handlers import handlers_for
from extender.cache.reflector import Reflector
from extender.cache.static import load_cluster_file
from extender.cache.store import ClusterStore
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
    ) -> None:
        self.store = store
        self.binder = binder
        self.metrics = metrics
        self.reflectors = list(reflectors)
        self._preloaded = preloaded
        self._threads: list[threading.Thread] = []
        metrics.watch_cache(store.counts, self._contacts)

    def _contacts(self) -> list[tuple[str, float, bool]]:
        return [(r.kind, r.last_contact, r.synced.is_set()) for r in self.reflectors]

    def start(self) -> None:
        for reflector in self.reflectors:
            thread = threading.Thread(
                target=reflector.run, name=f"watch-{reflector.kind}", daemon=True
            )
            thread.start()
            self._threads.append(thread)

    def stop(self, timeout: float = 2.0) -> None:
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
    handlers = handlers_for(store)
    calls: dict[str, Callable[..., Any]] = {
        "nodes": core.list_node,
        "pods": core.list_pod_for_all_namespaces,
        "namespaces": core.list_namespace,
        "priorityclasses": scheduling.list_priority_class,
    }
    return [
        Reflector(
            kind,
            call,
            handlers[kind],
            observer=metrics,
            watch_timeout=settings.watch_timeout,
            read_timeout=settings.read_timeout,
        )
        for kind, call in calls.items()
    ]


def build_runtime(settings: Settings, metrics: Metrics | None = None) -> Runtime:
    metrics = metrics or Metrics()
    store = ClusterStore()
    if settings.cluster_file:
        counts = load_cluster_file(Path(settings.cluster_file), store)
        log.info(
            "serving the cluster view in %s: %s",
            settings.cluster_file,
            ", ".join(f"{n} {k}" for k, n in counts.items()),
        )
        return Runtime(store, StoreBinder(), metrics, preloaded=True)
    from kubernetes import client

    watch_client, bind_client = api_clients(settings)
    return Runtime(
        store,
        ApiBinder(client.CoreV1Api(bind_client)),
        metrics,
        build_reflectors(store, watch_client, metrics, settings),
    )
