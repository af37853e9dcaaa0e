"""Where a pod's data is: the datasets it reads and the nodes that cache them, tiered.

- A pod names its datasets with `gangplank.io/dataset: <name>[,<name>…]` (annotation, or label
  when no annotation says it; `<namespace>/<name>` for another namespace's), or mounts a PVC:
  Fluid creates, for a Dataset, a PVC of the same name in the same namespace, so a claim
  `<name>` is the Dataset `<namespace>/<name>` when some node carries Fluid's cache label for it.
  No PVC is read: the claim name and the node labels are enough.
- A node caches a dataset when it carries Fluid's label `fluid.io/s-<namespace>-<name>: "true"`
  or gangplank's own `data.gangplank.io/<name>: cached` (any namespace's dataset of that name).
- Locality is tiered like Fluid's: a node that caches the data (rank 0), then a node sharing a
  domain of the narrowest tier above hosts with one that does (rack: 1, block: 2, zone: 3 with the
  default tiers), then the rest. `gangplank.io/dataset-policy: required` makes the data a
  constraint: only nodes that cache it.

The nodes of a dataset and the ranks are worked out once per set of nodes (node labels change
only with `Snapshot.node_generation`); a pod without a dataset or a claim costs two lookups.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

from extender.core.model.snapshot import NodeInfo, PodInfo, Snapshot
from extender.core.placement.topology import (
    DEFAULT_TOPOLOGY,
    HOSTNAME,
    Topology,
    domain_of,
    near_nodes,
)

DATASET = "gangplank.io/dataset"
DATASET_POLICY = "gangplank.io/dataset-policy"
CACHED_PREFIX = "data.gangplank.io/"
CACHED = "cached"
FLUID_PREFIX = "fluid.io/s-"
LIMIT = 256  # datasets remembered per set of nodes (forgotten all at once beyond)


@dataclass(frozen=True, slots=True)
class Dataset:
    namespace: str
    name: str

    def __str__(self) -> str:
        return self.name

    @property
    def labels(self) -> tuple[tuple[str, str], ...]:
        """The node labels (key, value) that say a node caches it."""
        return (
            (f"{FLUID_PREFIX}{self.namespace}-{self.name}", "true"),
            (f"{CACHED_PREFIX}{self.name}", CACHED),
        )


@dataclass(frozen=True, slots=True)
class DataNeed:
    """The datasets a job reads and whether it must run where they are cached."""

    datasets: tuple[Dataset, ...]
    required: bool = False
    problem: str = ""  # a dataset-policy that is neither `required` nor `preferred`


NO_DATA = DataNeed(())


def data_of(pods: Sequence[PodInfo], snapshot: Snapshot | None = None) -> DataNeed:
    """What `pods` (one job) read: the datasets named on them, and their claims that are Fluid
    Datasets on `snapshot` (when given). The first pod that writes a policy sets it."""
    found: dict[Dataset, None] = {}
    policy = ""
    for pod in pods:
        notes, labels = pod.annotations, pod.labels
        text = notes.get(DATASET) or labels.get(DATASET)
        if text:
            for part in text.split(","):
                name = part.strip()
                if name:
                    namespace, _, short = name.rpartition("/")
                    found[Dataset(namespace or pod.namespace, short)] = None
        if snapshot is not None:
            for claim in pod.claims:
                dataset = Dataset(pod.namespace, claim)
                if dataset not in found and cached_on(snapshot, dataset):
                    found[dataset] = None
        if not policy:
            policy = (notes.get(DATASET_POLICY) or labels.get(DATASET_POLICY) or "").strip()
    if not found:
        return NO_DATA
    if policy.lower() not in ("", "preferred", "required"):
        problem = f"{DATASET_POLICY}: {policy!r} must be required or preferred"
        return DataNeed(tuple(found), problem=problem)
    return DataNeed(tuple(found), required=policy.lower() == "required")


def reads_data(pod: PodInfo) -> bool:
    """Whether the pod may read a dataset (cheap: for the hot path)."""
    return bool(pod.claims) or DATASET in pod.annotations or DATASET in pod.labels


def caches(node: NodeInfo, dataset: Dataset) -> bool:
    labels = node.labels
    return any(labels.get(key) == value for key, value in dataset.labels)


_memo: dict[tuple[object, ...], tuple[int, object]] = {}
_memo_lock = threading.Lock()


def _kept(snapshot: Snapshot, key: tuple[object, ...]) -> tuple[tuple[object, ...] | None, object]:
    """The memo's key for `key` on `snapshot` (None: not kept) and what it holds (None: nothing)
    for this set of nodes. A view of some of the store's nodes (a trial of preemption) keeps the
    generation: it is worked out on its own, as `topology.domains` does."""
    if snapshot.node_generation < 0:
        return None, None
    kept = (snapshot.origin, snapshot.node_generation, *key)
    found = _memo.get(kept)
    if found is not None and found[0] == len(snapshot.nodes):
        return kept, found[1]
    return kept, None


def _remember(snapshot: Snapshot, key: tuple[object, ...] | None, value: object) -> None:
    """Keep `value` for the whole set of nodes: the largest set seen for the generation."""
    if key is None:
        return
    count = len(snapshot.nodes)
    with _memo_lock:
        found = _memo.get(key)
        if found is not None and found[0] >= count:
            return
        if len(_memo) >= LIMIT:
            _memo.clear()
        _memo[key] = (count, value)


def cached_on(snapshot: Snapshot, dataset: Dataset) -> tuple[str, ...]:
    """The nodes of `snapshot` that cache `dataset`, by name."""
    key, known = _kept(snapshot, ("cached", dataset))
    if isinstance(known, tuple):
        return known
    names = tuple(sorted(n.name for n in snapshot.nodes.values() if caches(n, dataset)))
    _remember(snapshot, key, names)
    return names


def cached_nodes(snapshot: Snapshot, need: DataNeed) -> frozenset[str]:
    """Nodes that cache every dataset of `need`."""
    sets = [set(cached_on(snapshot, d)) for d in need.datasets]
    return frozenset(set.intersection(*sets)) if sets else frozenset()


def locality(
    snapshot: Snapshot, need: DataNeed, topology: Topology = DEFAULT_TOPOLOGY
) -> dict[str, int]:
    """Rank of each node by closeness to the data: 0 where it is cached, then by tier (see the
    module's docstring); nodes far from every copy are left out (rank `far(topology)`)."""
    key, known = _kept(snapshot, ("rank", need.datasets, topology))
    if isinstance(known, dict):
        return known
    nodes = snapshot.nodes
    ranks: dict[str, int] = {}
    for dataset in need.datasets:
        used = [nodes[name] for name in cached_on(snapshot, dataset) if name in nodes]
        for name, rank in near_nodes(snapshot, used, topology).items():
            ranks[name] = min(rank, ranks.get(name, rank))
    _remember(snapshot, key, ranks)
    return ranks


def far(topology: Topology) -> int:
    """The rank of a node with no copy of the data near it."""
    return len(topology.tiers) + 1


def where_cached(snapshot: Snapshot, need: DataNeed, topology: Topology) -> str:
    """`6 nodes in rack r3`: where the data is, for reasons (the narrowest tier that names it in
    at most three domains)."""
    names = sorted(cached_nodes(snapshot, need))
    count = f"{len(names)} node{'s' if len(names) != 1 else ''}"
    nodes = snapshot.nodes
    for tier in topology.tiers:
        if HOSTNAME in tier.labels:
            continue
        values = sorted({v for n in names if n in nodes and (v := domain_of(nodes[n], tier))})
        if values and len(values) <= 3 and all(domain_of(nodes[n], tier) for n in names):
            return f"{count} in {tier.name} {', '.join(values)}"
    shown = ", ".join(names[:3]) + (", …" if len(names) > 3 else "")
    return f"{count}: {shown}"


def named(need: DataNeed) -> str:
    """`dataset imagenet` / `datasets a, b`, for reasons."""
    names = ", ".join(str(d) for d in need.datasets)
    return f"dataset{'s' if len(need.datasets) != 1 else ''} {names}"


def not_here(need: DataNeed) -> str:
    """The reason a node without the data is refused to a job that requires it."""
    return f"{named(need)} is not cached on this node ({DATASET_POLICY}: required)"
