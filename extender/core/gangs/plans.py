"""Plans: a job's pods reserved on chosen nodes until they bind.

A plan is made by the gang planner (a gang placed whole) or by preemption (a job placed on what
its victims will free). A pod with a plan passes only its planned node; a plan made by
preemption lets its pods pass only once every victim has left, so the job starts whole — or, if an
eviction is refused, not at all.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from extender.core.model.answers import FilterResult
from extender.core.model.keys import job_name
from extender.core.model.resources import Resources
from extender.core.model.snapshot import PodInfo, Snapshot


@dataclass
class Plan:
    key: str
    assignments: dict[str, str]  # uid -> node, for members not bound yet
    requests: dict[str, Resources]
    deadline: float
    last_member_created: float
    seen: set[str] = field(default_factory=set)  # members the cache has shown (uids)
    # Made by preemption: pods (uid -> node) that must leave before the members fit there.
    victims: dict[str, str] = field(default_factory=dict)
    # Made by consolidation: the victims are moved (their new places are kept), not preempted.
    moved: bool = False
    # Bound by gangplank itself (`--bind-planned-members`): the plan is recorded once, on member
    # `record_on`, naming every member's node (`record_members`), not on each member.
    record_on: str = ""
    record_members: dict[str, str] = field(default_factory=dict)
    # Members kube-scheduler once did not offer the node their victims left (see `lagging`).
    unoffered: set[str] = field(default_factory=set)

    @classmethod
    def with_victims(
        cls,
        key: str,
        pods: Sequence[PodInfo],
        assignments: Mapping[str, str],
        victims: Mapping[str, str],
        deadline: float,
    ) -> Plan:
        return cls(
            key=key,
            assignments=dict(assignments),
            requests={p.uid: p.requests for p in pods if p.uid in assignments},
            deadline=deadline,
            last_member_created=max((p.created for p in pods), default=0.0),
            victims=dict(victims),
        )

    def lagging(self, uid: str) -> bool:
        """Whether kube-scheduler, not offering member `uid` its planned node once the victims
        left it, may only lag behind: its cycle's snapshot can predate a deletion gangplank's
        cache has seen. True the first time (the member waits and is nudged: its retry comes
        after the deletion, so kube-scheduler sees the node free); after that its own filters
        refuse the node."""
        if self.assignments.get(uid) not in self.victims.values() or uid in self.unoffered:
            return False
        self.unoffered.add(uid)
        return True

    def leaving(self, snapshot: Snapshot) -> int:
        """How many of its victims still hold resources."""
        count = 0
        for node in set(self.victims.values()):
            info = snapshot.nodes.get(node)
            if info is not None:
                count += sum(1 for p in info.pods if self.victims.get(p.uid) == node)
        return count


def planned_answer(
    snapshot: Snapshot, plan: Plan, pod: PodInfo, names: Sequence[str]
) -> FilterResult:
    """A planned pod passes its node only; while pods preempted for its job still run, it waits
    (every node unresolvable: kube-scheduler must not preempt anyone else for it)."""
    node = plan.assignments[pod.uid]
    leaving = plan.leaving(snapshot)
    if not leaving and node in names:
        return FilterResult(passed=[node])
    what = "moved" if plan.moved else "preempted"
    reason = (
        f"{job_name(plan.key)}: planned on node {node}, waiting for {leaving} {what} "
        f"pod{'s' if leaving != 1 else ''} to leave (its pods start together)"
        if leaving
        else f"{job_name(plan.key)}: planned on node {node}, which kube-scheduler did not offer"
    )
    return FilterResult(passed=[], unresolvable=dict.fromkeys(names, reason))


def bound_answer(
    snapshot: Snapshot, key: str, pod: PodInfo, names: Sequence[str]
) -> FilterResult | None:
    """A member of gang `key` the cache shows bound already (gangplank bound it with its plan's
    other members while kube-scheduler's copy still waited): it passes the node it is on, and its
    bind is answered done. None: `pod` is not bound."""
    node = next(
        (p.node_name for p in snapshot.groups.get(key, ()) if p.uid == pod.uid and p.node_name),
        None,
    )
    if node is None:
        return None
    if node in names:
        return FilterResult(passed=[node])
    reason = f"{job_name(key)}: pod {pod.namespace}/{pod.name} is bound to node {node} already"
    return FilterResult(passed=[], unresolvable=dict.fromkeys(names, reason))
