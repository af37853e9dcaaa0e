"""The connection to the API server: its clients, and the reflectors that list and watch each
kind the cache holds (`cache/reflector.py`) into the store."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from extender.cache.handlers import POD_GROUP_KINDS, WORKLOAD_KINDS, handlers_for
from extender.cache.reflector import Reflector
from extender.cache.store import ClusterStore
from extender.observe.metrics import Metrics
from extender.service.settings import Settings


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
    for kind, (group, version, plural) in WORKLOAD_KINDS.items():
        calls[kind] = partial(custom.list_cluster_custom_object, group, version, plural)
    return [
        Reflector(
            kind,
            call,
            handlers[kind],
            observer=metrics,
            watch_timeout=settings.watch_timeout,
            read_timeout=settings.read_timeout,
            optional=kind in POD_GROUP_KINDS or kind in WORKLOAD_KINDS,
        )
        for kind, call in calls.items()
    ]
