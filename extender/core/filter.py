"""Filter: which of the nodes kube-scheduler proposes may take the pod.

Today no policy rejects a node for a known pod; what is decided here is the rule for nodes the
cache has not seen yet: a pod gangplank accounts for (queue or gang) cannot be placed on a node it
knows nothing about, so that node fails as resolvable ("retry later"); any other pod passes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from extender.core.model import PodInfo, Snapshot
from extender.core.workload import is_managed


@dataclass(slots=True)
class FilterResult:
    """The answer for one pod: nodes kept, and the reason for every node dropped.

    `failed`: preemption on that node might help. `unresolvable`: it will not.
    """

    passed: list[str]
    failed: dict[str, str] = field(default_factory=dict)
    unresolvable: dict[str, str] = field(default_factory=dict)


def decide_filter(snapshot: Snapshot, pod: PodInfo, node_names: Sequence[str]) -> FilterResult:
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
