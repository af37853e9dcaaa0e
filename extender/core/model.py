"""The core's view of the cluster: immutable pods, nodes and the snapshot that holds them.

These are built from API objects in exactly one place (`extender.convert`); the core never sees
raw API JSON.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from extender.core.resources import Resources

TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})


@dataclass(frozen=True, slots=True)
class Owner:
    """The controller that owns a pod (its `ownerReferences` entry with `controller: true`)."""

    kind: str
    name: str
    uid: str


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str
    operator: str  # "Equal" or "Exists"
    value: str
    effect: str  # "" matches every effect


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str
    effect: str


@dataclass(frozen=True, slots=True, eq=False)
class PodInfo:
    """What gangplank needs to know of one pod."""

    uid: str
    namespace: str
    name: str
    node_name: str | None
    phase: str
    priority: int
    requests: Resources
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    owner: Owner | None = None
    scheduler_name: str = "default-scheduler"
    created: float = 0.0
    node_selector: Mapping[str, str] = field(default_factory=dict)
    tolerations: tuple[Toleration, ...] = ()
    deleting: bool = False

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def terminal(self) -> bool:
        return self.phase in TERMINAL_PHASES

    @property
    def holds_resources(self) -> bool:
        """Whether the pod counts against its node (bound and not finished)."""
        return self.node_name is not None and not self.terminal


@dataclass(frozen=True, slots=True, eq=False)
class NodeInfo:
    """One node: what it offers, what is requested on it, and the pods that request it."""

    name: str
    allocatable: Resources
    requested: Resources
    pods: tuple[PodInfo, ...] = ()
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False

    def free(self, resource: str) -> int:
        return self.allocatable.get(resource, 0) - self.requested.get(resource, 0)


@dataclass(frozen=True, slots=True, eq=False)
class Snapshot:
    """A consistent view of the cached cluster at one moment; never changes once made."""

    nodes: Mapping[str, NodeInfo]
    namespaces: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    priority_classes: Mapping[str, int] = field(default_factory=dict)
    generation: int = 0
