"""Preempt: narrow kube-scheduler's candidate nodes and victims.

The extender may only drop nodes or drop victims; a node it keeps must keep at least one victim.
Until preemption policy exists, every candidate with victims is kept as proposed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from extender.core.model import PodInfo, Snapshot


@dataclass(frozen=True, slots=True)
class Victims:
    """Pods (by UID) to evict on one node, and how many PodDisruptionBudgets that violates."""

    uids: tuple[str, ...]
    pdb_violations: int = 0


def decide_preemption(
    snapshot: Snapshot, preemptor: PodInfo, candidates: Mapping[str, Victims]
) -> dict[str, Victims]:
    return {node: victims for node, victims in candidates.items() if victims.uids}
