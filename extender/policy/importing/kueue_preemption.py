"""Kueue's preemption rules, as Kueue means them, on gangplank's queues."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from extender.policy.importing.result import Imported, Manifest

RECLAIMERS = ("Any", "LowerPriority")
WITHIN = {"Never": False, "LowerPriority": True, "LowerOrNewerEqualPriority": True}


def _reclaim(obj: Manifest) -> Any:
    return (obj.spec.get("preemption") or {}).get("reclaimWithinCohort")


def preemption(
    cqs: list[tuple[Manifest, dict[str, Any]]], top: Mapping[str, str | None], out: Imported
) -> None:
    """Kueue's preemption rules, as Kueue means them, on gangplank's queues: `withinQueue` from
    the queue's own `withinClusterQueue`; `reclaimable` (what it borrows may be taken back) if
    another ClusterQueue of its cohort tree reclaims (`reclaimWithinCohort`). Both default to
    Never in Kueue."""
    trees: dict[str | None, list[Manifest]] = {}
    for obj, _ in cqs:
        trees.setdefault(top[obj.name], []).append(obj)
    for obj, queue in cqs:
        rules = obj.spec.get("preemption") or {}
        within = str(rules.get("withinClusterQueue") or "Never")
        tree = top[obj.name]
        others = [o for o in trees[tree] if o is not obj] if tree is not None else []
        reclaimers = [o for o in others if _reclaim(o) in RECLAIMERS]
        by = ", ".join(f"{o.name} {_reclaim(o)}" for o in reclaimers)
        queue["preemption"] = {"withinQueue": WITHIN.get(within, False), "reclaimable": bool(by)}
        default = "" if "withinClusterQueue" in rules else ", Kueue's default"
        if by:
            reclaim = f"reclaimable: true (reclaimWithinCohort of {by})"
        elif tree is not None:
            reclaim = "reclaimable: false (no other ClusterQueue of its cohort reclaims: Never)"
        else:
            reclaim = "reclaimable: false (in no cohort)"
        out.mapped.append(
            f"{obj.where}: withinQueue: {str(WITHIN.get(within, False)).lower()} "
            f"(withinClusterQueue {within}{default}), {reclaim}"
        )
        if within == "LowerOrNewerEqualPriority":
            out.notes.append(
                f"{obj.where}: withinClusterQueue LowerOrNewerEqualPriority: gangplank preempts "
                "lower priority only, not newer jobs of equal priority"
            )
        elif within not in WITHIN:
            out.notes.append(f"{obj.where}: withinClusterQueue {within} not mapped")
        if by and (len(reclaimers) < len(others) or "LowerPriority" in by):
            out.notes.append(
                f"{obj.where}: reclaim differs: in gangplank every queue reclaims what this one "
                f"borrows, at any priority; in Kueue only {by}"
            )
        borrow = (rules.get("borrowWithinCohort") or {}).get("policy")
        if borrow and borrow != "Never":
            out.notes.append(
                f"{obj.where}: borrowWithinCohort {borrow} not mapped (gangplank never preempts "
                "for a job to borrow)"
            )
        for key, value in rules.items():
            if key not in ("withinClusterQueue", "reclaimWithinCohort", "borrowWithinCohort"):
                out.notes.append(f"{obj.where}: preemption.{key} {value} not mapped")
