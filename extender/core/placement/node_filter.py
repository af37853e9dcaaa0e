"""The nodes a pod may use before gangs, queues and reservations have their say.

Two rules: a pod asking for a GPU model or node features (`gangplank.io/gpu-product`,
`gangplank.io/require-nodes`) fails for good on nodes without them; and a pod gangplank accounts
for (queue or gang) cannot be placed on a node the cache has not seen yet, so that node fails as
resolvable ("retry later"). Any other pod passes every node sent.
"""

from __future__ import annotations

from collections.abc import Sequence

from extender.core.model.answers import FilterResult
from extender.core.model.snapshot import PodInfo, Snapshot
from extender.core.model.workload import is_managed
from extender.core.placement.fit import GPU_PRODUCT, REQUIRE_NODES, why_not_labelled


def decide_filter(snapshot: Snapshot, pod: PodInfo, node_names: Sequence[str]) -> FilterResult:
    notes = pod.annotations
    if GPU_PRODUCT in notes or REQUIRE_NODES in notes:
        return _labelled(snapshot, pod, node_names)
    return _known(snapshot, pod, node_names)


def _labelled(snapshot: Snapshot, pod: PodInfo, node_names: Sequence[str]) -> FilterResult:
    """A pod asking for a GPU model or node features: nodes without them fail for good."""
    result = _known(snapshot, pod, node_names)
    nodes = snapshot.nodes
    kept: list[str] = []
    for name in result.passed:
        node = nodes.get(name)
        why = why_not_labelled(pod, node.labels) if node is not None else ""
        if why:
            result.unresolvable[name] = f"pod {pod.key}: {why}"
        else:
            kept.append(name)
    result.passed = kept
    return result


def _known(snapshot: Snapshot, pod: PodInfo, node_names: Sequence[str]) -> FilterResult:
    if not is_managed(pod):
        return FilterResult(passed=list(node_names))
    known = snapshot.nodes
    if all(map(known.__contains__, node_names)):
        return FilterResult(passed=list(node_names))
    unknown = {name for name in node_names if name not in known}
    failed = {
        name: f"pod {pod.key}: node {name} is not in gangplank's cache yet "
        "(just added?); it will be considered once the cache has seen it"
        for name in unknown
    }
    return FilterResult(passed=[n for n in node_names if n not in unknown], failed=failed)
