"""The cluster's topology, from node labels: ordered tiers of domains, narrowest first.

A tier (clique, host, rack, block, zone) is named in the policy with the node labels that give a
node's domain in it, first label present wins, so one policy serves clusters labelled by hand,
by NVIDIA's GPU feature discovery, by GKE or by EKS. Which tier a job needs or prefers is written
on its pods (`gangplank.io/topology: required=rack`, Kueue's podset topology annotations) or on
its native PodGroup (`schedulingConstraints.topology[].key`), as a tier name or a label key.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from extender.core.model.snapshot import NodeInfo, PodInfo, Snapshot

if TYPE_CHECKING:
    from extender.core.placement.budgets import Budget

HOSTNAME = "kubernetes.io/hostname"
TOPOLOGY = "gangplank.io/topology"
KUEUE_REQUIRED = "kueue.x-k8s.io/podset-required-topology"
KUEUE_PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"


@dataclass(frozen=True, slots=True)
class Tier:
    name: str
    labels: tuple[str, ...]  # the first one a node carries names its domain in this tier


DEFAULT_TIERS = (
    Tier("clique", ("nvidia.com/gpu.clique",)),
    Tier("host", (HOSTNAME, "cloud.google.com/gce-topology-host")),
    Tier(
        "rack",
        (
            "network.gangplank.io/rack",
            "cloud.google.com/gce-topology-subblock",
            "topology.k8s.aws/network-node-layer-3",
        ),
    ),
    Tier(
        "block",
        (
            "network.gangplank.io/block",
            "cloud.google.com/gce-topology-block",
            "topology.k8s.aws/network-node-layer-2",
        ),
    ),
    Tier("zone", ("topology.kubernetes.io/zone", "topology.k8s.aws/network-node-layer-1")),
)


@dataclass(frozen=True, eq=False)
class Topology:
    tiers: tuple[Tier, ...] = DEFAULT_TIERS
    budgets: tuple[Budget, ...] = ()  # shared-link budgets of tiers (`budgets.py`)

    @cached_property
    def _by_name(self) -> Mapping[str, int]:
        out: dict[str, int] = {}
        for i, tier in enumerate(self.tiers):
            out.setdefault(tier.name, i)
            for label in tier.labels:
                out.setdefault(label, i)
        return out

    def tier_of(self, name: str) -> Tier | None:
        """The tier a job names, by tier name or by one of its labels; an unknown label key is
        a tier of its own (any node label may bound a job)."""
        if not name:
            return None
        index = self._by_name.get(name)
        if index is not None:
            tier = self.tiers[index]
            return tier if name == tier.name else Tier(name, (name,))
        if name in ("hostname", "node"):
            return self.tier_of("host")
        return Tier(name, (name,)) if "/" in name or "." in name else None

    def tiers_up_to(self, tier: Tier | None) -> tuple[Tier, ...]:
        """The tiers a search walks: all of them, or those no wider than `tier` (itself last)."""
        if tier is None:
            return self.tiers
        if tier in self.tiers:
            return self.tiers[: self.tiers.index(tier) + 1]
        return (tier,)


DEFAULT_TOPOLOGY = Topology()


@dataclass(frozen=True)
class Domains:
    """One tier's domains in a snapshot: each node's, and each domain's nodes in the snapshot's
    order (by name; nodes that carry none of the tier's labels are in neither)."""

    of: Mapping[str, str]
    members: Mapping[str, tuple[str, ...]]
    nodes: int  # how many nodes the snapshot had


DOMAINS_KEPT = 64
_domains: dict[tuple[int, int, Tier], Domains] = {}


def domains(snapshot: Snapshot, tier: Tier) -> Domains:
    """Worked out once per set of nodes (`Snapshot.node_generation`: binds leave it alone), or
    each time for a snapshot that does not keep one. A plan asks for the nodes of a domain
    several times; walking every node for each was most of a plan's time at 4,000 nodes."""
    kept = snapshot.node_generation >= 0
    key = (snapshot.origin, snapshot.node_generation, tier)
    found = _domains.get(key) if kept else None
    if found is not None and found.nodes == len(snapshot.nodes):
        return found
    # A view of some of the store's nodes (a trial of preemption) keeps the generation: it is
    # worked out on its own; what is kept is the whole set, the largest one seen.
    kept = kept and (found is None or len(snapshot.nodes) > found.nodes)
    of: dict[str, str] = {}
    members: dict[str, list[str]] = {}
    for node in snapshot.nodes.values():
        value = domain_of(node, tier)
        if value is not None:
            of[node.name] = value
            members.setdefault(value, []).append(node.name)
    result = Domains(
        of, {value: tuple(names) for value, names in members.items()}, len(snapshot.nodes)
    )
    if kept:
        if len(_domains) >= DOMAINS_KEPT:
            _domains.clear()
        _domains[key] = result
    return result


def domain_of(node: NodeInfo, tier: Tier) -> str | None:
    labels = node.labels
    for label in tier.labels:
        value = labels.get(label)
        if value is not None:
            return value
    return node.name if HOSTNAME in tier.labels else None


@dataclass(frozen=True, slots=True)
class Constraint:
    """Where a gang must (`required`) or should (`preferred`) stay, as written by its owner."""

    required: str = ""
    preferred: str = ""

    @property
    def written(self) -> bool:
        return bool(self.required or self.preferred)


NO_CONSTRAINT = Constraint()


def parse_constraint(text: str) -> tuple[Constraint, str]:
    """`required=rack`, `preferred=block`, both (comma-separated), or a bare tier (required)."""
    required = preferred = ""
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        kind, sep, value = part.partition("=")
        if not sep:
            kind, value = "required", part
        kind, value = kind.strip().lower(), value.strip()
        if not value:
            return NO_CONSTRAINT, f"{TOPOLOGY}: {part!r} names no tier"
        if kind == "required":
            required = value
        elif kind == "preferred":
            preferred = value
        else:
            return (
                NO_CONSTRAINT,
                f"{TOPOLOGY}: {part!r} must be required=<tier> or preferred=<tier>",
            )
    return Constraint(required, preferred), ""


def constraint_of(members: Sequence[PodInfo]) -> tuple[Constraint, str]:
    """The topology a gang's pods ask for (gangplank's annotation first, then Kueue's)."""
    for pod in members:
        notes = pod.annotations
        text = notes.get(TOPOLOGY)
        if text is not None:
            return parse_constraint(text)
        required, preferred = notes.get(KUEUE_REQUIRED, ""), notes.get(KUEUE_PREFERRED, "")
        if required or preferred:
            return Constraint(required.strip(), preferred.strip()), ""
    return NO_CONSTRAINT, ""


def near_members(
    snapshot: Snapshot, bound: Sequence[PodInfo], topology: Topology = DEFAULT_TOPOLOGY
) -> dict[str, int]:
    """Rank nodes by closeness to the gang's running members: their nodes 0, then domains."""
    nodes = snapshot.nodes
    used = [nodes[p.node_name] for p in bound if p.node_name is not None and p.node_name in nodes]
    return near_nodes(snapshot, used, topology)


def near_nodes(
    snapshot: Snapshot, used: Sequence[NodeInfo], topology: Topology = DEFAULT_TOPOLOGY
) -> dict[str, int]:
    """Rank nodes by closeness to `used`: those 0, then the nodes sharing a domain of the first
    tier above hosts, and so on (tier index + 1); the rest are left out."""
    if not used:
        return {}
    rank = {n.name: 0 for n in used}
    for index, tier in enumerate(topology.tiers, start=1):
        if HOSTNAME in tier.labels:
            continue
        values = {v for n in used if (v := domain_of(n, tier)) is not None}
        if not values:
            continue
        for node in snapshot.nodes.values():
            if node.name not in rank and domain_of(node, tier) in values:
                rank[node.name] = index
    return rank
