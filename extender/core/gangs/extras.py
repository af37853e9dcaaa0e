"""Where a member a gang's plan does not know goes: an elastic gang's extra (beyond its minimum, up
to its maximum) or a replacement for a deleted member.

It is placed alone on what is left after every other job's reservations and the hold, on a node
kube-scheduler offers, near the gang's bound and planned members, without moving members already
admitted. An elastic gang's extra waits at the maximum, and where `spare` (the fair line's say)
finds the room kept for the first job in line. The placer installs or extends the plan.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from extender.core.gangs.gang import Gang
from extender.core.gangs.plans import Plan
from extender.core.model.snapshot import PodInfo, Snapshot
from extender.core.placement.planner import FreeOf, describe, plan_gang
from extender.core.placement.topology import Topology, near_nodes

# Why an elastic gang's extra member may not take `node` ("": no waiting job needs it).
Spare = Callable[[Snapshot, Gang, PodInfo, str], str]


def no_one_waits(snapshot: Snapshot, gang: Gang, pod: PodInfo, node: str) -> str:
    """The `Spare` without a fair line: no waiting job keeps room from an extra."""
    return ""


def extras_only(gang: Gang) -> bool:
    """An elastic gang whose minimum is bound: what it waits for are extras."""
    return gang.elastic and gang.whole


def place_extra(
    snapshot: Snapshot,
    gang: Gang,
    pod: PodInfo,
    names: Sequence[str],
    plan: Plan | None,
    free: FreeOf,
    topology: Topology,
    spare: Spare,
) -> tuple[str | None, str]:
    """The node for `pod`, a member `gang`'s `plan` (None: its minimum is bound) does not know,
    on `free` (what is left for a pod of no plan); else None and why it waits."""
    planned = dict(plan.assignments) if plan is not None else {}
    if gang.elastic:
        placed = {p.uid for p in gang.bound} | planned.keys()
        if len(placed) >= gang.most:
            return None, (
                f"gang {gang.name}: {len(placed)} members are placed, its maximum of "
                f"{gang.most}; this pod waits until one of them ends"
            )
    offered = set(names)
    nodes = snapshot.nodes
    near = [nodes[n] for p in gang.bound if (n := p.node_name) is not None and n in nodes]
    near += [nodes[n] for n in planned.values() if n in nodes]
    attempt = plan_gang(
        snapshot,
        [pod],
        1,
        free,
        prefer=near_nodes(snapshot, near, topology),
        avoid={pod.uid: snapshot.nodes.keys() - offered},
        bounded=True,
    )
    node = attempt.assignments.get(pod.uid)
    if node is None:
        return None, no_room_for_extra(gang, pod)
    if gang.elastic:
        needed = spare(snapshot, gang, pod, node)
        if needed:
            return None, (
                f"gang {gang.name}: its {gang.size} members are placed; this extra pod "
                f"waits, {needed}"
            )
    return node, ""


def no_room_for_extra(gang: Gang, pod: PodInfo) -> str:
    """Why a member beyond `gang`'s placed ones waits: no node has room for it."""
    return (
        f"gang {gang.name}: its {gang.size} members are placed; no room for this "
        f"extra pod ({describe(pod.requests)})"
    )
