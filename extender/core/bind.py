"""Bind: the request and the answer. The decision is `GangScheduler.check_bind`: a gang member
only to its planned node; any other pod wherever kube-scheduler chose (it checked the node fits,
and the API server is the judge of a node gangplank does not know)."""

from __future__ import annotations

from dataclasses import dataclass


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
