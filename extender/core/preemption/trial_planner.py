"""How preemption's trial plans place a waiting job: where it may run once victims have gone.

A single pod and a gang without constraints go anywhere (`plan_gang`); a gang that requires its
data where it runs, or declares use of a required link budget, is planned near its data within
the budgets (`data_plan.plan_near_data`), so victims free room only where it may go; a gang that
requires a topology domain is planned within one (`domains.plan_in_topology`).
"""

from __future__ import annotations

from collections.abc import Sequence

from extender.core.gangs.gang import resolve_gang
from extender.core.model.keys import is_single
from extender.core.model.snapshot import PodInfo, Snapshot
from extender.core.placement.data_plan import needs_of, plan_near_data
from extender.core.placement.domains import plan_in_topology
from extender.core.placement.planner import FreeOf, PlanAttempt, plan_gang
from extender.core.placement.topology import Topology
from extender.core.preemption.victims import Planner


def planner_for(snapshot: Snapshot, key: str, topology: Topology) -> Planner:
    """The planner of job `key`'s trial plans."""
    if is_single(key):
        return plan_gang
    gang = resolve_gang(snapshot, key)
    constraint = gang.constraint
    if _bound_to_data(snapshot, gang.pending, topology):

        def near_data(
            view: Snapshot, pods: list[PodInfo], needed: int, free_of: FreeOf
        ) -> PlanAttempt:
            return plan_near_data(view, pods, needed, free_of, topology, constraint, tuple)

        return near_data
    if not constraint.required:
        return plan_gang

    def in_topology(
        view: Snapshot, pods: list[PodInfo], needed: int, free_of: FreeOf
    ) -> PlanAttempt:
        return plan_in_topology(view, pods, needed, free_of, topology, constraint)

    return in_topology


def _bound_to_data(snapshot: Snapshot, pods: Sequence[PodInfo], topology: Topology) -> bool:
    """Whether the job requires its data where it runs or declares use of a required budget."""
    needs = needs_of(snapshot, pods, topology)
    return needs.data.required or any(b.required for b in needs.budgets)
