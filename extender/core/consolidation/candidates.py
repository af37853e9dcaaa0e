"""Which running jobs are candidates to move for a waiting job, and whether a plan places them.

A candidate runs on nodes the waiting job could use, is movable (`movable.py`), of the waiting
job's priority or lower, not leaving, not planned for and not moved lately (MOVED_AGAIN_SECONDS,
which the component and the lifecycle's kept records remember). The move planner (`plan.py`)
counts GPUs only; `placeable` checks the rest: every moved pod may go to its new node (its node
selector, taints, all it requests with the other moved pods there), and every waiting pod to its
node once the moved pods left. `candidate_jobs` makes the cheap cuts over every running pod;
`Judge` judges a job's movability (its workload, gang, local storage) only once a plan moves it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence, Set
from typing import NamedTuple

from extender.core.consolidation.movable import MOVABLE_LABEL, Way, how_moved
from extender.core.consolidation.plan import MovePlan, plan_moves
from extender.core.gangs.reservations import Reservations
from extender.core.model.keys import is_single, job_key
from extender.core.model.resources import GPU
from extender.core.model.snapshot import PodInfo, Snapshot
from extender.core.placement.fit import fits, why_not_placeable
from extender.core.queues.policy import Policy

QueueOf = Callable[[PodInfo], str | None]


class Candidates(NamedTuple):
    """The candidate jobs' pods, and what the planner reads of them: job -> {pod uid: (its node,
    its GPUs)}."""

    members: dict[str, tuple[PodInfo, ...]]
    gpus: dict[str, dict[str, tuple[str, int]]]


def candidate_jobs(
    snapshot: Snapshot,
    key: str,
    pending: Sequence[PodInfo],
    nodes: Set[str],
    policy: Policy | None,
    queue_of: QueueOf,
    *,
    recently: Set[str],
    reservations: Reservations,
) -> Candidates:
    """The jobs that may be moved for job `key`, before each one's own judgement (`movable`):
    the running jobs on `nodes` of `key`'s priority or lower, whole there, not leaving, not
    planned, not moved `recently`, and labelled movable or in a queue that allows moves. Cheap on
    thousands of jobs (one pass over the nodes' pods): the search judges only the jobs a plan
    would move."""
    priority = max(p.priority for p in pending)
    leaving = reservations.leaving()
    jobs: dict[str, list[PodInfo]] = {}
    for name in nodes:
        for pod in snapshot.nodes[name].pods:
            if pod.requests.get(GPU, 0) > 0 and pod.active and pod.priority <= priority:
                jobs.setdefault(pod.job or job_key(pod), []).append(pod)
    out = Candidates({}, {})
    allowed: dict[str | None, bool] = {}
    for k, found in jobs.items():
        if k == key or k in recently or k in reservations:
            continue
        if is_single(k):
            members = tuple(found)
        else:
            members = tuple(p for p in snapshot.groups.get(k, ()) if p.active) or tuple(found)
            if len(members) != len(found):
                continue  # it runs pods elsewhere too (on nodes the job cannot use)
        if leaving and any(p.uid in leaving for p in members):
            continue
        said = members[0].labels.get(MOVABLE_LABEL)
        if said == "false":
            continue
        if said != "true":
            queue = queue_of(members[0])
            if queue not in allowed:
                allowed[queue] = policy is not None and policy.movable_queue(queue)
            if not allowed[queue] and all(p.labels.get(MOVABLE_LABEL) != "true" for p in members):
                continue
        out.members[k] = members
        out.gpus[k] = {p.uid: (p.node_name or "", p.requests[GPU]) for p in members}
    return out


def movable(
    snapshot: Snapshot,
    key: str,
    members: Sequence[PodInfo],
    policy: Policy | None,
    queue_of: QueueOf,
    suspends: bool,
) -> bool:
    """Whether candidate job `key` moves (`movable.how_moved`), by a way carried out here (a
    suspension only where someone carries suspensions out: not in the simulator)."""
    allows = policy is not None and policy.movable_queue(queue_of(members[0]))
    way, _, _ = how_moved(snapshot, key, members, allows)
    return way is not None and (way is not Way.SUSPEND or suspends)


def placeable(
    snapshot: Snapshot,
    pending: Sequence[PodInfo],
    plan: MovePlan,
    movable: Mapping[str, Sequence[PodInfo]],
) -> bool:
    """Every moved pod may go to its new node (its constraints, and all it requests with the
    other moved pods there), and every waiting pod to its node once the moved pods left."""
    pods = {p.uid: p for job in movable.values() for p in job}
    landing: dict[str, list[PodInfo]] = {}
    leaving: dict[str, list[PodInfo]] = {}
    for _, targets in plan.moves:
        for uid, (old, new) in targets.items():
            landing.setdefault(new, []).append(pods[uid])
            leaving.setdefault(old, []).append(pods[uid])
    waiting = {p.uid: p for p in pending}
    for uid, where in plan.assignments.items():
        landing.setdefault(where, []).append(waiting[uid])
    for name, arriving in landing.items():
        node = snapshot.nodes[name]
        free = {r: node.allocatable.get(r, 0) - node.requested.get(r, 0) for r in node.allocatable}
        for pod in leaving.get(name, ()):
            for r, amount in pod.requests.items():
                free[r] = free.get(r, 0) + amount
        for pod in arriving:
            if why_not_placeable(pod, node) or not fits(pod.requests, free):
                return False
            for r, amount in pod.requests.items():
                free[r] = free.get(r, 0) - amount
    return True


JUDGED_PLANS = 8  # plans made judging only the jobs they move, before every candidate is judged


class Judge:
    """The plan on the candidates, each job it moves judged (`movable`) only then: one that may
    not move is left out and the plan made again without it; after JUDGED_PLANS such plans every
    candidate is judged, and the last plan is made on those that may move."""

    def __init__(
        self,
        snapshot: Snapshot,
        candidates: Candidates,
        policy: Policy | None,
        queue_of: QueueOf,
        suspends: bool,
    ) -> None:
        self.snapshot, self.candidates = snapshot, candidates
        self.policy, self.queue_of, self.suspends = policy, queue_of, suspends
        self.judged: dict[str, bool] = {}

    def may_move(self, key: str) -> bool:
        if key not in self.judged:
            members = self.candidates.members[key]
            self.judged[key] = movable(
                self.snapshot, key, members, self.policy, self.queue_of, self.suspends
            )
        return self.judged[key]

    def plan(
        self,
        pending: Sequence[PodInfo],
        free_gpus: Mapping[str, int],
        asks: Sequence[tuple[str, int]],
        budget: int,
    ) -> tuple[MovePlan, dict[str, tuple[PodInfo, ...]]] | None:
        """(the plan, the moved jobs' pods) once every job it moves may move and `placeable`
        holds; None when there is none (or the waiting job fits without moves)."""
        gpus = dict(self.candidates.gpus)
        for attempt in range(JUDGED_PLANS + 1):
            if attempt == JUDGED_PLANS:
                gpus = {k: pods for k, pods in gpus.items() if self.may_move(k)}
            plan = plan_moves(free_gpus, asks, gpus, budget)
            if plan is None or not plan.moves:
                return None  # no plan, or it fits without one (the planner's to place)
            refused = [k for k, _ in plan.moves if not self.may_move(k)]
            if not refused:
                moved = {k: self.candidates.members[k] for k, _ in plan.moves}
                return (plan, moved) if placeable(self.snapshot, pending, plan, moved) else None
            for k in refused:
                del gpus[k]
        return None
