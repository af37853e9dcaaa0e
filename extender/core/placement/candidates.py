"""Which nodes a gang member could go on, found without reading every node.

A plan on a cluster of thousands of nodes used to ask every node two things: may this pod run
there at all (selector, affinity, taints, cordon, GPU model: `why_not_placeable`), and has it the
GPUs for one member. The first answer changes only when nodes do, so it is kept per pod
constraints and `Snapshot.node_generation`; the second is read from the store's index of nodes by
free GPUs (`Snapshot.by_free_gpus`). What is left is the nodes worth planning on — on a busy
cluster a few hundred of thousands — and the counts the reason string needs for the rest.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar, cast

from extender.core.model.resources import GPU
from extender.core.model.snapshot import NodeInfo, PodInfo, Snapshot
from extender.core.placement.fit import (
    GPU_PRODUCT,
    REQUIRE_NODES,
    how_many_fit,
    too_few_gpus,
    why_not_placeable,
)

LIMIT = 64  # answers remembered (forgotten all at once beyond)


@dataclass(frozen=True, slots=True)
class Allowed:
    """The nodes a pod's constraints allow (None: every node), and why the others refuse it."""

    names: frozenset[str] | None
    rejected: Counter[str]


@dataclass(slots=True)
class Candidates:
    """The nodes to plan a member on, and for the reason string the allowed nodes passed over
    because they have too few GPUs free: how many, and the most free GPUs among them."""

    nodes: list[NodeInfo]
    rejected: Counter[str]
    short_of_gpus: int = 0
    most_free_gpus: int = 0


def constraints(pod: PodInfo) -> tuple[object, ...]:
    """What `why_not_placeable` reads of a pod; pods with equal constraints go on equal nodes."""
    notes = pod.annotations
    return (
        notes.get(GPU_PRODUCT) if notes else None,
        notes.get(REQUIRE_NODES) if notes else None,
        tuple(sorted(pod.node_selector.items())),
        pod.tolerations,
        pod.affinity,
    )


T = TypeVar("T")
_memo: dict[tuple[object, ...], object] = {}
_memo_lock = threading.Lock()


def _remembered(snapshot: Snapshot, key: tuple[object, ...], work: Callable[[], T]) -> T:
    """`work()`, kept for as long as the snapshot's nodes stay what they are."""
    if snapshot.node_generation < 0:
        return work()
    key = (snapshot.origin, snapshot.node_generation, *key)
    known = _memo.get(key)
    if known is not None:
        return cast(T, known)
    result = work()
    with _memo_lock:
        if len(_memo) >= LIMIT:
            _memo.clear()
        _memo[key] = result
    return result


def allowed(snapshot: Snapshot, pod: PodInfo) -> Allowed:
    """The nodes of `snapshot` whose labels, taints and cordon let `pod` run there."""
    return _remembered(snapshot, ("allowed", constraints(pod)), lambda: _allowed(snapshot, pod))


def _allowed(snapshot: Snapshot, pod: PodInfo) -> Allowed:
    found = among(snapshot.nodes.values(), pod, bounded=False)
    names = None if not found.rejected else frozenset(n.name for n in found.nodes)
    return Allowed(names, found.rejected)


def among(nodes: Iterable[NodeInfo], pod: PodInfo, *, bounded: bool) -> Candidates:
    """`candidates` among the given nodes (one topology domain), each node read in turn."""
    found = Candidates([], Counter())
    requests = pod.requests
    for node in nodes:
        why = why_not_placeable(pod, node)
        if why:
            found.rejected[why] += 1
        elif bounded and too_few_gpus(requests, node):
            found.short_of_gpus += 1
            found.most_free_gpus = max(found.most_free_gpus, node.free(GPU))
        else:
            found.nodes.append(node)
    return found


def could_hold(snapshot: Snapshot, pods: Sequence[PodInfo]) -> tuple[str, ...]:
    """Nodes that could ever hold one of `pods` (whatever runs there now): its constraints allow
    it and the node's whole allocatable could take the smallest of them."""
    samples = {constraints(p): p for p in pods}
    smallest = min(pods, key=lambda p: sum(p.requests.values())).requests
    key = ("could hold", tuple(sorted(samples)), tuple(sorted(smallest.items())))

    def work() -> tuple[str, ...]:
        names: set[str] = set()
        for sample in samples.values():
            allow = allowed(snapshot, sample).names
            names |= snapshot.nodes.keys() if allow is None else allow
        nodes = snapshot.nodes
        return tuple(
            sorted(n for n in names if n in nodes and how_many_fit(smallest, nodes[n].allocatable))
        )

    return _remembered(snapshot, key, work)


def _by_free_gpus(snapshot: Snapshot) -> Mapping[int, frozenset[str]]:
    if snapshot.by_free_gpus is not None:
        return snapshot.by_free_gpus
    found: dict[int, set[str]] = {}
    for node in snapshot.nodes.values():
        found.setdefault(node.free(GPU), set()).add(node.name)
    return {gpus: frozenset(names) for gpus, names in found.items()}


def candidates(snapshot: Snapshot, pod: PodInfo, *, bounded: bool) -> Candidates:
    """The nodes `pod` may go on; with `bounded` (what the node has for the gang is never more
    than its own free capacity) only those with the GPUs for one such pod free."""
    allow = allowed(snapshot, pod)
    nodes = snapshot.nodes
    gpus = pod.requests.get(GPU, 0)
    if not bounded or gpus <= 0:
        if allow.names is None:
            return Candidates(list(nodes.values()), allow.rejected)
        return Candidates([nodes[n] for n in allow.names if n in nodes], allow.rejected)
    found = Candidates([], allow.rejected)
    for free, names in _by_free_gpus(snapshot).items():
        if allow.names is not None:
            names = names & allow.names
        if not names:
            continue
        if free >= gpus:
            found.nodes.extend(nodes[n] for n in names)
        else:
            found.short_of_gpus += len(names)
            found.most_free_gpus = max(found.most_free_gpus, free)
    return found
