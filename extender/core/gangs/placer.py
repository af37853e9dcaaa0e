"""Gang placement at filter time: plan a gang whole, then admit each member to its planned node.

- **Plan, then admit.** When a member is filtered and its gang has no plan, all its pending
  members are placed at once (`data_plan.plan_near_data`: `domains.plan_in_topology` near the
  gang's data and within the link budgets), on capacity minus everyone else's
  reservations and the hold. The plan becomes a reservation (`reservations.py`); each member
  passes only its planned node.
- **No deadlock.** Plans are all or nothing, made one at a time: two gangs never hold partial
  reservations against each other.
- **No starvation.** Without a policy, a gang that lacks room claims the hold (`holder.py`).
- **Recovery.** A partly bound gang plans only its missing members, near its bound members.
- **Elastic gangs.** Once its minimum is planned or bound, an elastic gang's further members
  ("extras", up to its maximum) are placed one by one on what is left, near its members, and only
  where `spare` (the fair line's say, set by the engine) finds no waiting job needs the room
  (`extras.py`).
- **Memory.** A gang found not to fit is not planned again on the same state (`no_room.py`):
  kube-scheduler retries every parked member on every pod created, and the answer cannot differ
  until capacity, reservations or the hold change (a plan at 5,000 nodes is tens of ms).

It decides and answers; who waits is the caller's to write down (`Placed.rejection`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from functools import partial

from extender.core.gangs.extras import (
    Spare,
    extras_only,
    no_one_waits,
    no_room_for_extra,
    place_extra,
)
from extender.core.gangs.gang import Gang, resolve_gang
from extender.core.gangs.hold import FreeOf
from extender.core.gangs.holder import HoldKeeper, RankOf, rank
from extender.core.gangs.no_room import NoRoom, RoomState, alike, avoid_state
from extender.core.gangs.outsiders import OutsiderCheck
from extender.core.gangs.plans import Plan, planned_answer
from extender.core.gangs.reservations import Reservations
from extender.core.model.answers import FilterResult
from extender.core.model.keys import group_key, single_key
from extender.core.model.rejection import Rejection
from extender.core.model.snapshot import PodInfo, Snapshot
from extender.core.placement.data_plan import plan_near_data, refuse_far_from_data
from extender.core.placement.topology import DEFAULT_TOPOLOGY, Topology, near_members


@dataclass(frozen=True)
class GangConfig:
    reservation_seconds: float = 60.0  # a plan whose members do not bind by then is released
    hold_seconds: float = 120.0  # the first gang in line keeps freed capacity at most this long
    kick_interval_seconds: float = 5.0  # at most one retry nudge per gang per interval
    lifecycle_review_seconds: float = 10.0  # how often running jobs are reviewed (`lifecycle/`)
    regrow_after_seconds: float = 120.0  # a workload made smaller grows no sooner (`regrow.py`)


@dataclass(frozen=True, slots=True)
class Placed:
    """The answer for one pod, and why its gang waits (None: it does not)."""

    result: FilterResult
    gang: Gang | None = None
    rejection: Rejection | None = None
    reason: str = ""


class GangPlacer:
    def __init__(
        self,
        config: GangConfig,
        reservations: Reservations,
        holder: HoldKeeper,
        rank_of: RankOf,
    ) -> None:
        self.config = config
        self.topology: Topology = DEFAULT_TOPOLOGY  # the policy's tiers
        self.auto_hold = True  # without a policy the gang lacking room claims the hold itself
        self._reservations = reservations
        self._holder = holder
        self._rank_of = rank_of
        self._avoid: dict[str, dict[str, set[str]]] = {}  # gang -> uid -> nodes refused to it
        self._no_room = NoRoom()
        self._outsiders = OutsiderCheck(reservations, holder)
        self.failures: Counter[str] = Counter()
        self.spare: Spare = no_one_waits

    def count(self, kind: Rejection) -> None:
        """A member parked without a filter call (kube-scheduler's preempt verb, a restart), for
        the metrics as if refused here (a gang lacking room is counted where a plan failed)."""
        if kind != Rejection.NO_ROOM:
            self.failures[kind] += 1

    def take_failures(self) -> Counter[str]:
        failures, self.failures = self.failures, Counter()
        return failures

    def free_of(self, key: str | None, only: Collection[str] | None = None) -> FreeOf:
        """What each node has left for job `key` (None: a pod of no plan)."""
        hold = self._holder.current
        if only is None:
            return partial(self._reservations.free_for, key=key, hold=hold)
        return partial(self._reservations.free_for, key=key, hold=hold, only=only)

    def reserved_pods(self, snapshot: Snapshot) -> Sequence[tuple[PodInfo, str]]:
        """The pods of plans not bound yet, each with its planned node (for link budgets)."""
        found: list[tuple[PodInfo, str]] = []
        for plan in self._reservations.plans():
            members = {p.uid: p for p in snapshot.groups.get(plan.key, ())}
            for uid, node in plan.assignments.items():
                pod = members.get(uid)
                if pod is not None and pod.node_name is None:
                    found.append((pod, node))
        return found

    def forget(self, waiting: Collection[str]) -> None:
        """Drop the memory of gangs that wait no more (when it has grown)."""
        if len(self._no_room) > 2 * len(waiting) + 256:
            self._no_room.keep_only(waiting)

    # ---- filter ------------------------------------------
    def filter(self, snapshot: Snapshot, pod: PodInfo, names: Sequence[str], now: float) -> Placed:
        key = group_key(pod)
        if key is None:
            solo = single_key(pod.namespace, pod.name)
            plan = self._reservations.get(solo)
            if plan is not None and pod.uid in plan.assignments:
                return Placed(planned_answer(snapshot, plan, pod, names))
            result = self._outsiders.check(snapshot, pod, names, solo)
            reserved = partial(self.reserved_pods, snapshot)
            return Placed(refuse_far_from_data(snapshot, pod, result, self.topology, reserved))
        gang = resolve_gang(snapshot, key, asking=pod)
        if gang.problem:
            return self._reject(gang, names, Rejection.INVALID, gang.problem)
        if gang.basic:
            return Placed(self._outsiders.check(snapshot, pod, names, key))
        plan = self._reservations.get(key)
        if plan is not None and pod.uid in plan.assignments:
            node = plan.assignments[pod.uid]
            if node in names or plan.leaving(snapshot) or plan.lagging(pod.uid):
                return Placed(planned_answer(snapshot, plan, pod, names))
            # kube-scheduler's own filters refuse the planned node (something gangplank does
            # not model, such as pod affinity or a volume): plan again without it.
            self._avoid.setdefault(key, {}).setdefault(pod.uid, set()).add(node)
            self._reservations.release(key)
        elif plan is not None:
            return self._add_to_plan(snapshot, gang, pod, names, now)
        if extras_only(gang):
            return self._add_to_plan(snapshot, gang, pod, names, now)
        if len(gang.members) < gang.size:
            reason = f"gang {gang.name}: {len(gang.members)} of {gang.size} pods exist"
            return self._reject(gang, names, Rejection.INCOMPLETE, reason)
        return self._plan(snapshot, gang, pod, names, now)

    def _plan(
        self, snapshot: Snapshot, gang: Gang, pod: PodInfo, names: Sequence[str], now: float
    ) -> Placed:
        avoid = self._avoid.get(gang.key, {})
        state = self._no_room_state(snapshot, gang, avoid)
        known = self._no_room.reason(gang.key, state)
        if known is not None:
            return self._lacks_room(snapshot, gang, names, known, now)
        offered = set(names)
        wanted = {name for p in gang.pending for name in p.requests}
        for _ in range(3):
            attempt = plan_near_data(
                snapshot,
                gang.pending,
                gang.needed,
                self.free_of(gang.key, only=wanted),
                self.topology,
                gang.constraint,
                partial(self.reserved_pods, snapshot),
                bound=gang.bound,
                prefer=near_members(snapshot, gang.bound, self.topology),
                avoid=avoid,
                bounded=True,
            )
            if not attempt.ok:
                reason = f"gang {gang.name}: {attempt.reason}"
                self._no_room.remember(gang.key, state, reason)
                return self._lacks_room(snapshot, gang, names, reason, now)
            node = attempt.assignments.get(pod.uid)
            if node is None or node in offered:
                break
            avoid = {**avoid, pod.uid: {*avoid.get(pod.uid, ()), node}}
        else:
            reason = (
                f"gang {gang.name}: the nodes planned for this pod were not offered by "
                "kube-scheduler"
            )
            return self._reject(gang, names, Rejection.NO_ROOM, reason)
        members = {p.uid: p for p in gang.members}
        assignments = dict(attempt.assignments)
        if gang.elastic:  # its minimum only: extras are placed one by one (`_add_to_plan`)
            order = sorted(assignments, key=lambda uid: uid != pod.uid)
            assignments = {uid: assignments[uid] for uid in order[: gang.needed]}
            node = assignments.get(pod.uid)
        plan = Plan(
            key=gang.key,
            assignments=assignments,
            requests={uid: members[uid].requests for uid in assignments},
            deadline=now + (gang.timeout_seconds or self.config.reservation_seconds),
            last_member_created=max(p.created for p in gang.members),
        )
        self._avoid.pop(gang.key, None)
        self._holder.release(gang.key)
        self._reservations.install(plan, asking=pod.uid)
        if node is None:  # the gang is placed without this extra pod; the plan stands
            if gang.elastic:
                return self._add_to_plan(snapshot, gang, pod, names, now)
            reason = no_room_for_extra(gang, pod)
            return self._reject(gang, names, Rejection.NO_ROOM, reason)
        return Placed(_admit(node))

    def _lacks_room(
        self, snapshot: Snapshot, gang: Gang, names: Sequence[str], reason: str, now: float
    ) -> Placed:
        self.failures[Rejection.NO_ROOM] += 1
        if self.auto_hold:
            self._holder.claim(
                snapshot,
                gang.key,
                rank(snapshot, gang.key, gang.priority, gang.created),
                gang.pending,
                now,
                self.free_of(gang.key),
                self.taken_nodes(snapshot),
                self._rank_of,
            )
        return self._reject(gang, names, Rejection.NO_ROOM, reason)

    def fits_now(self, snapshot: Snapshot, gang: Gang) -> bool:
        """A dry run of the gang's plan (no avoided nodes: fewer limits, so a "no" holds for the
        real plan too, and is remembered for it)."""
        state = self._no_room_state(snapshot, gang, self._avoid.get(gang.key, {}))
        if self._no_room.reason(gang.key, state) is not None:
            return False
        extra = extras_only(gang)  # whether one more member would fit
        attempt = plan_near_data(
            snapshot,
            gang.pending,
            1 if extra else gang.needed,
            self.free_of(
                None if extra else gang.key, only={r for p in gang.pending for r in p.requests}
            ),
            self.topology,
            gang.constraint,
            partial(self.reserved_pods, snapshot),
            bound=gang.bound,
            bounded=True,
        )
        if not attempt.ok:
            self._no_room.remember(gang.key, state, f"gang {gang.name}: {attempt.reason}")
        return attempt.ok

    def room_state(
        self, snapshot: Snapshot, gang: Gang, avoid: Mapping[str, set[str]] | None = None
    ) -> RoomState | None:
        """What a plan for `gang` depends on: the same state gives the same answer. None when
        the snapshot does not say when capacity changed."""
        if snapshot.capacity_generation < 0:
            return None
        changes = (snapshot.capacity_generation, self._reservations.version, avoid_state(avoid))
        return self._state(snapshot, gang, changes)

    def _no_room_state(
        self, snapshot: Snapshot, gang: Gang, avoid: Mapping[str, set[str]]
    ) -> RoomState | None:
        """The state a "does not fit" of `gang` is remembered with: for a gang of alike members
        that may go anywhere, only what gives capacity back (see `no_room.py`)."""
        if avoid or snapshot.freed_generation < 0 or not alike(gang.pending):
            return self.room_state(snapshot, gang, avoid)
        released = self._reservations.released_version
        gives_back = (snapshot.freed_generation, snapshot.node_generation, released)
        return self._state(snapshot, gang, ("alike", *gives_back))

    def _state(self, snapshot: Snapshot, gang: Gang, changes: tuple[object, ...]) -> RoomState:
        return (
            snapshot.origin,
            *changes,
            self._holder.state(),
            tuple(p.uid for p in gang.members),
            len(gang.bound),
            self.topology,
        )

    def _add_to_plan(
        self, snapshot: Snapshot, gang: Gang, pod: PodInfo, names: Sequence[str], now: float
    ) -> Placed:
        """A member the plan does not know: placed alone, near the members (`extras.py`)."""
        plan = self._reservations.get(gang.key)
        free = self.free_of(None, only=list(pod.requests))
        node, reason = place_extra(
            snapshot, gang, pod, names, plan, free, self.topology, self.spare
        )
        if node is None:
            return self._reject(gang, names, Rejection.NO_ROOM, reason)
        if plan is None:  # the minimum is bound: the extra has a plan of its own
            extra = Plan(
                key=gang.key,
                assignments={pod.uid: node},
                requests={pod.uid: pod.requests},
                deadline=now + self.config.reservation_seconds,
                last_member_created=max(p.created for p in gang.members),
            )
            self._reservations.install(extra, asking=pod.uid, quiet=True)
        else:
            self._reservations.add_member(gang.key, pod, node)
        return Placed(_admit(node))

    def _reject(
        self,
        gang: Gang,
        names: Sequence[str],
        kind: Rejection,
        reason: str,
    ) -> Placed:
        if kind != Rejection.NO_ROOM:  # counted where the plan failed (see `_lacks_room`)
            self.failures[kind] += 1
        result = FilterResult(passed=[], unresolvable=dict.fromkeys(names, reason))
        return Placed(result, gang, kind, reason)

    def taken_nodes(self, snapshot: Snapshot) -> set[str]:
        """Nodes where reservations or the hold may take capacity now."""
        return self._outsiders.taken_nodes(snapshot)


def _admit(node: str) -> FilterResult:
    # The other nodes are dropped without an entry (kube-scheduler counts that as
    # unresolvable): the pod is scheduled, so no one reads reasons, and 5,000 copies of one
    # would only slow the answer.
    return FilterResult(passed=[node])
