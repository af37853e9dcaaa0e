"""Victims: the fewest of the candidates whose eviction makes room for a waiting job.

The candidates come in the rule's order (`victim_candidates`: who the rules let go). The search
plans the waiting job on capacity that counts the candidates as gone. If even all of them do not
make room, nothing is evicted. Otherwise candidates are added in the rule's order until the job
fits, then any that the plan does not need are dropped again, the costliest first: few jobs, then
few GPU-hours already run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from extender.core.model.snapshot import NodeInfo, PodInfo, Snapshot
from extender.core.placement.candidates import could_hold
from extender.core.placement.fit import how_many_fit
from extender.core.placement.planner import FreeOf, PlanAttempt, plan_gang
from extender.core.preemption.victim_candidates import RunningJob

Planner = Callable[[Snapshot, list[PodInfo], int, FreeOf], PlanAttempt]


@dataclass
class PreemptionPlan:
    assignments: dict[str, str]  # preemptor pod uid -> node
    victims: list[RunningJob] = field(default_factory=list)

    @property
    def victim_pods(self) -> list[PodInfo]:
        """Every pod that goes: the victims' own, and the extras that go with an elastic gang's
        minimum (each once)."""
        pods = {p.uid: p for v in self.victims for p in (*v.pods, *v.rest)}
        return list(pods.values())


def _with_freed(free_of: FreeOf, freed: Mapping[str, dict[str, int]]) -> FreeOf:
    def free(node: NodeInfo) -> dict[str, int]:
        room = dict(free_of(node))
        for name, amount in freed.get(node.name, {}).items():
            room[name] = room.get(name, 0) + amount
        return room

    return free


def placeable_nodes(names: Iterable[str], snapshot: Snapshot) -> dict[str, NodeInfo]:
    """The nodes named (by `could_hold`: those that could ever hold one of the job's pods, its
    constraints allow it and their whole allocatable could take the smallest; victims can only
    make room where room can be), as the snapshot has them."""
    nodes = snapshot.nodes
    return {name: nodes[name] for name in names}


def find_victims(
    snapshot: Snapshot,
    pods: Sequence[PodInfo],
    needed: int,
    free_of: FreeOf,
    candidates: Iterable[RunningJob],
    now: float,
    placeable: Mapping[str, NodeInfo] | None = None,
    planner: Planner = plan_gang,
    admits: Callable[[Sequence[RunningJob]], bool] | None = None,
) -> PreemptionPlan | None:
    """The fewest `candidates` (in the order given: the rule's preference) whose eviction lets
    `needed` of `pods` be placed; None when even all of them would not make room, or when the
    pods fit without evicting anyone. `planner` places the job on a trial view (a gang with a
    required topology is planned by `domains.plan_in_topology`). `admits`: whether the job's
    queues admit it once the victims chosen are gone (a queue at its max is made room in by
    victims anywhere in it, not only on the nodes the job may use)."""
    if not pods:
        return None
    if placeable is None:
        placeable = placeable_nodes(could_hold(snapshot, pods), snapshot)
    smallest = min(pods, key=lambda p: sum(p.requests.values())).requests
    base = {name: free_of(node) for name, node in placeable.items()}
    roomy = {name for name, room in base.items() if how_many_fit(smallest, room)}
    if admits is None:
        useful = [c for c in candidates if any(node in placeable for node in c.freed)]
    else:
        useful = list(candidates)

    def freed_by(chosen: Sequence[RunningJob]) -> dict[str, dict[str, int]]:
        freed: dict[str, dict[str, int]] = {}
        for job in chosen:
            for node, amounts in job.freed.items():
                if node in placeable:
                    room = freed.setdefault(node, {})
                    for name, amount in amounts.items():
                        room[name] = room.get(name, 0) + amount
        return freed

    def fit_count(freed: Mapping[str, Mapping[str, int]]) -> int:
        """Members of the smallest shape that would fit, node by node: a cheap bound."""
        total = 0
        for name in roomy | freed.keys():
            room = dict(base[name])
            for resource, amount in freed.get(name, {}).items():
                room[resource] = room.get(resource, 0) + amount
            total += how_many_fit(smallest, room)
        return total

    def attempt(chosen: Sequence[RunningJob]) -> dict[str, str] | None:
        if admits is not None and not admits(chosen):
            return None
        freed = freed_by(chosen)
        if fit_count(freed) < needed:
            return None
        nodes = {n: placeable[n] for n in roomy | freed.keys()}
        view = replace(snapshot, nodes=nodes)
        result = planner(view, list(pods), needed, _with_freed(lambda n: base[n.name], freed))
        return result.assignments if result.ok else None

    if attempt([]) is not None:
        return None  # it fits without evicting anyone
    # Add candidates until the node-by-node count could hold the job, then try a plan.
    fits_on = {name: how_many_fit(smallest, base[name]) for name in roomy}
    counted = sum(fits_on.values())
    room_now = {name: dict(base[name]) for name in placeable}
    chosen: list[RunningJob] = []
    assignments: dict[str, str] | None = None
    for job in useful:
        chosen.append(job)
        for node, amounts in job.freed.items():
            if node not in placeable:
                continue
            room = room_now[node]
            for name, amount in amounts.items():
                room[name] = room.get(name, 0) + amount
            now_fits = how_many_fit(smallest, room)
            counted += now_fits - fits_on.get(node, 0)
            fits_on[node] = now_fits
        if counted < needed:
            continue
        assignments = attempt(chosen)
        if assignments is not None:
            break
    if assignments is None:
        return None  # not even with every candidate gone: nothing is evicted in vain
    # Drop what the plan turns out not to need: first, at once, victims on no node it uses.
    used = set(assignments.values())
    trial = [j for j in chosen if used.intersection(j.freed)]
    if len(trial) < len(chosen):
        found = attempt(trial)
        if found is not None:
            chosen, assignments = trial, found
    # Then one by one, the costliest first, where the node-by-node count still allows it.
    freed = freed_by(chosen)

    def fits_at(node: str, minus: Mapping[str, int]) -> int:
        room = dict(base[node])
        for resource, amount in freed.get(node, {}).items():
            room[resource] = room.get(resource, 0) + amount - minus.get(resource, 0)
        return how_many_fit(smallest, room)

    counted = fit_count(freed)
    for job in sorted(chosen, key=lambda j: (len(j.pods), j.gpu_seconds(now)), reverse=True):
        if len(chosen) == 1:
            break
        mine = {n: a for n, a in job.freed.items() if n in placeable}
        loss = sum(fits_at(n, {}) - fits_at(n, a) for n, a in mine.items())
        if counted - loss < needed:
            continue  # without it too few could fit: it is needed
        trial = [j for j in chosen if j is not job]
        found = attempt(trial)
        if found is not None:
            chosen, assignments = trial, found
            freed = freed_by(chosen)
            counted = fit_count(freed)
    return PreemptionPlan(assignments, chosen)
