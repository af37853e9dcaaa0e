"""Planning a gang: place every member at once on the snapshot, or say why it cannot be done.

Members with the same requests and constraints are interchangeable ("a shape"); each shape is
placed on the nodes that can take the most of it first (fewest nodes for the gang), among equals
the tightest fit (whole nodes stay free for whole-node jobs). `prefer` ranks nodes before that
(lower first), so that a partly bound gang is completed next to its running members. All or
nothing: either at least `needed` members are placed, or the attempt places nothing and says what
is missing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field

from extender.core.model.quantity import format_amount
from extender.core.model.resources import GPU, Resources
from extender.core.model.snapshot import NodeInfo, PodInfo, Snapshot
from extender.core.placement.candidates import among
from extender.core.placement.candidates import candidates as nodes_for
from extender.core.placement.fit import how_many_fit

FreeOf = Callable[[NodeInfo], dict[str, int]]


@dataclass(slots=True)
class PlanAttempt:
    assignments: dict[str, str] = field(default_factory=dict)  # pod uid -> node
    reason: str = ""  # empty when the plan succeeded

    @property
    def ok(self) -> bool:
        return not self.reason


def describe(request: Resources) -> str:
    shown = [(n, a) for n, a in request.items() if n != "pods" and a > 0]
    shown.sort(key=lambda item: (item[0] != "nvidia.com/gpu", item[0]))
    return ", ".join(f"{format_amount(n, a)} {n}" for n, a in shown) or "no resources"


def _shape(pod: PodInfo) -> tuple[object, ...]:
    return (
        tuple(sorted(pod.requests.items())),
        tuple(sorted(pod.node_selector.items())),
        pod.tolerations,
        pod.affinity,
    )


def plan_gang(
    snapshot: Snapshot,
    pods: list[PodInfo],
    needed: int,
    free_of: FreeOf,
    *,
    prefer: Mapping[str, int] | None = None,
    avoid: Mapping[str, Collection[str]] | None = None,
    allow_partial: bool = False,
    nodes: Iterable[NodeInfo] | None = None,
    bounded: bool = False,
) -> PlanAttempt:
    """Place `pods` (at least `needed` of them) on `snapshot`'s nodes.

    `free_of(node)` is what a node has left for this gang (allocatable minus requested minus what
    others reserved). `avoid` maps a pod UID to nodes that pod must not get. With `allow_partial`,
    whatever fits is returned even when it is fewer than `needed` (used to hold capacity).
    `nodes` limits the plan to some nodes (one topology domain); default all. `bounded`: `free_of`
    never gives more than the node's own free capacity (true of `Reservations.free_for`, not of
    what preemption offers), so nodes without the GPUs for one pod are passed over unasked.
    """
    pool = None if nodes is None else list(nodes)
    avoid = avoid or {}
    shapes: dict[tuple[object, ...], list[PodInfo]] = {}
    for pod in pods:
        shapes.setdefault(_shape(pod), []).append(pod)
    # Biggest members first: they are the hardest to place.
    order = sorted(
        shapes.values(),
        key=lambda ps: (
            -ps[0].requests.get("nvidia.com/gpu", 0),
            -ps[0].requests.get("cpu", 0),
            ps[0].name,
        ),
    )
    free: dict[str, dict[str, int]] = {}
    rank = prefer or {}
    last = max(rank.values(), default=0) + 1
    assignments: dict[str, str] = {}
    first_failure = ""
    for members in order:
        sample = members[0]
        candidates: list[tuple[int, NodeInfo]] = []
        full: list[str] = []  # nodes it may use but that have no room: only read on failure
        requests = sample.requests
        # Only the nodes it may use and (bounded) with the GPUs for one: on the whole cluster
        # from the store's index, on a domain's node list by reading each node.
        found = (
            nodes_for(snapshot, sample, bounded=bounded)
            if pool is None
            else among(pool, sample, bounded=bounded)
        )
        tried, rejected = found.nodes, found.rejected
        passed_over, most_gpus = found.short_of_gpus, found.most_free_gpus
        for node in tried:
            room = free.get(node.name)
            if room is None:
                room = free[node.name] = free_of(node)
            count = how_many_fit(requests, room)
            if count:
                candidates.append((count, node))
            else:
                full.append(node.name)
        # Nodes are filled in order: members kept off some nodes go first, or one free to go
        # anywhere could take the only node left to them (then the gang would not fit though
        # it could).
        remaining = sorted(members, key=lambda p: -len(avoid.get(p.uid, ())))
        candidates.sort(
            key=lambda c: (rank.get(c[1].name, last), -min(c[0], len(remaining)), c[0], c[1].name)
        )
        for count, node in candidates:
            if not remaining:
                break
            room = free[node.name]
            count = min(count, how_many_fit(sample.requests, room))
            taken = [p for p in remaining if node.name not in avoid.get(p.uid, ())][:count]
            for pod in taken:
                assignments[pod.uid] = node.name
                for name, amount in pod.requests.items():
                    room[name] = room.get(name, 0) - amount
            if taken:
                placed = {p.uid for p in taken}
                remaining = [p for p in remaining if p.uid not in placed]
        if remaining and not first_failure:
            # Nodes passed over for want of GPUs count by their own free GPUs (before others'
            # reservations: at most what they have for this gang).
            short: Counter[str] = Counter()
            most_free: dict[str, int] = {}
            if passed_over:
                short[GPU] = passed_over
                most_free[GPU] = most_gpus
            for name in full:
                room = free[name]
                for resource, amount in requests.items():
                    have = room.get(resource, 0)
                    if amount > have:
                        short[resource] += 1
                        most_free[resource] = max(most_free.get(resource, 0), have)
            first_failure = _why(
                len(members),
                len(members) - len(remaining),
                sample,
                len(candidates),
                rejected,
                short,
                most_free,
            )
    if len(assignments) >= needed:
        return PlanAttempt(assignments)
    if allow_partial:
        return PlanAttempt(assignments, first_failure or "partial")
    return PlanAttempt({}, first_failure or f"only {len(assignments)} of {needed} members fit")


def _why(
    wanted: int,
    placed: int,
    sample: PodInfo,
    usable: int,
    rejected: Counter[str],
    short: Counter[str],
    most_free: dict[str, int],
) -> str:
    need = f"needs {wanted} pod{'s' if wanted != 1 else ''} of {describe(sample.requests)}"
    if not usable and not short:
        if rejected:
            why, nodes = rejected.most_common(1)[0]
            return f"{need}; no node accepts them (most often: {why}, on {nodes} nodes)"
        return f"{need}; the cluster has no nodes"
    text = f"{need}; only {placed} fit"
    if short:
        resource, _ = short.most_common(1)[0]
        amount = sample.requests[resource]
        text += (
            f"; {short[resource]} other node{'s' if short[resource] != 1 else ''} it may use "
            f"lack {resource} (at most {format_amount(resource, most_free.get(resource, 0))} "
            f"free, each pod needs {format_amount(resource, amount)})"
        )
    return text
