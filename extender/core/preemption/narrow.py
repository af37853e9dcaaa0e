"""kube-scheduler's own preemption (the preempt verb), narrowed to what gangplank's rules allow.

kube-scheduler proposes victims for a pod its filters found no node for. A planned job keeps only
its planned victims on its planned node (not those their workload, made smaller, removes itself:
kube-scheduler's deletion would count as a failure of theirs); any other pod keeps only victims
the rules allow — never a gang member (a gang goes whole, by gangplank's own plan), except an
elastic gang's extras, at most as many as it runs beyond its minimum (they go first, and the
gang keeps running), unless its workload takes extras back by being made smaller (an elastic
Job or PyTorchJob: kube-scheduler's deletion would count as a failure) — and only nodes
where what is kept makes room and no PodDisruptionBudget is broken.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Mapping

from extender.core.gangs.gang import resolve_gang
from extender.core.gangs.plans import Plan
from extender.core.model.answers import Victims
from extender.core.model.keys import is_single, job_key
from extender.core.model.snapshot import PodInfo, Snapshot
from extender.core.placement.fit import fits
from extender.core.preemption.shrinks import shrinkable
from extender.core.preemption.victim_candidates import RunningJob, priority_candidates
from extender.core.queues.policy import PreemptionRules

RulesOf = Callable[[str | None], PreemptionRules]
QueueOf = Callable[[PodInfo], str | None]


def narrow(
    snapshot: Snapshot,
    pod: PodInfo,
    candidates: Mapping[str, Victims],
    now: float,
    plan: Plan | None,
    rules_of: RulesOf,
    queue_of: QueueOf,
    first: Collection[str] = (),
    through_workload: Collection[str] = (),
) -> dict[str, Victims]:
    """The candidates kept for `pod` (`plan`: its job's plan, if any; `first`: idle jobs whose
    rule is reclaim-first, which may go whatever their priority; `through_workload`: planned
    victims that go by a smaller size of their workload, never by kube-scheduler's deletion)."""
    if plan is not None and pod.uid in plan.assignments:
        node = plan.assignments[pod.uid]
        proposed = candidates.get(node)
        if proposed is None or proposed.pdb_violations:
            return {}
        planned = tuple(
            uid
            for uid in proposed.uids
            if plan.victims.get(uid) == node and uid not in through_workload
        )
        return {node: Victims(planned, proposed.pdb_violations)} if planned else {}
    if not is_single(job_key(pod)):
        return {}  # a gang member without a plan: its gang cannot be made room for
    queue = queue_of(pod)
    out: dict[str, Victims] = {}
    spare = _SpareExtras(snapshot)
    for node_name, proposed in candidates.items():
        info = snapshot.nodes.get(node_name)
        if info is None or not proposed.uids or proposed.pdb_violations:
            continue  # gangplank never breaks a PodDisruptionBudget
        by_uid = {p.uid: p for p in info.pods}
        kept = []
        room = {k: info.allocatable.get(k, 0) - info.requested.get(k, 0) for k in pod.requests}
        taken: Counter[str] = Counter()  # extras kept, per gang
        for uid in proposed.uids:
            victim = by_uid.get(uid)
            if victim is None:
                continue
            key = job_key(victim)
            member = not is_single(key)
            if member and taken[key] >= spare.of(key):
                continue  # a gang member beyond the extras it can spare (none: not elastic)
            if not _alone_may_go(victim, pod, queue, queue_of, rules_of, now, first):
                continue
            if member:
                taken[key] += 1
            kept.append(uid)
            for name in room:
                room[name] += victim.requests.get(name, 0)
        if kept and fits(pod.requests, room):
            out[node_name] = Victims(tuple(kept), proposed.pdb_violations)
    return out


def _alone_may_go(
    victim: PodInfo,
    pod: PodInfo,
    queue: str | None,
    queue_of: QueueOf,
    rules_of: RulesOf,
    now: float,
    first: Collection[str],
) -> bool:
    job = RunningJob(
        job_key(victim),
        queue_of(victim),
        victim.priority,
        victim.started or victim.created,
        (victim,),
        {},
    )
    return bool(priority_candidates([job], queue, pod.priority, rules_of, now, first))


class _SpareExtras:
    """How many of each gang's members kube-scheduler may delete for a pod alone: its extras
    (none for a gang that is not elastic, or whose workload takes extras back itself)."""

    def __init__(self, snapshot: Snapshot) -> None:
        self._snapshot = snapshot
        self._known: dict[str, int] = {}

    def of(self, key: str) -> int:
        count = self._known.get(key)
        if count is None:
            gang = resolve_gang(self._snapshot, key)
            elastic = gang.elastic and not shrinkable(self._snapshot, gang)
            count = self._known[key] = len(gang.extras) if elastic else 0
        return count
