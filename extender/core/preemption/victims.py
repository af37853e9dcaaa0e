"""Victims: which running jobs may make room for a waiting job, and the fewest that do.

A running job is a gang whole (all its bound members) or a pod alone: a gang is evicted whole or
not at all, so no gang is left running in part.

Never a victim: system pods (priority 1,000,000,000 and above), pods labelled
`gangplank.io/preemptible: "false"` or `volcano.sh/preemptable: "false"` (one such member
protects its whole gang), jobs that have run less than their queue's `minRuntime`.

Two rules decide who may be a victim of whom:
- **priority**: inside one queue whose rules allow it (`withinQueue`), or among pods in no queue,
  a job of lower priority;
- **reclaim**: for a job its queue admits within its guarantee, a job of another queue that runs
  beyond that queue's guarantee (any priority), if that queue is `reclaimable`; evictions from a
  queue stop where it would fall below its guarantee.

The search plans the waiting job on capacity that counts the candidates as gone. If even all of
them do not make room, nothing is evicted. Otherwise candidates are added in the rule's order
until the job fits, then any that the plan does not need are dropped again, the costliest first:
few jobs, then few GPU-hours already run. A gang already running short of members (a leader
died between two of its evictions) comes before the rule's order: it is evicted whole rather
than another gang cut.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from extender.core.model.keys import is_single, job_key
from extender.core.model.resources import GPU
from extender.core.model.snapshot import NodeInfo, PodInfo, Snapshot
from extender.core.placement.candidates import could_hold
from extender.core.placement.fit import how_many_fit
from extender.core.placement.planner import FreeOf, PlanAttempt, plan_gang
from extender.core.queues.policy import PreemptionRules

SYSTEM_PRIORITY = 1_000_000_000
OPT_OUTS = (("gangplank.io/preemptible", "false"), ("volcano.sh/preemptable", "false"))
Planner = Callable[[Snapshot, list[PodInfo], int, FreeOf], PlanAttempt]


@dataclass(frozen=True, slots=True, eq=False)
class RunningJob:
    key: str
    queue: str | None
    priority: int
    started: float  # the earliest start of its pods
    pods: tuple[PodInfo, ...]
    freed: Mapping[str, Mapping[str, int]]  # node -> requests of its pods there
    requests: Mapping[str, int] = field(default_factory=dict)  # all its pods together

    def __post_init__(self) -> None:
        if not self.requests:
            out: dict[str, int] = {}
            for amounts in self.freed.values():
                for name, amount in amounts.items():
                    out[name] = out.get(name, 0) + amount
            object.__setattr__(self, "requests", out)

    def gpu_seconds(self, now: float) -> float:
        return self.requests.get(GPU, 0) * max(0.0, now - self.started)

    @property
    def protected(self) -> str:
        """Why no one may preempt it ("" when anyone the rules allow may)."""
        for pod in self.pods:
            if pod.priority >= SYSTEM_PRIORITY:
                return f"pod {pod.key} is a system pod (priority {pod.priority})"
            for key, value in OPT_OUTS:
                if pod.labels.get(key, "").lower() == value:
                    return f"pod {pod.key} is labelled {key}: {value!r}"
        return ""


def running_jobs(
    snapshot: Snapshot,
    queue_of: Callable[[PodInfo], str | None],
    keep: Callable[[PodInfo], bool] | None = None,
    nodes: Collection[str] | None = None,
    holds: Callable[[PodInfo], bool] | None = None,
) -> list[RunningJob]:
    """Jobs with pods running (bound, not finished, not being deleted) on `nodes` (default: all);
    a gang comes with all its running members, wherever they run. `keep` looks at each pod first
    (a cheap test, such as its priority): a job any of whose pods it refuses is left out whole.
    `holds`: only jobs one of whose pods on `nodes` passes it (holds what is needed)."""
    grouped: dict[str, list[PodInfo]] = {}
    refused: set[str] = set()
    infos = snapshot.nodes
    for name in infos if nodes is None else nodes:
        info = infos.get(name)
        if info is None:
            continue
        for pod in info.pods:
            if not pod.active or (holds is not None and not holds(pod)):
                continue
            key: str = job_key(pod)
            if key in grouped or key in refused:
                continue
            members = [pod]
            if not is_single(key):
                members = [p for p in snapshot.groups.get(key, (pod,)) if p.active and p.node_name]
            if keep is not None and not all(keep(p) for p in members):
                refused.add(key)
            else:
                grouped[key] = members
    jobs = []
    for key, pods in grouped.items():
        if len(pods) == 1:  # most jobs: one pod, its own requests as they are
            pod = pods[0]
            assert pod.node_name is not None
            jobs.append(
                RunningJob(
                    key,
                    queue_of(pod),
                    pod.priority,
                    pod.started or pod.created,
                    (pod,),
                    {pod.node_name: pod.requests},
                    pod.requests,
                )
            )
            continue
        freed: dict[str, dict[str, int]] = {}
        whole: dict[str, int] = {}
        for pod in pods:
            assert pod.node_name is not None
            on_node = freed.setdefault(pod.node_name, {})
            for name, amount in pod.requests.items():
                on_node[name] = on_node.get(name, 0) + amount
                whole[name] = whole.get(name, 0) + amount
        jobs.append(
            RunningJob(
                key=key,
                queue=queue_of(pods[0]),
                priority=max(p.priority for p in pods),
                started=min(p.started or p.created for p in pods),
                pods=tuple(pods),
                freed=freed,
                requests=whole,
            )
        )
    return jobs


@dataclass
class PreemptionPlan:
    assignments: dict[str, str]  # preemptor pod uid -> node
    victims: list[RunningJob] = field(default_factory=list)

    @property
    def victim_pods(self) -> list[PodInfo]:
        return [p for v in self.victims for p in v.pods]


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


def broken_first(
    candidates: list[RunningJob], runs_short: Callable[[RunningJob], bool]
) -> list[RunningJob]:
    """The candidates with gangs already running short (fewer members bound than the gang needs,
    and no plan to complete them: a leader died between two evictions, a member failed) first,
    the rule's order kept within each part: finishing the cut of a gang that can no longer run
    costs less than cutting a whole one."""
    short: list[RunningJob] = []
    rest: list[RunningJob] = []
    for job in candidates:
        (short if not is_single(job.key) and runs_short(job) else rest).append(job)
    return short + rest if short else candidates


RulesOf = Callable[[str | None], PreemptionRules]


def _may_go(job: RunningJob, rules_of: RulesOf, now: float) -> bool:
    return not job.protected and now - job.started >= rules_of(job.queue).min_runtime


def priority_candidates(
    jobs: Iterable[RunningJob],
    queue: str | None,
    priority: int,
    rules_of: RulesOf,
    now: float,
) -> list[RunningJob]:
    """Jobs of the same queue (or of no queue) with lower priority, cheapest first: lowest
    priority, then the ones that free the most GPUs (fewest jobs), then the least GPU-time run."""
    if queue is not None and not rules_of(queue).within_queue:
        return []
    found = [
        j for j in jobs if j.queue == queue and j.priority < priority and _may_go(j, rules_of, now)
    ]
    found.sort(key=lambda j: (j.priority, -j.requests.get(GPU, 0), j.gpu_seconds(now), j.key))
    return found


def reclaim_candidates(
    jobs: Iterable[RunningJob],
    queue: str,
    borrowed: Callable[[str], Mapping[str, int]],
    governed: Iterable[str],
    rules_of: RulesOf,
    now: float,
    account: Callable[[str], str] | None = None,
) -> list[RunningJob]:
    """Jobs that other queues run beyond their guarantee (any priority), lowest priority then
    newest first, never more than was borrowed (no queue falls below its guarantee).
    `account(victim_queue)` is where borrowing is measured: in a tree, the victim's ancestor just
    below the one it shares with `queue` (siblings first share their parent's guarantee)."""
    governed = set(governed)
    account = account or (lambda q: q)
    ordered = sorted(
        (
            j
            for j in jobs
            if j.queue is not None
            and j.queue != queue
            and rules_of(j.queue).reclaimable
            and _may_go(j, rules_of, now)
        ),
        key=lambda j: (j.priority, -j.started, j.key),
    )
    left: dict[str, dict[str, int]] = {}
    found = []
    for job in ordered:
        assert job.queue is not None
        owner = account(job.queue)
        room = left.setdefault(owner, dict(borrowed(owner)))
        taking = {k: v for k, v in job.requests.items() if k in governed and v > 0}
        if not taking or any(room.get(k, 0) < v for k, v in taking.items()):
            continue
        for name, amount in taking.items():
            room[name] -= amount
        found.append(job)
    return found
