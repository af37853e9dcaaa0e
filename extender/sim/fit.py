"""kube-scheduler's own filters in the simulator: room for a pod's requests, its nodeSelector.

The nodes that pass for each kind of pod (same requests, same selector) are kept up to date node
by node: a bind or a release looks again at that one node for each kind seen so far, so a
scheduling cycle does not walk the cluster. The order of the nodes is the order they came to
pass (kube-scheduler's own order is its snapshot's, from a rotating start: arbitrary too).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from extender.core.model.snapshot import NodeInfo, PodInfo

PODS = "pods"

FitKey = tuple[tuple[tuple[str, int], ...], tuple[tuple[str, str], ...]]


@dataclass
class _Kind:
    want: dict[str, int]  # requests above zero
    selector: dict[str, str]
    names: dict[str, None]  # the nodes that pass, as an ordered set


class FitIndex:
    def __init__(self, nodes: Mapping[str, NodeInfo], free: Mapping[str, Mapping[str, int]]):
        self.nodes = nodes
        self.free = free  # the caller's, updated in place; `moved` is told of every change
        self._kinds: dict[FitKey, _Kind] = {}

    def nodes_for(self, pod: PodInfo) -> list[str]:
        key: FitKey = (
            tuple(sorted(pod.requests.items())),
            tuple(sorted(pod.node_selector.items())),
        )
        kind = self._kinds.get(key)
        if kind is None:
            want = {r: a for r, a in pod.requests.items() if a > 0}
            kind = _Kind(want, dict(pod.node_selector), {})
            kind.names = {n: None for n in self.nodes if self._passes(kind, n)}
            self._kinds[key] = kind
        return list(kind.names)

    def moved(self, name: str) -> None:
        """Node `name`'s free capacity changed."""
        for kind in self._kinds.values():
            if self._passes(kind, name):
                kind.names.setdefault(name)
            else:
                kind.names.pop(name, None)

    def _passes(self, kind: _Kind, name: str) -> bool:
        free = self.free[name]
        if free.get(PODS, 0) < 1:
            return False
        for resource, amount in kind.want.items():
            if free.get(resource, 0) < amount:
                return False
        node = self.nodes[name]
        if node.unschedulable:
            return False
        labels = node.labels
        return all(labels.get(k) == v for k, v in kind.selector.items())
