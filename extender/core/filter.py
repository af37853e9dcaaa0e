"""Filter: which of the nodes kube-scheduler proposes may take the pod.

Today no policy rejects a node for a known pod; what is decided here is the rule for nodes the
cache has not seen yet: a pod gangplank accounts for (queue or gang) cannot be placed on a node it
knows nothing about, so that node fails as resolvable ("retry later"); any other pod passes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import filterfalse

from extender.core.model import PodInfo, Snapshot
from extender.core.placement import GPU_PRODUCT, REQUIRE_NODES, why_not_labelled
from extender.core.workload import is_managed


@dataclass(slots=True)
class FilterResult:
    """The answer for one pod: nodes kept, and the reason for every node dropped.

    `failed`: preemption on that node might help. `unresolvable`: it will not.
    """

    passed: list[str]
    failed: dict[str, str] = field(default_factory=dict)
    unresolvable: dict[str, str] = field(default_factory=dict)


def refuse(result: FilterResult, refused: Mapping[str, str]) -> FilterResult:
    """`result` with the `refused` nodes it passed failed for good (with their reasons); refused
    nodes that were not sent are left out. The nodes passed, thousands of them, are filtered in
    C."""
    passed = result.passed
    result.passed = list(filterfalse(refused.__contains__, passed))
    if len(passed) - len(result.passed) != len(refused):  # some refused nodes were not sent
        sent = set(passed)
        refused = {name: why for name, why in refused.items() if name in sent}
    result.unresolvable.update(refused)
    return result


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
