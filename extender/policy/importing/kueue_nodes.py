"""What Kueue says about nodes: a ResourceFlavor's nodeLabels, nodeTaints and tolerations (Kueue
gives them to the pods it admits on the flavor; gangplank does not, so they are named with what
to do instead), and a Topology's levels (Topology Aware Scheduling) as the policy's
`topology.tiers`, narrowest first."""

from __future__ import annotations

from typing import Any

from extender.core.placement.topology import DEFAULT_TIERS
from extender.policy.importing.result import Imported, Manifest, dns, unmapped

PRODUCT = "nvidia.com/gpu.product"  # GPU feature discovery's label of the GPU model
FLAVOR_KEYS = {"nodeLabels", "nodeTaints", "tolerations", "topologyName"}
TOPOLOGY_KEYS = {"levels"}
# What a flavor's tolerations and taints did in Kueue, and what is left of it.
TAINTS = {
    "tolerations": (
        "no longer reach pods (Kueue added them to the pods it admitted on this flavor): add them "
        "to the workloads' pod templates"
    ),
    "nodeTaints": (
        "not checked at admission (Kueue admitted on this flavor only workloads that tolerate "
        "them); kube-scheduler still keeps pods off nodes with those taints"
    ),
}
PREFIXES = ("gce-topology-", "topology-", "network-")  # left off a label to name its tier


def _taint(raw: Any) -> str:
    if not isinstance(raw, dict):
        return str(raw)
    key = str(raw.get("key", "*"))
    value = f"={raw['value']}" if raw.get("value") else ""
    operator = f" {raw['operator']}" if raw.get("operator") else ""
    effect = f" {raw['effect']}" if raw.get("effect") else ""
    return f"{key}{value}{operator}{effect}"


def _flavor(obj: Manifest, out: Imported) -> None:
    labels = obj.spec.get("nodeLabels") or {}
    if labels:
        written = ", ".join(f"{k}={v}" for k, v in labels.items())
        product = labels.get(PRODUCT)
        model = f", or the annotation gangplank.io/gpu-product: {product}" if product else ""
        out.notes.append(
            f"{obj.where}: nodeLabels {written} no longer steer pods (Kueue gave them as a "
            "nodeSelector to the pods it admitted on this flavor): give the workloads a "
            f"nodeSelector or node affinity on them{model} (a gangplank policy has no node rules)"
        )
    for key, consequence in TAINTS.items():
        given = obj.spec.get(key) or []
        if given:
            out.notes.append(
                f"{obj.where}: {key} {', '.join(_taint(t) for t in given)} {consequence}"
            )
    unmapped(obj, FLAVOR_KEYS, out)


def _tier_name(label: str, taken: set[str]) -> str:
    """A tier's name for a node label: gangplank's own tier that reads it, else the label's
    last part (`cloud.provider.com/topology-rack` -> rack)."""
    name = next((t.name for t in DEFAULT_TIERS if label in t.labels), "")
    if not name:
        name = label.rsplit("/", 1)[-1]
        for prefix in PREFIXES:
            name = name.removeprefix(prefix)
        name = dns(name)
    unique, n = name, 2
    while unique in taken:
        unique, n = f"{name}-{n}", n + 1
    taken.add(unique)
    return unique


def _topology(obj: Manifest, out: Imported) -> None:
    labels = [
        str(level.get("nodeLabel"))
        for level in obj.spec.get("levels") or []
        if isinstance(level, dict) and level.get("nodeLabel")
    ]
    if not labels:
        out.notes.append(f"{obj.where}: no levels; gangplank's default tiers are kept")
        return
    taken: set[str] = set()
    tiers: list[dict[str, Any]] = [
        {"name": _tier_name(label, taken), "labels": [label]} for label in reversed(labels)
    ]
    out.topology = {"tiers": tiers}
    out.mapped.append(
        f"{obj.where}: levels -> topology.tiers {', '.join(t['name'] for t in tiers)} "
        "(narrowest first, in place of gangplank's default tiers; Kueue's "
        "podset-required-topology and podset-preferred-topology annotations name these node "
        "labels and are read as they are)"
    )
    unmapped(obj, TOPOLOGY_KEYS, out)


def import_nodes(objects: list[Manifest], out: Imported) -> None:
    """ResourceFlavors and Topologies. A policy has one set of tiers: the Topology the first
    ResourceFlavor names (else the first one) is mapped, any other is noted."""
    flavors = [o for o in objects if o.kind == "ResourceFlavor"]
    for obj in flavors:
        _flavor(obj, out)
    topologies = [o for o in objects if o.kind == "Topology"]
    named = [str(f.spec.get("topologyName")) for f in flavors if f.spec.get("topologyName")]
    chosen = next((t for t in topologies if t.name in named), topologies[0] if topologies else None)
    if chosen is None:
        return
    _topology(chosen, out)
    for other in topologies:
        if other is not chosen:
            out.notes.append(
                f"{other.where}: not mapped (a gangplank policy has one set of tiers: those of "
                f"{chosen.where})"
            )
