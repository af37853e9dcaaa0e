"""Pods of no plan (a pod alone, a member of a basic gang) against what plans and the hold keep.

kube-scheduler's own filters judged the node's capacity without knowing gangplank's reservations
or the hold: a pod that would take capacity reserved for a planned gang, or freed up for the gang
first in line, fails that node for good, with a reason that names the jobs it is kept for.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from extender.core.gangs.held_nodes import HeldNodes
from extender.core.gangs.holder import HoldKeeper
from extender.core.gangs.reservations import Reservations
from extender.core.model.answers import FilterResult, refuse
from extender.core.model.keys import job_name
from extender.core.model.snapshot import PodInfo, Snapshot
from extender.core.placement.fit import fits
from extender.core.placement.node_filter import decide_filter


class OutsiderCheck:
    def __init__(self, reservations: Reservations, holder: HoldKeeper) -> None:
        self._reservations = reservations
        self._holder = holder
        self._held_nodes = HeldNodes()  # what they leave for a pod of no plan, per state

    def taken_nodes(self, snapshot: Snapshot) -> set[str]:
        """Nodes where reservations or the hold may take capacity now."""
        taken = set(self._reservations.nodes())
        hold = self._holder.current
        if hold is not None:
            taken |= hold.touched(snapshot.nodes)
        return taken

    def check(
        self, snapshot: Snapshot, pod: PodInfo, names: Sequence[str], key: str
    ) -> FilterResult:
        """The nodes `pod` (of job `key`) may use among `names`."""
        result = decide_filter(snapshot, pod, names)
        reservations, hold = self._reservations, self._holder.current
        if not reservations.nodes() and hold is None:
            return result
        nodes = snapshot.nodes
        watched = self.taken_nodes(snapshot)
        outsider = key not in reservations and (hold is None or hold.key != key)
        if outsider:
            # Only nodes where reservations or the hold take something can refuse this pod.
            taken = self._held_nodes.taken(
                snapshot,
                (reservations.version, self._holder.state()),
                watched,
                lambda node: reservations.free_for(node, None, hold),
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
            holders = list(reservations.holders_on(name))
            if hold is not None and name in hold.usable and hold.key != key:
                holders.append(hold.key)
            if not holders:
                continue
            free = taken[name] if outsider else reservations.free_for(node, key, hold)
            if not fits(pod.requests, free):
                jobs = ", ".join(sorted({job_name(h) for h in holders}))
                blocked[name] = f"pod {pod.key}: capacity on node {name} is reserved for {jobs}"
        if not blocked:
            return result
        return refuse(result, blocked)
