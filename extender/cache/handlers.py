"""Turn list results and watch events of each kind into store updates.

An object gangplank cannot read (it never should happen with objects the API server validated) is
logged with its name and skipped; it never stops the watch.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Generic, TypeVar

import orjson

from extender.cache import pod_lines
from extender.cache.pod_memo import PodMemo
from extender.cache.store import ClusterStore
from extender.core.model.snapshot import PodInfo
from extender.kube.convert import (
    ConversionError,
    job_from_api,
    namespace_from_api,
    node_from_api,
    pod_group_from_api,
    priority_class_from_api,
    pytorch_job_from_api,
)

# Workload kinds whose objects the cache holds (custom resources, optional like the PodGroups):
# handler kind -> (group, version, plural)
WORKLOAD_KINDS = {"pytorchjobs": ("kubeflow.org", "v1", "pytorchjobs")}

YIELD_EVERY = 1024  # listed objects converted between two chances for the verbs to run

# PodGroup kinds gangplank understands: handler kind -> (source, group, version, plural)
POD_GROUP_KINDS = {
    "volcano-podgroups": ("volcano", "scheduling.volcano.sh", "v1beta1", "podgroups"),
    "coscheduling-podgroups": ("coscheduling", "scheduling.x-k8s.io", "v1alpha1", "podgroups"),
    # Kubernetes' own, served from 1.36 when the GenericWorkload feature gate is on.
    "native-podgroups": ("native", "scheduling.k8s.io", "v1alpha2", "podgroups"),
}

log = logging.getLogger("gangplank.cache")

T = TypeVar("T")


@dataclass(frozen=True)
class KindHandler(Generic[T]):
    """Converts objects of one kind and hands them to the store's upsert/delete/replace."""

    kind: str
    convert: Callable[[Any], T]
    upsert: Callable[[T], None]
    delete: Callable[[T], None]
    replace_all: Callable[[Iterable[T]], None]

    def _convert(
        self, obj: Mapping[str, Any], convert: Callable[[Any], T] | None = None
    ) -> T | None:
        try:
            return (convert or self.convert)(obj)
        except ConversionError as err:
            meta = obj.get("metadata") if isinstance(obj, Mapping) else None
            name = meta.get("name") if isinstance(meta, Mapping) else "?"
            log.warning("%s %s skipped: %s", self.kind, name, err)
            return None

    def replace(self, items: Sequence[Mapping[str, Any]]) -> None:
        converted = []
        for count, obj in enumerate(items, 1):
            item = self._convert(obj)
            if item is not None:
                converted.append(item)
            if not count % YIELD_EVERY:
                time.sleep(0)  # let the verbs run meanwhile (the gevent worker: see reflector)
        self.replace_all(converted)

    def apply(self, event_type: str, obj: Mapping[str, Any]) -> None:
        converted = self._convert(obj)
        if converted is None:
            return
        self._store(event_type, converted)

    def _store(self, event_type: str, converted: T) -> None:
        if event_type == "DELETED":
            self.delete(converted)
        else:
            self.upsert(converted)

    def apply_line(self, line: bytes) -> tuple[str, str | None] | None:
        """Apply a watch event straight from its JSON line and give back its type and
        resourceVersion; None: the reflector parses the line and calls `apply` (every kind but
        pods, whose events are many)."""
        return None


@dataclass(frozen=True)
class PodHandler(KindHandler[PodInfo]):
    """Pods go through a PodMemo (most pod events change nothing gangplank reads), and their
    watch lines are read without being parsed in full where the memo allows (pod_lines)."""

    memo: PodMemo = field(default_factory=PodMemo)

    def apply_line(self, line: bytes) -> tuple[str, str | None] | None:
        event = pod_lines.read(line)
        if event is None:
            return None
        if event.type == "BOOKMARK":
            return event.type, event.version
        reused = self.memo.reuse(event)
        if reused is None:
            try:
                obj = orjson.loads(line)["object"]
            except (orjson.JSONDecodeError, TypeError, KeyError):
                return None
            pod = self._convert(obj, partial(self.memo.convert, quick=event.quick))
            if pod is not None:
                self._store(event.type, pod)
        elif reused[1] or event.type == "DELETED":
            self._store(event.type, reused[0])
        # else: the very pod kept, which the store holds (most status-only events)
        return event.type, event.version


def _pod_handler(store: ClusterStore) -> PodHandler:
    memo = PodMemo()

    def delete(pod: PodInfo) -> None:
        memo.forget(pod)
        store.delete_pod(pod)

    def replace_all(pods: Iterable[PodInfo]) -> None:
        listed = list(pods)
        memo.keep_only(listed)
        store.replace_pods(listed)

    return PodHandler("pods", memo.convert, store.upsert_pod, delete, replace_all, memo)


def handlers_for(store: ClusterStore) -> dict[str, KindHandler[Any]]:
    """One handler per watched kind, keyed by the kind's plural name."""
    handlers: dict[str, KindHandler[Any]] = {
        "nodes": KindHandler(
            "nodes",
            node_from_api,
            store.upsert_node,
            lambda node: store.delete_node(node.name),
            store.replace_nodes,
        ),
        "pods": _pod_handler(store),
        "namespaces": KindHandler(
            "namespaces",
            namespace_from_api,
            lambda item: store.upsert_namespace(*item),
            lambda item: store.delete_namespace(item[0]),
            store.replace_namespaces,
        ),
        "priorityclasses": KindHandler(
            "priorityclasses",
            priority_class_from_api,
            lambda item: store.upsert_priority_class(*item),
            lambda item: store.delete_priority_class(item[0]),
            store.replace_priority_classes,
        ),
        "jobs": KindHandler(
            "jobs", job_from_api, store.upsert_job, store.delete_job, store.replace_jobs
        ),
    }
    handlers["pytorchjobs"] = KindHandler(
        "pytorchjobs",
        pytorch_job_from_api,
        store.upsert_pytorch_job,
        store.delete_pytorch_job,
        store.replace_pytorch_jobs,
    )
    for kind, (source, *_) in POD_GROUP_KINDS.items():
        handlers[kind] = KindHandler(
            kind,
            partial(pod_group_from_api, source=source),
            store.upsert_pod_group,
            store.delete_pod_group,
            partial(store.replace_pod_groups, source),
        )
    return handlers
