"""Preempt: what kube-scheduler proposes — victims per candidate node.

The extender may only drop nodes or drop victims; a node it keeps must keep at least one victim.
The decision is `preemption.Preemption.narrow`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Victims:
    """Pods (by UID) to evict on one node, and how many PodDisruptionBudgets that violates."""

    uids: tuple[str, ...]
    pdb_violations: int = 0
