"""Bind: whether gangplank may bind a pod to the node kube-scheduler chose."""

from __future__ import annotations

from dataclasses import dataclass

from extender.core.model import Snapshot


@dataclass(frozen=True, slots=True)
class BindRequest:
    namespace: str
    name: str
    uid: str
    node: str

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class BindDecision:
    allowed: bool
    reason: str = ""


def decide_bind(snapshot: Snapshot, request: BindRequest) -> BindDecision:
    """Today every bind kube-scheduler asks for is carried out: it already checked the node fits.

    A node the cache does not know is no reason to refuse: the API server is the judge of that.
    """
    return BindDecision(allowed=True)
