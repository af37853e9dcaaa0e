"""A plan's record in the cluster: what a restarted gangplank (or the standby that takes the
Lease) needs to hold exactly the reservations the old process held.

A plan lives in memory, but before its first member binds (and before the first eviction of a
preemption plan) the adapter writes, on every member still to bind, the annotation
`gangplank.io/plan`: the member's planned node, the plan's deadline (wall-clock seconds; it also
tells plans of one gang apart) and, on one member, the victims that must leave first. The pods
come back with the cache, so nothing else is listed or watched, and writing a member's record
also nudges kube-scheduler to retry it.

A plan whose members gangplank binds itself (`--bind-planned-members`) needs no record on each
member to nudge them: it is recorded once, on one member, with every member's node (`members`),
one write before the first Binding instead of one per member.

After a start or on taking the Lease, `restore` turns the records back into plans, as a set:
gangs with most members bound first, each plan kept only where its members still fit on their
nodes once the plans restored before it are counted. A gang whose record no longer holds is left
to the planner when its missing members fit elsewhere; when they fit nowhere and it runs in part,
`broken` names it, so that its bound members go and their GPUs come back (the rule is explicit:
the gang with more members bound wins the room).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

import orjson

from extender.core.gangs.gang import resolve_gang
from extender.core.gangs.hold import FreeOf
from extender.core.gangs.plans import Plan
from extender.core.gangs.reservations import Reservations
from extender.core.model.keys import group_key, single_key
from extender.core.model.snapshot import NodeInfo, PodInfo, Snapshot
from extender.core.placement.fit import fits
from extender.core.placement.planner import plan_gang

PLAN_ANNOTATION = "gangplank.io/plan"
# Stamps each computation of records (`to_write`, under the decision lock): the writer, which
# works after the lock, never lets one computed earlier overwrite one computed since.
_computed = itertools.count(1)


@dataclass(frozen=True, slots=True)
class Record:
    node: str
    deadline: float
    victims: Mapping[str, str] = field(default_factory=dict)  # uid -> node
    members: Mapping[str, str] = field(default_factory=dict)  # uid -> node: the whole plan's


def encode(
    node: str,
    deadline: float,
    victims: Mapping[str, str] | None = None,
    members: Mapping[str, str] | None = None,
) -> str:
    body: dict[str, object] = {"node": node, "deadline": round(deadline, 3)}
    if victims:
        body["victims"] = dict(victims)
    if members:
        body["members"] = dict(members)
    return orjson.dumps(body).decode()


def _names(value: object) -> bool:
    return isinstance(value, dict) and all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    )


def decode(text: str | None) -> Record | None:
    """The record an annotation holds; None for none or one that does not parse (a person may
    have edited it: it is then ignored, never trusted in part)."""
    if not text:
        return None
    try:
        body = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(body, dict):
        return None
    node, deadline = body.get("node"), body.get("deadline")
    victims, members = body.get("victims", {}), body.get("members", {})
    if not isinstance(node, str) or not node or not isinstance(deadline, int | float):
        return None
    if not _names(victims) or not _names(members):
        return None
    return Record(node, float(deadline), victims, members)


@dataclass(frozen=True, slots=True)
class Recorded:
    """One job's latest recorded plan, as the cluster shows it now."""

    key: str
    pods: tuple[PodInfo, ...]  # its active members
    assignments: dict[str, str]  # members still to bind: uid -> node
    victims: dict[str, str]  # victims that still hold their node: uid -> node
    deadline: float
    bound: int  # members already bound


def recorded(snapshot: Snapshot, jobs: Mapping[str, Iterable[PodInfo]]) -> list[Recorded]:
    """The recorded plans of `jobs` (key -> its pods) that still have members to bind, those
    with most members bound first."""
    out: list[Recorded] = []
    holding = _holding(snapshot)
    for key, pods in jobs.items():
        records = [(p, decode(p.annotations.get(PLAN_ANNOTATION))) for p in pods]
        deadlines = [r.deadline for _, r in records if r is not None]
        if not deadlines:
            continue
        latest = max(deadlines)
        active = tuple(p for p in pods if p.active)
        to_bind = {p.uid for p in active if p.node_name is None}
        assignments: dict[str, str] = {}
        victims: dict[str, str] = {}
        for pod, record in records:
            if record is None or record.deadline != latest:
                continue
            victims.update((u, n) for u, n in record.victims.items() if u in holding)
            assignments.update((u, n) for u, n in record.members.items() if u in to_bind)
            if pod.uid in to_bind:
                assignments[pod.uid] = record.node
        if assignments:
            bound = sum(1 for p in active if p.node_name is not None)
            out.append(Recorded(key, active, assignments, victims, latest, bound))
    out.sort(key=lambda r: (-r.bound, r.deadline, r.key))
    return out


def _holding(snapshot: Snapshot) -> set[str]:
    """Uids of pods that still hold their node's resources: a victim not gone yet, running or
    in its grace period after its eviction (the plan waits for it either way)."""
    return {p.uid for info in snapshot.nodes.values() for p in info.pods if p.holds_resources}


def still_fits(
    snapshot: Snapshot, plan: Recorded, room_of: Callable[[NodeInfo], dict[str, int]]
) -> bool:
    """Whether every member still to bind fits on its recorded node: in what `room_of` leaves
    for the plan there, with what its victims hold counted as freed."""
    by_uid = {p.uid: p for p in plan.pods}
    rooms: dict[str, dict[str, int]] = {}
    for uid, node in plan.assignments.items():
        pod, info = by_uid.get(uid), snapshot.nodes.get(node)
        if pod is None or info is None:
            return False
        room = rooms.get(node)
        if room is None:
            room = rooms[node] = room_of(info)
            for victim in info.pods:
                if victim.uid in plan.victims and victim.holds_resources:
                    for name, amount in victim.requests.items():
                        room[name] = room.get(name, 0) + amount
        if not fits(pod.requests, room):
            return False
        for name, amount in pod.requests.items():
            room[name] = room.get(name, 0) - amount
    return True


@dataclass(frozen=True, slots=True)
class ToWrite:
    """One member's record to write: the annotation's value on pod namespace/name (uid), of
    plan `job`, computed `computed`-th (a newer computation has a higher number)."""

    namespace: str
    name: str
    uid: str
    value: str
    job: str = ""
    computed: int = field(default=0, compare=False)


def to_write(snapshot: Snapshot, plan: Plan) -> list[ToWrite]:
    """The records of `plan`'s members still to bind that the cache does not show yet; the
    victims go on one member, the first in uid order of all the plan placed (one copy is
    enough, and it stays where it was written while the others bind)."""
    pods = {p.uid: p for p in snapshot.groups.get(plan.key, ())}
    if not pods:  # a pod alone, planned by preemption: among the pending pods
        pods = {
            p.uid: p
            for waiting in snapshot.queue_pending.values()
            for p in waiting
            if p.uid in plan.assignments
        }
    computed = next(_computed)
    whole = pods.get(plan.record_on)
    own = plan.record_members.get(plan.record_on)
    if whole is not None and own is not None:  # one record for the plan: gangplank binds it
        value = encode(own, plan.deadline, None, plan.record_members)
        if whole.annotations.get(PLAN_ANNOTATION) == value:
            return []
        return [ToWrite(whole.namespace, whole.name, whole.uid, value, plan.key, computed)]
    out = []
    keeper = min(plan.requests, default="")
    for uid, node in plan.assignments.items():
        pod = pods.get(uid)
        if pod is None:
            continue  # not in the cache yet: it cannot bind before it is
        # A consolidation's victims are moved by suspension or eviction once, never by a
        # restarted process: its record names none (see docs/consolidation.md).
        victims = plan.victims if uid == keeper and not plan.moved else None
        value = encode(node, plan.deadline, victims)
        if pod.annotations.get(PLAN_ANNOTATION) != value:
            out.append(ToWrite(pod.namespace, pod.name, uid, value, plan.key, computed))
    return out


@dataclass
class Restored:
    """What `restore` did: the members of plans it restored (to nudge: kube-scheduler may hold
    them parked), and the gangs running in part whose record no longer holds and whose missing
    members fit nowhere (their bound members are to go whole)."""

    nudge: dict[str, tuple[str, str]] = field(default_factory=dict)  # uid -> (namespace, name)
    broken: list[Recorded] = field(default_factory=list)
    plans: int = 0  # plans restored
    # Restored plans whose victims still hold their nodes: key -> victims (uid -> node)
    victims: dict[str, dict[str, str]] = field(default_factory=dict)


def restore(
    snapshot: Snapshot, reservations: Reservations, free_of: Callable[[str], FreeOf], now: float
) -> Restored:
    """The recorded plans back in `reservations`, as a set (see the module's docstring);
    `free_of(job)`: what each node has left for it. A plan in memory with the recorded deadline
    is kept as it is; one with another is replaced (a replica that led before may remember a
    plan the leader since replaced)."""
    jobs: dict[str, Iterable[PodInfo]] = dict(snapshot.groups)
    for waiting in snapshot.queue_pending.values():
        for pod in waiting:
            if PLAN_ANNOTATION in pod.annotations and group_key(pod) is None:
                jobs[single_key(pod.namespace, pod.name)] = (pod,)
    out = Restored()
    for plan in recorded(snapshot, jobs):
        known = reservations.get(plan.key)
        if known is not None and round(known.deadline, 3) >= plan.deadline:
            continue  # this very plan (recorded to the millisecond), or one made since
        if known is not None:
            reservations.release(plan.key)
        if plan.deadline <= now:
            continue  # lapsed: a gang in part is completed by the planner as usual
        if still_fits(snapshot, plan, free_of(plan.key)):
            restored = Plan.with_victims(
                plan.key, plan.pods, plan.assignments, plan.victims, plan.deadline
            )
            reservations.install(restored, restored=True)
            out.plans += 1
            if plan.victims:
                out.victims[plan.key] = plan.victims
            by_uid = {p.uid: p for p in plan.pods}
            out.nudge.update(
                (uid, (by_uid[uid].namespace, by_uid[uid].name)) for uid in plan.assignments
            )
        elif plan.bound and not _fits_elsewhere(snapshot, free_of(plan.key), plan):
            out.broken.append(plan)
    return out


def _fits_elsewhere(snapshot: Snapshot, free: FreeOf, plan: Recorded) -> bool:
    pending = [p for p in plan.pods if p.node_name is None]
    needed = max(0, resolve_gang(snapshot, plan.key).size - plan.bound) or len(pending)
    return plan_gang(snapshot, pending, needed, free, bounded=True).ok
