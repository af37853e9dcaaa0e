"""The baseline: kube-scheduler without gangplank. Every node passes, scores are the default
profile's (NodeResourcesFit least-allocated and NodeResourcesBalancedAllocation, on CPU and
memory), pods bind one by one, there are no gangs and no queues; preemption is kube-scheduler's
own by priority."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from extender.kube.convert import node_from_api
from extender.sim.calls import Filtered, Tick
from extender.sim.runs import SimPod

SCORED = ("cpu", "memory")


class Baseline:
    name = "kube-scheduler alone"

    def __init__(self) -> None:
        self.allocatable: dict[str, Mapping[str, int]] = {}
        self.used: dict[str, dict[str, int]] = {}
        self.where: dict[str, str] = {}  # uid -> node
        # Scores by the pod's scored requests, then by node: a node's are dropped when a pod
        # binds to it or leaves it (a backlog of thousands scores thousands of nodes each cycle).
        self._scores: dict[tuple[int, ...], dict[str, int]] = {}

    def start(self, nodes: Sequence[dict[str, Any]]) -> None:
        for raw in nodes:
            node = node_from_api(raw)
            self.allocatable[node.name] = node.allocatable
            self.used[node.name] = {}

    def stop(self) -> None:
        pass

    def created(self, pods: Sequence[SimPod], now: float) -> None:
        pass

    def deleted(self, pods: Sequence[SimPod], now: float) -> None:
        for pod in pods:
            node = self.where.pop(pod.uid, None)
            if node is not None:
                used = self.used[node]
                for r in SCORED:
                    used[r] = used.get(r, 0) - pod.requests.get(r, 0)
                self._changed(node)

    def _changed(self, node: str) -> None:
        for scores in self._scores.values():
            scores.pop(node, None)

    def updated(self, pods: Sequence[SimPod], now: float) -> None:
        pass  # kube-scheduler alone looks at no running pod

    def filter(self, pod: SimPod, names: list[str], now: float) -> Filtered:
        return Filtered(list(names))

    def prioritize(self, pod: SimPod, names: list[str], now: float) -> dict[str, int]:
        asked = tuple(pod.requests.get(r, 0) for r in SCORED)
        known = self._scores.setdefault(asked, {})
        out = {}
        for name in names:
            score = known.get(name)
            if score is None:
                score = known[name] = self._score(name, asked)
            out[name] = score
        return out

    def _score(self, name: str, asked: tuple[int, ...]) -> int:
        allocatable, used = self.allocatable[name], self.used[name]
        fractions = []
        for r, amount in zip(SCORED, asked, strict=True):
            cap = allocatable.get(r, 0)
            after = used.get(r, 0) + amount
            fractions.append(min(1.0, after / cap) if cap else 1.0)
        least = sum(100 * (1 - f) for f in fractions) / len(fractions)
        balanced = 100 * (1 - abs(fractions[0] - fractions[1]) / 2)
        return round(least + balanced)

    def preempt(
        self, pod: SimPod, candidates: dict[str, list[SimPod]], now: float
    ) -> dict[str, list[str]]:
        return {n: [p.uid for p in pods] for n, pods in candidates.items()}

    def bind(self, pod: SimPod, node: str, now: float) -> str:
        self.where[pod.uid] = node
        used = self.used[node]
        for r in SCORED:
            used[r] = used.get(r, 0) + pod.requests.get(r, 0)
        self._changed(node)
        return ""

    def tick(self, now: float) -> Tick:
        return Tick()

    def queue_refuses(self, pod: SimPod) -> bool:
        return False  # no queues
