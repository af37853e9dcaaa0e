"""Which nodes are near a gang's running members, by the topology labels of the nodes."""

from __future__ import annotations

from collections.abc import Sequence

from extender.core.model import PodInfo, Snapshot

# Node labels naming topology domains, narrowest first: a partly bound gang is completed in the
# narrowest domain its running members share where there is room.
DOMAIN_LABELS = (
    "nvidia.com/gpu.clique",
    "network.gangplank.io/rack",
    "network.gangplank.io/block",
    "topology.kubernetes.io/zone",
)


def near_members(snapshot: Snapshot, bound: Sequence[PodInfo]) -> dict[str, int]:
    """Rank nodes by closeness to the gang's running members: their nodes 0, then domains."""
    nodes = snapshot.nodes
    used = [nodes[p.node_name] for p in bound if p.node_name is not None and p.node_name in nodes]
    if not used:
        return {}
    rank = {n.name: 0 for n in used}
    for tier, label in enumerate(DOMAIN_LABELS, start=1):
        values = {n.labels[label] for n in used if label in n.labels}
        if not values:
            continue
        for node in nodes.values():
            if node.name not in rank and node.labels.get(label) in values:
                rank[node.name] = tier
    return rank
