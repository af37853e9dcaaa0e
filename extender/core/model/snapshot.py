"""The core's view of the cluster: immutable pods, nodes and the snapshot that holds them.

These are built from API objects in exactly one place (`extender.kube.convert`); the core never sees
raw API JSON.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TypeVar, dataclass_transform

from extender.core.model.resources import GPU, Resources

# A node's free GPUs, CPU and memory as placement reads them, a plain tuple so that nodes in the
# same state share every figure: (gpu model, free cpu milli, free memory MiB, free milli-GPU of
# each GPU with some free, largest first). See `placement.fragmentation`.
GpuState = tuple[str, int, int, tuple[int, ...]]

TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})
_R = TypeVar("_R")


@dataclass_transform(frozen_default=True, field_specifiers=(field,))
def record(cls: type[_R]) -> type[_R]:
    """A frozen dataclass with slots, compared by identity, for the records made by the tens of
    thousands (pods: at every watch event that changes one; nodes: at every snapshot after a
    change). Frozen to the type checker (mypy refuses any assignment to a field), but built
    without frozen's run-time guard: that guard sets each field through object.__setattr__,
    which made building a PodInfo cost 8.1 us instead of 0.8 (19 fields, measured in one run)."""
    return dataclass(slots=True, eq=False)(cls)


@dataclass(frozen=True, slots=True)
class Owner:
    """The controller that owns a pod (its `ownerReferences` entry with `controller: true`)."""

    kind: str
    name: str
    uid: str
    api_version: str = ""  # e.g. batch/v1: which workload kind it is (and how it is suspended)


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


@dataclass(frozen=True, slots=True)
class Requirement:
    """One `matchExpressions` entry of a required node affinity term."""

    key: str
    operator: str  # In, NotIn, Exists, DoesNotExist, Gt, Lt
    values: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    """One `nodeSelectorTerms` entry: all its requirements must hold (terms are ORed).

    `fields` are `matchFields` requirements; the only field Kubernetes supports is
    `metadata.name`, so their key is ignored and they test the node name.
    """

    labels: tuple[Requirement, ...] = ()
    fields: tuple[Requirement, ...] = ()


@record
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
    affinity: tuple[AffinityTerm, ...] = ()  # required node affinity; empty = any node
    deleting: bool = False
    started: float = 0.0  # status.startTime (0: not started)
    job: str = ""  # `gang.job_key`, worked out once when converted ("": work it out)
    restarts: int = 0  # container restarts (status.containerStatuses[].restartCount, summed)
    ready: bool = False  # the pod's `Ready` condition is "True"
    # The first container (init containers first) waiting with a reason, e.g. ImagePullBackOff.
    waiting_reason: str = ""
    # The PersistentVolumeClaims its volumes name (`spec.volumes[].persistentVolumeClaim`).
    claims: tuple[str, ...] = ()
    local_storage: bool = False  # an emptyDir or hostPath volume: data a move would lose
    # kube-scheduler's own bind cycle has work for it: volumes of claims to bind (a
    # WaitForFirstConsumer claim is bound there), DRA claims to allocate. Only kube-scheduler binds
    # it (`service/plan_binds.py` leaves it alone).
    needs_bind_cycle: bool = False

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def terminal(self) -> bool:
        return self.phase in TERMINAL_PHASES

    @property
    def active(self) -> bool:
        """Neither finished nor being deleted: the pod still counts as a gang member."""
        return not self.terminal and not self.deleting

    @property
    def holds_resources(self) -> bool:
        """Whether the pod counts against its node (bound and not finished)."""
        return self.node_name is not None and not self.terminal

    def gpu_seconds(self, now: float) -> float:
        """GPU-seconds it has run by `now` (0 before it started)."""
        return self.requests.get(GPU, 0) * max(0.0, now - (self.started or now))


@record
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


@dataclass(frozen=True, slots=True)
class PodGroupInfo:
    """A Volcano, coscheduling or native (`scheduling.k8s.io`) PodGroup: how many members its
    gang needs, and for the native kind where it must run and how much it matters."""

    source: str  # "volcano", "coscheduling" or "native"
    namespace: str
    name: str
    min_member: object  # as written; validated where the gang is resolved
    timeout_seconds: int | None = None
    gang: bool = True  # False: the native `basic` policy, each pod on its own
    topology: tuple[str, ...] = ()  # required topology label keys (native)
    priority: int | None = None  # native `priority`, else from `priority_class`
    priority_class: str = ""

    @property
    def key(self) -> str:
        """The key of its gang (`gang.group_key` of its pods)."""
        return f"{self.source}:{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class JobInfo:
    """A batch/v1 Job: its pods form a gang of `parallelism` when they carry a queue label."""

    namespace: str
    name: str
    parallelism: int | None
    completions: int | None = None
    indexed: bool = False  # completionMode Indexed: its pods carry a completion index
    min_parallelism: str | None = None  # Kueue's job-min-parallelism annotation, as written
    shrunk_from: int = 0  # its size before gangplank made it smaller (0: it did not)
    kueue: bool = False  # Kueue manages it (label kueue.x-k8s.io/queue-name on the Job)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class PyTorchJobInfo:
    """A Kubeflow PyTorchJob (kubeflow.org/v1): its replicas, and its `elasticPolicy` bounds
    (None when it has no elastic policy, or the policy leaves the bound out)."""

    namespace: str
    name: str
    workers: int  # spec.pytorchReplicaSpecs.Worker.replicas
    masters: int = 0  # spec.pytorchReplicaSpecs.Master.replicas
    min_replicas: int | None = None
    max_replicas: int | None = None
    elastic: bool = False  # it has an elasticPolicy
    shrunk_from: int = 0  # its Worker replicas before gangplank made it smaller (0: it did not)
    kueue: bool = False  # Kueue manages it (label kueue.x-k8s.io/queue-name on the PyTorchJob)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True, eq=False)
class Snapshot:
    """A consistent view of the cached cluster at one moment; never changes once made."""

    nodes: Mapping[str, NodeInfo]
    # Each node's free GPUs, CPU and memory as placement scores read them (`scoring.node_state`),
    # kept by the store so that scoring 5,000 nodes is one lookup each: node -> state id, and the
    # states by id (ids mean the same state within one `state_epoch`). Empty: work them out.
    node_states: Mapping[str, int] = field(default_factory=dict)
    states: Mapping[int, GpuState] = field(default_factory=dict)
    state_epoch: int = 0
    # Bumped by the store whenever some node's state id changes or nodes come or go: equal
    # versions (of one store and epoch) mean every node is in the same state. -1: not kept.
    states_version: int = -1
    # The last changes of a node's state id, oldest first: (the version it made, node). Nodes
    # that came or went are not in it (their versions are): a reader that sees a gap starts over.
    state_changes: tuple[tuple[int, str], ...] = ()
    namespaces: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    priority_classes: Mapping[str, int] = field(default_factory=dict)
    generation: int = 0
    # Pods by gang key (`gang.group_key`), bound or not, finished ones included.
    groups: Mapping[str, tuple[PodInfo, ...]] = field(default_factory=dict)
    pod_groups: Mapping[str, PodGroupInfo] = field(default_factory=dict)  # "source:ns/name"
    jobs: Mapping[str, JobInfo] = field(default_factory=dict)  # "ns/name"
    pytorch_jobs: Mapping[str, PyTorchJobInfo] = field(default_factory=dict)  # "ns/name"
    # For quota, by (queue label value or "", namespace) — see `workload.queue_key`:
    # requests of pods that hold resources, and the pods still waiting for a node.
    queue_usage: Mapping[tuple[str, str], Resources] = field(default_factory=dict)
    queue_pending: Mapping[tuple[str, str], tuple[PodInfo, ...]] = field(default_factory=dict)
    # The lowest priority among the pods holding resources, by the same key, so that preemption
    # knows without reading a pod whether anything of lower priority runs. None: not kept.
    queue_floor: Mapping[tuple[str, str], int] | None = None
    # The last few changes of those groups: (generation before, generation after, keys changed),
    # oldest first, so that a reader that saw an earlier snapshot looks only at what changed.
    queue_changes: tuple[tuple[int, int, frozenset[tuple[str, str]]], ...] = ()
    origin: int = 0  # which store made it: generations compare only within one store
    # Bumped by the store whenever a node's allocation or the set of nodes changes (a pod bound,
    # finished or gone; a node added): pods merely created leave it alone. -1: not kept.
    capacity_generation: int = -1
    # Bumped by the store only when some node's free capacity grows (a pod finished or gone, a
    # node added or given more): binds alone leave it alone. -1: not kept.
    freed_generation: int = -1
    # Bumped by the store when nodes come or go or change labels, taints, cordon or allocatable
    # (what decides which pods may run on them, and how many at most): -1, not kept.
    node_generation: int = -1
    # Node names by the GPUs they have free (allocatable minus requested), kept by the store so
    # that a plan reads only nodes with room for a member (`core.candidates`). None: not kept.
    by_free_gpus: Mapping[int, frozenset[str]] | None = None
    # Totals over schedulable (not cordoned) nodes.
    capacity: Resources = field(default_factory=dict)
    allocated: Resources = field(default_factory=dict)
