"""Can this pod go on that node — the checks gangplank must make itself when it plans a whole
gang ahead of kube-scheduler: resources, node selector, required node affinity, taints, cordon.
"""

from __future__ import annotations

from collections.abc import Mapping

from extender.core.model import AffinityTerm, NodeInfo, PodInfo, Requirement, Taint, Toleration
from extender.core.resources import Resources

_BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")
UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")


def tolerates(tolerations: tuple[Toleration, ...], taint: Taint) -> bool:
    for t in tolerations:
        if t.effect and t.effect != taint.effect:
            continue
        if t.operator == "Exists":
            if not t.key or t.key == taint.key:
                return True
        elif t.key == taint.key and t.value == taint.value:
            return True
    return False


def _requirement_holds(req: Requirement, value: str | None) -> bool:
    op = req.operator
    if op == "In":
        return value is not None and value in req.values
    if op == "NotIn":
        return value is None or value not in req.values
    if op == "Exists":
        return value is not None
    if op == "DoesNotExist":
        return value is None
    if op in ("Gt", "Lt") and value is not None and req.values:
        try:
            have, bound = int(value), int(req.values[0])
        except ValueError:
            return False
        return have > bound if op == "Gt" else have < bound
    return False


def _term_holds(term: AffinityTerm, node: NodeInfo) -> bool:
    return all(_requirement_holds(r, node.labels.get(r.key)) for r in term.labels) and all(
        _requirement_holds(r, node.name) for r in term.fields
    )


def why_not_placeable(pod: PodInfo, node: NodeInfo) -> str:
    """ "" when the pod may go on the node (resources aside), else the reason, briefly."""
    labels = node.labels
    for key, value in pod.node_selector.items():
        if labels.get(key) != value:
            return f"node selector {key}={value}"
    if pod.affinity and not any(_term_holds(term, node) for term in pod.affinity):
        return "required node affinity"
    if node.unschedulable and not tolerates(pod.tolerations, UNSCHEDULABLE_TAINT):
        return "node is cordoned"
    for taint in node.taints:
        if taint.effect in _BLOCKING_EFFECTS and not tolerates(pod.tolerations, taint):
            return (
                f"taint {taint.key}={taint.value}:{taint.effect}"
                if taint.value
                else (f"taint {taint.key}:{taint.effect}")
            )
    return ""


def how_many_fit(request: Resources, free: Mapping[str, int]) -> int:
    """How many pods of `request` fit into `free` (every resource requested must fit)."""
    most: int | None = None
    for name, amount in request.items():
        if amount <= 0:
            continue
        fits = free.get(name, 0) // amount
        if fits <= 0:
            return 0
        most = fits if most is None else min(most, fits)
    return most if most is not None else 1_000_000


def fits(request: Resources, free: Mapping[str, int]) -> bool:
    return all(free.get(name, 0) >= amount for name, amount in request.items() if amount > 0)
