"""The baseline: kube-scheduler without gangplank. Every node passes, scores are the default
profile's (NodeResourcesFit least-allocated and NodeResourcesBalancedAllocation, on CPU and
memory), pods bind one by one, there are no gangs and no queues; preemption is kube-scheduler's
own by priority."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from extender.convert import node_from_api
from extender.sim.driver import Filtered, SimPod, Tick

SCORED = ("cpu", "memory")


class Baseline:
    name = "kube-scheduler alone"

    def __init__(self) -> None:
        self.allocatable: dict[str, Mapping[str, int]] = {}
        self.used: dict[str, dict[str, int]] = {}
        self.where: dict[str, str] = {}  # uid -> node

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

    def filter(self, pod: SimPod, names: list[str], now: float) -> Filtered:
        return Filtered(list(names))

    def prioritize(self, pod: SimPod, names: list[str], now: float) -> dict[str, int]:
        out = {}
        for name in names:
            allocatable, used = self.allocatable[name], self.used[name]
            fractions = []
            for r in SCORED:
                cap = allocatable.get(r, 0)
                after = used.get(r, 0) + pod.requests.get(r, 0)
                fractions.append(min(1.0, after / cap) if cap else 1.0)
            least = sum(100 * (1 - f) for f in fractions) / len(fractions)
            balanced = 100 * (1 - abs(fractions[0] - fractions[1]) / 2)
            out[name] = round(least + balanced)
        return out

    def preempt(
        self, pod: SimPod, candidates: dict[str, list[SimPod]], now: float
    ) -> dict[str, list[str]]:
        return {n: [p.uid for p in pods] for n, pods in candidates.items()}

    def bind(self, pod: SimPod, node: str, now: float) -> str:
        self.where[pod.uid] = node
        used = self.used[node]
        for r in SCORED:
            used[r] = used.get(r, 0) + pod.requests.get(r, 0)
        return ""

    def tick(self, now: float) -> Tick:
        return Tick()
