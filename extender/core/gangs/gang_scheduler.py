"""Gang admission: plan a gang whole, reserve its nodes, admit each member to its planned node.

State (plans, the head gang's hold, who waits) lives in one `GangScheduler`; every method takes
the snapshot and the time, does no I/O, and must be called under one lock (the web layer does).

- **Plan, then admit.** When a member is filtered and its gang has no plan, all its pending
  members are placed at once (`planner.plan_gang`), on capacity minus everyone else's
  reservations. The plan is a reservation with a deadline; each member passes only its planned
  node; other pods see reserved capacity as taken. A plan not used in time is released.
- **No deadlock.** Plans are all or nothing, made one at a time: two gangs never hold partial
  reservations against each other.
- **No starvation.** The waiting gang first in line (highest priority, then oldest) that lacks
  room gets a *hold*: capacity that frees up on nodes it could use, from then on, is kept for it,
  for at most `hold_seconds`; then the hold lapses for as long, so the cluster does not idle.
- **Recovery.** A partly bound gang plans only its missing members, on the nodes where its bound
  members run first.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial

from extender.core.gangs.gang import Gang, resolve_gang
from extender.core.gangs.held_nodes import HeldNodes
from extender.core.gangs.hold import Hold
from extender.core.gangs.no_room import NoRoom, RoomState, alike, avoid_state, shrunk
from extender.core.gangs.plans import Plan, planned_answer
from extender.core.model.answers import (
    MAX_SCORE,
    BindDecision,
    BindRequest,
    FilterResult,
    NodeScores,
    refuse,
)
from extender.core.model.keys import group_key, job_key, job_name, single_key
from extender.core.model.notices import Outbox
from extender.core.model.snapshot import NodeInfo, PodInfo, Snapshot
from extender.core.placement.domains import plan_in_topology
from extender.core.placement.fit import fits
from extender.core.placement.node_filter import decide_filter
from extender.core.placement.planner import describe, plan_gang
from extender.core.placement.topology import DEFAULT_TOPOLOGY, Topology, near_members

FORGET_SECONDS = 60.0


@dataclass(frozen=True)
class GangConfig:
    reservation_seconds: float = 60.0  # a plan whose members do not bind by then is released
    hold_seconds: float = 120.0  # the first gang in line keeps freed capacity at most this long
    kick_interval_seconds: float = 5.0  # at most one retry nudge per gang per interval


@dataclass
class Waiting:
    key: str
    priority: int
    created: float
    # members rejected and parked: uid -> (namespace, name, why then)
    rejected: dict[str, tuple[str, str, str]] = field(default_factory=dict)
    kicked_at: float = float("-inf")
    updated: float = 0.0  # last rejection
    checked: tuple[int, float] = (-1, float("-inf"))  # snapshot generation and time of a dry run
    reason: str = ""  # the last reason given (for `gangplank why`)


@dataclass
class Outcomes:
    """What happened since the adapter last looked (for metrics); drained by `take_outcomes`."""

    planned: int = 0
    expired: int = 0
    failures: Counter[str] = field(default_factory=Counter)
    start_latencies: list[float] = field(default_factory=list)


def _sub(free: dict[str, int], taken: Mapping[str, int]) -> None:
    for name, amount in taken.items():
        free[name] = free.get(name, 0) - amount


class GangScheduler:
    def __init__(self, config: GangConfig | None = None) -> None:
        self.config = config or GangConfig()
        self.plans: dict[str, Plan] = {}
        self.waiting: dict[str, Waiting] = {}
        self.hold: Hold | None = None
        self.cooldown: dict[str, float] = {}
        self.avoid: dict[str, dict[str, set[str]]] = {}  # gang -> uid -> nodes refused to it
        # Gangs found not to fit, with the state they were tried on and the reason: kube-scheduler
        # retries every parked member on every pod created, and the answer cannot differ until
        # capacity, reservations or the hold change (a plan at 5,000 nodes is tens of ms).
        self._no_room = NoRoom()
        self._reserved_version = 0
        self._released_version = 0  # bumped when a reservation shrinks or goes (see no_room)
        self._held_nodes = HeldNodes()  # what they leave for a pod of no plan, per state
        self.outcomes = Outcomes()
        self.notices = Outbox()  # state changes to tell people (drained by the adapter)
        # The first gang in line takes the hold itself; with queues, the coordinator gives it.
        self.auto_hold = True
        self.topology: Topology = DEFAULT_TOPOLOGY  # the policy's tiers (the coordinator sets them)
        self._reserved: dict[str, dict[str, dict[str, int]]] = {}  # node -> gang -> resources
        self._planned_parked: dict[str, tuple[str, str]] = {}  # uid -> (namespace, name)
        # Planned pods parked while their plan's victims leave: uid -> (namespace, name, plan)
        self._awaiting: dict[str, tuple[str, str, str]] = {}
        self._synced: tuple[int, float] = (-1, float("-inf"))  # generation, next deadline

    # ---- bookkeeping ------------------------------------------
    def sync(self, snapshot: Snapshot, now: float) -> None:
        """Turn bound members into usage, release expired plans and holds."""
        if not (self.plans or self.hold or self.waiting):
            return
        if snapshot.generation == self._synced[0] and now <= self._synced[1]:
            return  # nothing changed and nothing is due
        for key, plan in list(self.plans.items()):
            members = {p.uid: p for p in snapshot.groups.get(key, ())}
            for uid in list(plan.assignments):
                pod = members.get(uid)
                # A member the cache has not seen yet keeps its place (kube-scheduler asked about
                # it first); one that is bound, finished, being deleted or gone gives it up.
                if pod is None:
                    if uid in plan.seen:
                        del plan.assignments[uid]
                elif not pod.active or pod.node_name is not None:
                    del plan.assignments[uid]
                else:
                    plan.seen.add(uid)
            if not plan.assignments:
                del self.plans[key]
                gang = resolve_gang(snapshot, key)
                if not gang.problem and len(gang.bound) >= gang.size:
                    self.outcomes.start_latencies.append(max(0.0, now - plan.last_member_created))
            elif now > plan.deadline:
                del self.plans[key]
                self.outcomes.expired += 1
                self.notices.expired(key)
        self.cooldown = {k: until for k, until in self.cooldown.items() if until > now}
        if self.hold is not None and (now > self.hold.deadline or self.hold.key in self.plans):
            if now > self.hold.deadline:
                self.cooldown[self.hold.key] = now + self.config.hold_seconds
            self.hold = None
        # A gang whose pods are all gone stops waiting (not at once: the cache may lag behind the
        # pods kube-scheduler asks about).
        for key in [
            k
            for k, w in self.waiting.items()
            if not snapshot.groups.get(k) and now - w.updated > FORGET_SECONDS
        ]:
            del self.waiting[key]
        if len(self._no_room) > 2 * len(self.waiting) + 256:
            self._no_room.keep_only(self.waiting)
        self._reindex()
        self._synced = (snapshot.generation, self._next_due())

    def _next_due(self) -> float:
        times = [plan.deadline for plan in self.plans.values()]
        if self.hold is not None:
            times.append(self.hold.deadline)
        times += [w.updated + FORGET_SECONDS for w in self.waiting.values()]
        return min(times, default=float("inf"))

    def _reindex(self) -> None:
        self._synced = (-1, float("-inf"))  # the state changed: the next sync must look
        reserved: dict[str, dict[str, dict[str, int]]] = {}
        for key, plan in self.plans.items():
            for uid, node in plan.assignments.items():
                per_gang = reserved.setdefault(node, {}).setdefault(key, {})
                for name, amount in plan.requests[uid].items():
                    per_gang[name] = per_gang.get(name, 0) + amount
        if reserved != self._reserved:
            self._reserved_version += 1
            if shrunk(self._reserved, reserved):
                self._released_version += 1
        self._reserved = reserved

    def free_for(
        self, node: NodeInfo, gang_key: str | None, only: Collection[str] | None = None
    ) -> dict[str, int]:
        """A node's capacity as `gang_key` (or a pod of no gang) may use it; `only` limits it to
        the resources that matter (planning asks for those of the gang: five times faster)."""
        allocatable, requested = node.allocatable, node.requested
        names = allocatable if only is None else only
        free = {name: allocatable.get(name, 0) - requested.get(name, 0) for name in names}
        for key, taken in self._reserved.get(node.name, {}).items():
            if key != gang_key:
                _sub(free, taken)
        if self.hold is not None and self.hold.key != gang_key:
            _sub(free, self.hold.held_on(node.name, free, node))
        return free

    # ---- filter ------------------------------------------
    def filter(
        self, snapshot: Snapshot, pod: PodInfo, names: Sequence[str], now: float
    ) -> FilterResult:
        self.sync(snapshot, now)
        key = group_key(pod)
        if key is None:
            solo = self.plans.get(single_key(pod.namespace, pod.name))
            if solo is not None and pod.uid in solo.assignments:
                return self._planned_answer(snapshot, solo, pod, names)
            return self._filter_other(snapshot, pod, names, single_key(pod.namespace, pod.name))
        gang = resolve_gang(snapshot, key, asking=pod)
        if gang.problem:
            return self._reject(gang, pod, names, "invalid", gang.problem, now)
        if gang.basic:
            return self._filter_other(snapshot, pod, names, key)
        plan = self.plans.get(key)
        if plan is not None and pod.uid in plan.assignments:
            node = plan.assignments[pod.uid]
            if node in names or plan.leaving(snapshot):
                return self._planned_answer(snapshot, plan, pod, names)
            # kube-scheduler's own filters refuse the planned node (something gangplank does
            # not model, such as pod affinity or a volume): plan again without it.
            self.avoid.setdefault(key, {}).setdefault(pod.uid, set()).add(node)
            del self.plans[key]
            self._reindex()
        elif plan is not None:
            return self._add_to_plan(snapshot, gang, plan, pod, names, now)
        if len(gang.members) < gang.size:
            return self._reject(
                gang,
                pod,
                names,
                "incomplete",
                f"gang {gang.name}: {len(gang.members)} of {gang.size} pods exist",
                now,
            )
        return self._plan(snapshot, gang, pod, names, now)

    def _plan(
        self,
        snapshot: Snapshot,
        gang: Gang,
        pod: PodInfo,
        names: Sequence[str],
        now: float,
    ) -> FilterResult:
        avoid = self.avoid.get(gang.key, {})
        state = self._no_room_state(snapshot, gang, avoid)
        known = self._no_room.reason(gang.key, state)
        if known is not None:
            self.outcomes.failures["no-room"] += 1
            if self.auto_hold:
                self._maybe_hold(snapshot, gang, now)
            return self._reject(gang, pod, names, "no-room", known, now)
        bound = gang.bound
        needed = gang.needed
        offered = set(names)
        wanted = {name for p in gang.pending for name in p.requests}
        for _ in range(3):
            attempt = plan_in_topology(
                snapshot,
                gang.pending,
                needed,
                partial(self.free_for, gang_key=gang.key, only=wanted),
                self.topology,
                gang.constraint,
                bound=bound,
                prefer=near_members(snapshot, bound, self.topology),
                avoid=avoid,
                bounded=True,
            )
            if not attempt.ok:
                self.outcomes.failures["no-room"] += 1
                reason = f"gang {gang.name}: {attempt.reason}"
                self._no_room.remember(gang.key, state, reason)
                if self.auto_hold:
                    self._maybe_hold(snapshot, gang, now)
                return self._reject(gang, pod, names, "no-room", reason, now)
            node = attempt.assignments.get(pod.uid)
            if node is None or node in offered:
                break
            avoid = {**avoid, pod.uid: {*avoid.get(pod.uid, ()), node}}
        else:
            return self._reject(
                gang,
                pod,
                names,
                "no-room",
                f"gang {gang.name}: the nodes planned for this pod were not "
                "offered by kube-scheduler",
                now,
            )
        members = {p.uid: p for p in gang.members}
        self.plans[gang.key] = Plan(
            key=gang.key,
            assignments=dict(attempt.assignments),
            requests={uid: members[uid].requests for uid in attempt.assignments},
            deadline=now + (gang.timeout_seconds or self.config.reservation_seconds),
            last_member_created=max(p.created for p in gang.members),
        )
        self.outcomes.planned += 1
        self.notices.planned(gang.key, attempt.assignments.values(), len(attempt.assignments))
        waiting = self.waiting.pop(gang.key, None)
        if waiting is not None:
            # Members parked before the plan existed must be retried now: their node is waiting.
            self._planned_parked.update(
                {
                    uid: (ns, name)
                    for uid, (ns, name, _) in waiting.rejected.items()
                    if uid in attempt.assignments and uid != pod.uid
                }
            )
        self.avoid.pop(gang.key, None)
        if self.hold is not None and self.hold.key == gang.key:
            self.hold = None
        self._reindex()
        if node is None:  # the gang is placed without this extra pod; the plan stands
            return self._reject_extra(gang, pod, names, now)
        return self._admit(gang, node, names)

    def _fits_now(self, snapshot: Snapshot, gang: Gang) -> bool:
        """A dry run of the gang's plan (no avoided nodes: fewer limits, so a "no" holds for the
        real plan too, and is remembered for it)."""
        state = self._no_room_state(snapshot, gang, self.avoid.get(gang.key, {}))
        if self._no_room.reason(gang.key, state) is not None:
            return False
        attempt = plan_in_topology(
            snapshot,
            gang.pending,
            gang.needed,
            partial(
                self.free_for,
                gang_key=gang.key,
                only={r for p in gang.pending for r in p.requests},
            ),
            self.topology,
            gang.constraint,
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
        changes = (snapshot.capacity_generation, self._reserved_version, avoid_state(avoid))
        return self._state(snapshot, gang, changes)

    def _no_room_state(
        self, snapshot: Snapshot, gang: Gang, avoid: Mapping[str, set[str]]
    ) -> RoomState | None:
        """The state a "does not fit" of `gang` is remembered with: for a gang of alike members
        that may go anywhere, only what gives capacity back (see `core/gangs/no_room.py`)."""
        if avoid or snapshot.freed_generation < 0 or not alike(gang.pending):
            return self.room_state(snapshot, gang, avoid)
        gives_back = (snapshot.freed_generation, snapshot.node_generation, self._released_version)
        return self._state(snapshot, gang, ("alike", *gives_back))

    def _state(self, snapshot: Snapshot, gang: Gang, changes: tuple[object, ...]) -> RoomState:
        hold = self.hold
        return (
            snapshot.origin,
            *changes,
            (hold.key, hold.deadline) if hold is not None else None,
            tuple(p.uid for p in gang.members),
            len(gang.bound),
            self.topology,
        )

    def _planned_answer(
        self, snapshot: Snapshot, plan: Plan, pod: PodInfo, names: Sequence[str]
    ) -> FilterResult:
        result = planned_answer(snapshot, plan, pod, names)
        if result.passed:
            self._awaiting.pop(pod.uid, None)
        else:
            # Parked now; nudged once the victims are gone (their deletion may reach
            # kube-scheduler before it reaches gangplank's cache).
            self._awaiting[pod.uid] = (pod.namespace, pod.name, plan.key)
        return result

    def drop_plan(self, key: str) -> None:
        if self.plans.pop(key, None) is not None:
            self._reindex()

    def install_plan(
        self,
        key: str,
        pods: Sequence[PodInfo],
        assignments: Mapping[str, str],
        victims: Mapping[str, str],
        deadline: float,
        restored: bool = False,
    ) -> None:
        """Reserve `assignments` for job `key` (made by preemption: `victims` must leave first;
        `restored`: made by an earlier process, read back from its record)."""
        self.plans[key] = Plan.with_victims(key, pods, assignments, victims, deadline)
        if not restored:
            self.outcomes.planned += 1
        if self.hold is not None and self.hold.key == key:
            self.hold = None
        waiting = self.waiting.pop(key, None)
        if waiting is not None:
            self._planned_parked.update(
                {uid: (ns, name) for uid, (ns, name, _) in waiting.rejected.items()}
            )
        self._reindex()

    def _add_to_plan(
        self,
        snapshot: Snapshot,
        gang: Gang,
        plan: Plan,
        pod: PodInfo,
        names: Sequence[str],
        now: float,
    ) -> FilterResult:
        """A member the plan does not know (an extra pod, a replacement for a deleted one): place
        it on what is left, without moving members already admitted to their nodes."""
        offered = set(names)
        attempt = plan_gang(
            snapshot,
            [pod],
            1,
            partial(self.free_for, gang_key=None, only=list(pod.requests)),
            prefer=near_members(snapshot, gang.bound, self.topology),
            avoid={pod.uid: snapshot.nodes.keys() - offered},
            bounded=True,
        )
        node = attempt.assignments.get(pod.uid)
        if node is None:
            return self._reject_extra(gang, pod, names, now)
        plan.assignments[pod.uid] = node
        plan.requests[pod.uid] = pod.requests
        self._reindex()
        return self._admit(gang, node, names)

    def _reject_extra(
        self, gang: Gang, pod: PodInfo, names: Sequence[str], now: float
    ) -> FilterResult:
        reason = (
            f"gang {gang.name}: its {gang.size} members are placed; no room for this "
            f"extra pod ({describe(pod.requests)})"
        )
        return self._reject(gang, pod, names, "no-room", reason, now)

    def _admit(self, gang: Gang, node: str, names: Sequence[str]) -> FilterResult:
        # The other nodes are dropped without an entry (kube-scheduler counts that as
        # unresolvable): the pod is scheduled, so no one reads reasons, and 5,000 copies of one
        # would only slow the answer.
        return FilterResult(passed=[node])

    def _reject(
        self, gang: Gang, pod: PodInfo, names: Sequence[str], kind: str, reason: str, now: float
    ) -> FilterResult:
        waiting = self.waiting.get(gang.key)
        if waiting is None:
            waiting = self.waiting[gang.key] = Waiting(gang.key, gang.priority, gang.created)
        waiting.updated = now
        waiting.rejected[pod.uid] = (pod.namespace, pod.name, kind)
        if reason:
            waiting.reason = reason
        if kind != "no-room":
            self.outcomes.failures[kind] += 1
        return FilterResult(passed=[], unresolvable=dict.fromkeys(names, reason))

    def note_waiting(self, gang: Gang, pod: PodInfo, kind: str, now: float) -> None:
        """A member kube-scheduler parked without asking gangplank's filter (its own filters
        found no room): it is nudged like a rejected one once its gang can go ahead."""
        self._reject(gang, pod, (), kind, "", now)

    @staticmethod
    def _rank(
        snapshot: Snapshot, key: str, priority: int, created: float
    ) -> tuple[int, int, float, str]:
        """Order of the line: partly bound gangs (to be completed) first, then priority, age."""
        partly_bound = any(p.node_name for p in snapshot.groups.get(key, ()) if p.active)
        return (0 if partly_bound else 1, -priority, created, key)

    def _maybe_hold(self, snapshot: Snapshot, gang: Gang, now: float) -> None:
        """Make `gang` the holder if it is first in line among gangs that lack room."""
        if self.cooldown.get(gang.key, 0.0) > now:
            return
        current = self.hold
        rank = self._rank(snapshot, gang.key, gang.priority, gang.created)
        if current is not None and current.key != gang.key:
            holder = self.waiting.get(current.key)
            if (
                holder is not None
                and self._rank(snapshot, holder.key, holder.priority, holder.created) <= rank
            ):
                return
        if current is not None and current.key == gang.key:
            return
        self._start_hold(snapshot, gang.key, gang.pending, now)

    def _start_hold(
        self, snapshot: Snapshot, key: str, pending: Sequence[PodInfo], now: float
    ) -> None:
        # Built while the previous hold (if any) still stands: see `Hold.begin`.
        hold = Hold.begin(
            snapshot,
            key,
            pending,
            now + self.config.hold_seconds,
            partial(self.free_for, gang_key=key),
            self._taken_nodes(snapshot),
        )
        if hold is not None:
            self.hold = hold
            self._synced = (-1, float("-inf"))
            self.notices.holding(key, self.config.hold_seconds)

    def _taken_nodes(self, snapshot: Snapshot) -> set[str]:
        """Nodes where reservations or the hold may take capacity now."""
        taken = set(self._reserved)
        if self.hold is not None:
            taken |= self.hold.touched(snapshot.nodes)
        return taken

    def take_hold(
        self, snapshot: Snapshot, key: str, pending: Sequence[PodInfo], now: float
    ) -> bool:
        """Give the hold to job `key` (chosen by the caller: the head of the fair line), unless it
        holds it already or its last hold lapsed less than `hold_seconds` ago."""
        if self.hold is not None and self.hold.key == key:
            return True
        if self.cooldown.get(key, 0.0) > now or key in self.plans:
            return False
        self._start_hold(snapshot, key, pending, now)
        return True

    def release_hold(self) -> None:
        if self.hold is not None:
            self.hold = None
            self._synced = (-1, float("-inf"))

    # ---- pods of no gang ------------------------------------------
    def _filter_other(
        self, snapshot: Snapshot, pod: PodInfo, names: Sequence[str], key: str
    ) -> FilterResult:
        result = decide_filter(snapshot, pod, names)
        if not self._reserved and self.hold is None:
            return result
        nodes = snapshot.nodes
        watched = self._taken_nodes(snapshot)
        outsider = key not in self.plans and (self.hold is None or self.hold.key != key)
        if outsider:
            # Only nodes where reservations or the hold take something can refuse this pod.
            hold = self.hold
            taken = self._held_nodes.taken(
                snapshot,
                (self._reserved_version, (hold.key, hold.deadline) if hold is not None else None),
                watched,
                partial(self.free_for, gang_key=None),
            )
            candidates: Iterable[str] = taken  # the few nodes where something is taken

        else:
            taken = {}
            candidates = watched.intersection(result.passed)
        blocked: dict[str, str] = {}
        for name in candidates:
            node = nodes.get(name)
            if node is None:
                continue
            holders = list(self._reserved.get(name, {}))
            if self.hold is not None and name in self.hold.usable and self.hold.key != key:
                holders.append(self.hold.key)
            if not holders:
                continue
            free = taken[name] if outsider else self.free_for(node, key)
            if not fits(pod.requests, free):
                jobs = ", ".join(sorted({job_name(h) for h in holders}))
                blocked[name] = f"pod {pod.key}: capacity on node {name} is reserved for {jobs}"
        if not blocked:
            return result
        return refuse(result, blocked)

    # ---- prioritize and bind ------------------------------------------
    def scores(self, snapshot: Snapshot, pod: PodInfo, names: Sequence[str]) -> NodeScores:
        node = self.planned_node(pod)
        if node is not None:
            return NodeScores(0, {node: MAX_SCORE})
        return NodeScores()  # no plan: gangplank has no preference

    def check_bind(self, request: BindRequest) -> BindDecision:
        for plan in self.plans.values():
            node = plan.assignments.get(request.uid)
            if node is not None and node != request.node:
                return BindDecision(
                    False, f"pod {request.key} is planned on node {node}, not {request.node}"
                )
        return BindDecision(True)

    def bound(self, request: BindRequest) -> None:
        """A member was bound: its reservation is usage now (the store counts it)."""
        for plan in self.plans.values():
            if plan.assignments.pop(request.uid, None) is not None:
                self._reindex()
                return

    # ---- retries and visibility ------------------------------------------
    def kick_candidates(self, snapshot: Snapshot, now: float) -> list[tuple[str, str]]:
        """Parked members whose gang can now go ahead: kube-scheduler must retry them now."""
        self.sync(snapshot, now)
        out = list(self._planned_parked.values())
        self._planned_parked.clear()
        for uid, (namespace, name, key) in list(self._awaiting.items()):
            plan = self.plans.get(key)
            if plan is None or uid not in plan.assignments:
                del self._awaiting[uid]
            elif not plan.leaving(snapshot):
                out.append((namespace, name))
                del self._awaiting[uid]
        for key, waiting in self.waiting.items():
            if not waiting.rejected or now - waiting.kicked_at < self.config.kick_interval_seconds:
                continue
            gang = resolve_gang(snapshot, key)
            if gang.problem:
                continue
            # Parked members learn what changed: an invalid gang became valid, an incomplete one
            # complete, or one that lacked room fits now (then they start).
            complete = len(gang.members) >= gang.size
            whys = {why for _, _, why in waiting.rejected.values()}
            fits_now = False
            generation, checked_at = waiting.checked
            # A dry run costs a plan (milliseconds at 5,000 nodes): only when the cluster changed,
            # and at most once per kick interval per gang.
            if (
                complete
                and "no-room" in whys
                and generation != snapshot.generation
                and now - checked_at >= self.config.kick_interval_seconds
            ):
                waiting.checked = (snapshot.generation, now)
                fits_now = self._fits_now(snapshot, gang)
            ready = (
                {"invalid"}
                | ({"incomplete"} if complete else set())
                | ({"no-room"} if fits_now else set())
            )
            pending = {p.uid for p in gang.pending}
            chosen = {
                uid: ref
                for uid, ref in waiting.rejected.items()
                if uid in pending and ref[2] in ready
            }
            if not chosen:
                continue
            out += [(namespace, name) for namespace, name, _ in chosen.values()]
            for uid in chosen:
                del waiting.rejected[uid]
            waiting.kicked_at = now
        return out

    def planned_node(self, pod: PodInfo) -> str | None:
        plan = self.plans.get(job_key(pod))
        return plan.assignments.get(pod.uid) if plan is not None else None

    def reservations(self) -> dict[str, dict[str, int]]:
        """Requests of planned members not bound yet, by gang."""
        out: dict[str, dict[str, int]] = {}
        for key, plan in self.plans.items():
            amounts = out[key] = {}
            for uid in plan.assignments:
                for name, amount in plan.requests[uid].items():
                    amounts[name] = amounts.get(name, 0) + amount
        return out

    def take_outcomes(self) -> Outcomes:
        outcomes, self.outcomes = self.outcomes, Outcomes()
        return outcomes

    def reserved_pods(self) -> int:
        return sum(len(p.assignments) for p in self.plans.values())

    def gang_counts(self, snapshot: Snapshot) -> dict[str, int]:
        """Gangs waiting, planned, running (all members bound), and partial: running with fewer
        members than their size and no plan to complete them (should read zero)."""
        running = partial_ = 0
        for key, pods in snapshot.groups.items():
            if key in self.plans or key in self.waiting:
                continue
            members = [p for p in pods if p.active]
            bound = [p for p in members if p.node_name]
            if members and len(bound) == len(members):
                running += 1
            if bound:
                gang = resolve_gang(snapshot, key)
                if not gang.problem and len(bound) < gang.size:
                    partial_ += 1
        return {
            "waiting": len(self.waiting),
            "planned": len(self.plans),
            "running": running,
            "partial": partial_,
        }
