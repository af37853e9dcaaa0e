"""Picking up where another process left off: after a start, on taking the Lease, and when the
cluster view is fresh again.

- `restore_plans`: the plans an earlier process recorded on its pods (`gangs/plan_record.py`)
  back in the reservations; the members are nudged, the victims a plan still waits for evicted,
  and gangs running in part that can no longer be completed evicted whole (rule `recovery`).
- `adopt_pending`: each pending pod of the profile is written in the waiting room as its filter
  would have left it, because kube-scheduler may hold it parked unseen by this process.
- `records_to_write`: the records the adapter writes before a member binds or a victim goes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from extender.core.gangs.gang import resolve_gang
from extender.core.gangs.plan_record import ToWrite, restore, to_write
from extender.core.model.keys import is_single, job_key
from extender.core.model.rejection import Rejection
from extender.core.model.snapshot import PodInfo, Snapshot
from extender.core.waiting import Ref

if TYPE_CHECKING:
    from extender.core.engine import Engine


def restore_plans(engine: Engine, snapshot: Snapshot, now: float) -> int:
    """Returns how many plans were restored."""
    restored = restore(snapshot, engine.reservations, engine.placer.free_of, now)
    engine.waiting.nudge_later(restored.nudge)
    if engine.policy is not None:
        for plan in engine.reservations.plans():
            pods = _members(snapshot, plan.key)
            queue = engine.queue_of(pods[0])[0] if pods else None
            if queue is not None and plan.assignments:
                engine.ledger.plan_queue(plan.key, queue)
    evictions = engine.preemption.evictions
    for broken in restored.broken:
        evictions.evict_broken(broken.key, broken.pods, now)
    for key, victims in restored.victims.items():
        pods = [
            p
            for node in set(victims.values())
            if (info := snapshot.nodes.get(node)) is not None
            for p in info.pods
            if p.uid in victims and p.active  # one being deleted is on its way out
        ]
        members = [p for p in _members(snapshot, key) if p.active]
        if pods and members:
            evictions.evict_recorded(key, pods, members[0], now)
    return restored.plans


def records_to_write(
    engine: Engine, snapshot: Snapshot, uid: str = "", key: str = ""
) -> list[ToWrite]:
    """The records to write before pod `uid` of a plan binds, or before plan `key`'s first
    eviction (neither: of every plan): the members the cache does not show recorded yet."""
    reservations = engine.reservations
    if not key and not uid:  # every plan's (the periodic pass writes them ahead)
        return [r for plan in reservations.plans() for r in to_write(snapshot, plan)]
    if not key:
        key = reservations.job_of(uid) or ""
    plan = reservations.get(key)
    return to_write(snapshot, plan) if plan is not None else []


def adopt_pending(engine: Engine, snapshot: Snapshot, now: float) -> list[Ref]:
    """A job its queue refuses is refused; a gang member waits (invalid, incomplete or lacking
    room); the pass nudges each once its job may go ahead. Returns the pods that may go ahead
    now: planned ones, and single pods their queue admits."""
    jobs: dict[str, list[PodInfo]] = {}
    for waiting in snapshot.queue_pending.values():
        for pod in waiting:
            if pod.scheduler_name in engine.scheduler_names and pod.active and not pod.node_name:
                jobs.setdefault(job_key(pod), []).append(pod)
    ready: list[Ref] = []
    for key, members in jobs.items():
        pods: list[PodInfo] = []
        for pod in members:
            if engine.reservations.planned_node(pod) is not None:
                ready.append((pod.namespace, pod.name))
            else:
                pods.append(pod)
        if not pods:
            continue
        queue, rule = engine.queue_of(pods[0]) if engine.policy is not None else (None, "")
        if rule:
            rule = "unknown-queue"
        elif queue is not None:
            verdict = engine.line.verdict(snapshot, key, pods[0], queue)
            rule = verdict.rule if verdict is not None and not verdict.ok else ""
        if rule:
            for pod in pods:
                engine.waiting.refuse(key, pod, queue or "", rule, None, now)
            continue
        gang = None if is_single(key) else resolve_gang(snapshot, key)
        if gang is None or gang.basic:
            if queue is not None:  # its queue admits it now
                ready += [(p.namespace, p.name) for p in pods]
            continue
        kind = Rejection.INVALID if gang.problem else Rejection.NO_ROOM
        if not gang.problem and len(gang.members) < gang.size:
            kind = Rejection.INCOMPLETE
        for pod in pods:
            engine.waiting.park(gang, pod, kind, "", now)
            engine.placer.count(kind)
    return ready


def _members(snapshot: Snapshot, key: str) -> Sequence[PodInfo]:
    """The pods of job `key`: a gang's from its group, a pod alone's among the pending pods."""
    found = snapshot.groups.get(key)
    if found:
        return found
    return [p for w in snapshot.queue_pending.values() for p in w if job_key(p) == key]
