"""What the driver asks of an extender (gangplank in-process or over HTTP, or kube-scheduler
alone), and what it gets back: a filter's answer, a pass's nudges and evictions."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from extender.sim.runs import SimPod


@dataclass
class Filtered:
    passed: list[str]
    failed: dict[str, str] = field(default_factory=dict)  # resolvable
    unresolvable: dict[str, str] = field(default_factory=dict)
    # What a refusal was for, when the extender knows: "quota", "gang", "held" (capacity is
    # held for other jobs: the driver checks whether the job would fit without it), or "".
    kind: str = ""

    def reason(self) -> str:
        for reasons in (self.unresolvable, self.failed):
            for reason in reasons.values():
                return reason
        return ""


@dataclass
class Tick:
    nudged: list[str] = field(default_factory=list)  # pod uids updated (retry now)
    evicted: list[str] = field(default_factory=list)  # pod uids the extender evicted
    rules: dict[str, str] = field(default_factory=dict)  # uid -> the rule it was evicted by


class Extender(Protocol):
    """What the driver calls: the verbs, and the cluster changes its cache must see."""

    name: str

    def start(self, nodes: Sequence[dict[str, Any]]) -> None: ...
    def created(self, pods: Sequence[SimPod], now: float) -> None: ...
    def deleted(self, pods: Sequence[SimPod], now: float) -> None: ...
    def updated(self, pods: Sequence[SimPod], now: float) -> None:
        """The kubelet reported new status of bound pods (`SimPod.phase`, `ready`, ...)."""
        ...

    def filter(self, pod: SimPod, names: list[str], now: float) -> Filtered: ...
    def prioritize(self, pod: SimPod, names: list[str], now: float) -> dict[str, int]: ...
    def preempt(
        self, pod: SimPod, candidates: dict[str, list[SimPod]], now: float
    ) -> dict[str, list[str]]: ...
    def bind(self, pod: SimPod, node: str, now: float) -> str: ...
    def tick(self, now: float) -> Tick: ...
    def stop(self) -> None: ...
    def queue_refuses(self, pod: SimPod) -> bool:
        """Whether the pod's queue refuses its job now: asked of a pod kube-scheduler found no
        room for (it never reaches the extender's filter then)."""
        ...
