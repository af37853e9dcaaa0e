"""Planning a gang near its data and within the shared-link budgets (`data.py`, `budgets.py`).

What a job reads and uses is read once (`needs_of`); a job that says nothing of either is planned
as before (`domains.plan_in_topology`), at the cost of a few dictionary lookups per member.
Otherwise:
- its data ranks the domains of each tier and the nodes inside them (`near_data`); with
  `gangplank.io/dataset-policy: required` only the nodes that cache it have room for it;
- the domains it would take over a `required` budget have no room for it; those over a
  `preferred` budget are left out of a first plan and used only when that plan fails;
- a plan that fails says why in the terms the job was written in: the dataset and where it is
  cached, or the domain and the budget's figures.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field

from extender.core.model.answers import FilterResult, refuse
from extender.core.model.snapshot import NodeInfo, PodInfo, Snapshot
from extender.core.placement.budgets import (
    Budget,
    Verdict,
    declares,
    demand,
    judge,
    use_by_domain,
)
from extender.core.placement.data import (
    NO_DATA,
    DataNeed,
    cached_nodes,
    data_of,
    far,
    locality,
    named,
    not_here,
    reads_data,
    where_cached,
)
from extender.core.placement.domains import plan_in_topology
from extender.core.placement.every_node import NO_FIT
from extender.core.placement.fit import how_many_fit
from extender.core.placement.planner import FreeOf, PlanAttempt
from extender.core.placement.topology import Constraint, Topology, domains

Reserved = Callable[[], Sequence[tuple[PodInfo, str]]]  # pods of plans not bound yet, and nodes


@dataclass(frozen=True, slots=True)
class Needs:
    data: DataNeed = NO_DATA
    budgets: Mapping[Budget, int] = field(default_factory=dict)
    problem: str = ""

    @property
    def any(self) -> bool:
        return bool(self.data.datasets or self.budgets or self.problem)


NO_NEEDS = Needs()


def needs_of(snapshot: Snapshot, pods: Sequence[PodInfo], topology: Topology) -> Needs:
    """What `pods` (one job's pods still to place) read and use of the link budgets."""
    budgets = topology.budgets
    if not any(reads_data(p) or declares(p, budgets) for p in pods):
        return NO_NEEDS
    data = data_of(pods, snapshot)
    needs, problem = demand(pods, budgets) if budgets else ({}, "")
    return Needs(data, needs, problem or data.problem)


def plan_near_data(
    snapshot: Snapshot,
    pods: list[PodInfo],
    needed: int,
    free_of: FreeOf,
    topology: Topology,
    constraint: Constraint,
    reserved: Reserved,
    *,
    bound: Sequence[PodInfo] = (),
    prefer: Mapping[str, int] | None = None,
    avoid: Mapping[str, Collection[str]] | None = None,
    bounded: bool = False,
) -> PlanAttempt:
    """`plan_in_topology` for a job that reads data or uses a link budget (see the module)."""
    needs = needs_of(snapshot, pods, topology)
    if needs.problem:
        return PlanAttempt(reason=needs.problem)

    def plan(free: FreeOf, near: Mapping[str, int] | None) -> PlanAttempt:
        return plan_in_topology(
            snapshot,
            pods,
            needed,
            free,
            topology,
            constraint,
            bound=bound,
            prefer=prefer,
            avoid=avoid,
            bounded=bounded,
            near_data=near,
        )

    if not needs.any:
        return plan(free_of, None)
    data = needs.data
    near = locality(snapshot, data, topology) if data.datasets else None
    only = cached_nodes(snapshot, data) if data.required else None
    verdict = judge(snapshot, needs.budgets, reserved()) if needs.budgets else None
    refused = verdict.refused if verdict is not None else frozenset()
    last = verdict.last if verdict is not None else frozenset()
    free = _without(free_of, refused, only)
    attempt = plan(_without(free, last, None) if last else free, near)
    if not attempt.ok and last:
        attempt = plan(free, near)
    if attempt.ok:
        return attempt
    why = _why(snapshot, pods, attempt.reason, data, only, free, verdict, topology)
    return PlanAttempt(reason=why)


def _without(free_of: FreeOf, refused: Collection[str], only: Collection[str] | None) -> FreeOf:
    """`free_of` where the nodes `refused` (and, given `only`, all but those) have no room."""
    if not refused and only is None:
        return free_of

    def free(node: NodeInfo) -> dict[str, int]:
        name = node.name
        if name in refused or (only is not None and name not in only):
            return {}
        return free_of(node)

    return free


def _why(
    snapshot: Snapshot,
    pods: Sequence[PodInfo],
    reason: str,
    data: DataNeed,
    only: Collection[str] | None,
    free: FreeOf,
    verdict: Verdict | None,
    topology: Topology,
) -> str:
    if verdict is not None:
        refused = verdict.why_refused()
        if refused:
            return refused
    if only is not None:
        if not only:
            return (
                f"{named(data)} is cached on no node (nodes that cache it carry Fluid's label "
                f"or data.gangplank.io/<name>: cached)"
            )
        sample = max(pods, key=lambda p: (p.requests.get("nvidia.com/gpu", 0), p.name))
        nodes = snapshot.nodes
        room = sum(how_many_fit(sample.requests, free(nodes[n])) for n in only if n in nodes)
        where = where_cached(snapshot, data, topology)
        full = "all full" if not room else f"room there for {room} of {len(pods)} pods"
        return f"{named(data)} is cached on no node with room (cached on {where}, {full})"
    if verdict is not None and verdict.refused:
        over = [o for o in verdict.overruns if o.budget.required]
        best = min(over, key=lambda o: (o.in_use, o.domain))
        left = len({o.domain for o in over})
        tier = best.budget.tier.name
        return (
            f"{reason}; {left} {tier}{'s' if left != 1 else ''} left out over their "
            f"{best.budget.quantity} budget ({best})"
        )
    return reason


def refuse_far_from_data(
    snapshot: Snapshot, pod: PodInfo, result: FilterResult, topology: Topology, reserved: Reserved
) -> FilterResult:
    """A single pod's filter answer without the nodes its required data or a required budget
    rules out (a pod that reads nothing and declares nothing: `result` as it is, at once)."""
    if not result.passed or not (reads_data(pod) or declares(pod, topology.budgets)):
        return result
    needs = needs_of(snapshot, [pod], topology)
    if needs.problem:
        return refuse(result, dict.fromkeys(result.passed, needs.problem))
    refused: dict[str, str] = {}
    data = needs.data
    if data.required:
        only = cached_nodes(snapshot, data)
        where = where_cached(snapshot, data, topology) if only else "no node"
        why = f"{not_here(data)}; cached on {where}"
        refused.update((n, why) for n in result.passed if n not in only)
    if any(b.required for b in needs.budgets):
        index_of = {b: domains(snapshot, b.tier).members for b in needs.budgets if b.required}
        for overrun in judge(snapshot, needs.budgets, reserved()).overruns:
            if overrun.budget.required:
                why = str(overrun)
                for name in index_of[overrun.budget].get(overrun.domain, ()):
                    refused.setdefault(name, why)
    return refuse(result, refused) if refused else result


def data_costs(
    snapshot: Snapshot,
    pod: PodInfo,
    names: Sequence[str],
    costs: list[float],
    topology: Topology,
    reserved: Reserved,
    near_weight: float,
    budget_weight: float,
) -> None:
    """Lower `costs` (one per name; NO_FIT stays) where the pod's data is near, by tier (by up to
    `near_weight`), and raise them by the share of a domain's budget its use would fill (a
    quarter of `budget_weight` when it fills it, the whole weight over it)."""
    needs = needs_of(snapshot, [pod], topology)
    if needs.data.datasets and near_weight:
        ranks = locality(snapshot, needs.data, topology)
        last = far(topology)
        bonus = near_weight / last
        for i, name in enumerate(names):
            if costs[i] != NO_FIT:
                costs[i] -= bonus * (last - ranks.get(name, last))
    if not needs.budgets or not budget_weight:
        return
    pairs = reserved()
    for budget, need in needs.budgets.items():
        of = domains(snapshot, budget.tier).of
        use = use_by_domain(snapshot, budget, pairs)
        for i, name in enumerate(names):
            domain = of.get(name)
            if domain is None or costs[i] == NO_FIT:
                continue
            after = use.get(domain, 0) + need
            share = 1.0 if after > budget.per_domain else after / budget.per_domain / 4
            costs[i] += budget_weight * share
