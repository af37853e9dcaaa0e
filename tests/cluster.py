"""A ClusterStore filled from API objects, for tests of the core on a snapshot."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from extender.cache.handlers import handlers_for
from extender.cache.store import ClusterStore
from extender.core.model.snapshot import Snapshot


class Cluster:
    """`Cluster(nodes=[...], pods=[...])`; `.add(kind, obj)`, `.delete(kind, obj)`, `.snap()`."""

    def __init__(
        self,
        *,
        nodes: Sequence[dict[str, Any]] = (),
        pods: Sequence[dict[str, Any]] = (),
        **kinds: list[dict[str, Any]],
    ) -> None:
        self.store = ClusterStore()
        self.handlers = handlers_for(self.store)
        self.handlers["nodes"].replace(list(nodes))
        self.handlers["pods"].replace(list(pods))
        for kind, objects in kinds.items():
            self.handlers[kind.replace("_", "-")].replace(objects)

    def add(self, kind: str, *objects: dict[str, Any]) -> None:
        for obj in objects:
            self.handlers[kind].apply("ADDED", obj)

    def delete(self, kind: str, *objects: dict[str, Any]) -> None:
        for obj in objects:
            self.handlers[kind].apply("DELETED", obj)

    def snap(self) -> Snapshot:
        return self.store.snapshot()
