"""Can this pod go on that node — the checks gangplank must make itself when it plans a whole
gang ahead of kube-scheduler: resources, node selector, required node affinity, taints, cordon.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache

from extender.core.model.resources import GPU, Resources
from extender.core.model.snapshot import (
    AffinityTerm,
    NodeInfo,
    PodInfo,
    Requirement,
    Taint,
    Toleration,
)

_BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"
GPU_PRODUCT = "gangplank.io/gpu-product"  # models the pod may run on, `|`-separated
REQUIRE_NODES = "gangplank.io/require-nodes"  # a label selector the node must match
PREFER_NODES = "gangplank.io/prefer-nodes"  # a label selector nodes score higher for
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


SelectorTerm = tuple[str, str, str]  # (key, op, value); op one of = != exists !exists


@lru_cache(maxsize=1024)
def parse_selector(text: str) -> tuple[SelectorTerm, ...]:
    """An equality-based label selector as kubectl writes it: `a=b,c!=d,e,!f`.

    Malformed terms are kept as terms no node matches (the reason names them)."""
    terms: list[SelectorTerm] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        if "!=" in part:
            key, value = part.split("!=", 1)
            terms.append((key.strip(), "!=", value.strip()))
        elif "=" in part:
            key, value = part.replace("==", "=").split("=", 1)
            terms.append((key.strip(), "=", value.strip()))
        elif part.startswith("!"):
            terms.append((part[1:].strip(), "!exists", ""))
        else:
            terms.append((part, "exists", ""))
    return tuple(terms)


def selector_misses(terms: tuple[SelectorTerm, ...], labels: Mapping[str, str]) -> str:
    """The first term `labels` do not satisfy, as written ("" when all hold)."""
    for key, op, value in terms:
        have = labels.get(key)
        if (
            (op == "=" and have != value)
            or (op == "!=" and have == value)
            or (op == "exists" and have is None)
            or (op == "!exists" and have is not None)
        ):
            return (
                key if op == "exists" else (f"!{key}" if op == "!exists" else f"{key}{op}{value}")
            )
    return ""


@lru_cache(maxsize=256)
def gpu_product_order(text: str) -> tuple[str, ...]:
    """The models a `gangplank.io/gpu-product` annotation lists, first preferred."""
    return tuple(p.strip() for p in text.split("|") if p.strip())


@lru_cache(maxsize=256)
def gpu_products(text: str) -> frozenset[str]:
    return frozenset(gpu_product_order(text))


def why_not_labelled(pod: PodInfo, labels: Mapping[str, str]) -> str:
    """gangplank's own node requirements of a pod: GPU model and required node features."""
    notes = pod.annotations
    if not notes:
        return ""
    wanted = notes.get(GPU_PRODUCT)
    if wanted is not None:
        models = gpu_products(wanted)
        if models and labels.get(GPU_PRODUCT_LABEL) not in models:
            have = labels.get(GPU_PRODUCT_LABEL, "none")
            return f"GPU model {have} is not {wanted} ({GPU_PRODUCT})"
    required = notes.get(REQUIRE_NODES)
    if required is not None:
        missed = selector_misses(parse_selector(required), labels)
        if missed:
            return f"node lacks {missed} ({REQUIRE_NODES})"
    return ""


def why_not_placeable(pod: PodInfo, node: NodeInfo) -> str:
    """ "" when the pod may go on the node (resources aside), else the reason, briefly."""
    labels = node.labels
    why = why_not_labelled(pod, labels)
    if why:
        return why
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


def too_few_gpus(request: Resources, node: NodeInfo) -> bool:
    """Whether the node cannot hold one pod of `request` for want of GPUs even before anyone's
    reservations are taken off: a quick test that spares planning a busy cluster's full nodes
    the work of `free_for`."""
    gpus = request.get(GPU, 0)
    return gpus > 0 and node.free(GPU) < gpus


def fits(request: Resources, free: Mapping[str, int]) -> bool:
    return all(free.get(name, 0) >= amount for name, amount in request.items() if amount > 0)
