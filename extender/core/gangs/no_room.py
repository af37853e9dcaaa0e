"""Gangs that do not fit, remembered with the capacity state they were tried on.

kube-scheduler retries every parked member of a gang on every pod created in the cluster, and
gangplank's periodic pass asks whether each waiting gang fits now. On a busy cluster the answer
is "no" again and again, and each plan reads every node. A gang that did not fit is remembered
with what its plan depended on (`RoomState`: the capacity of the nodes, everyone's reservations,
the hold, the gang's members and where some of them must not go); the same state gives the same
answer, without planning again.

A gang whose pending members are all alike (same requests and constraints) and may go anywhere
has a plan exactly when, in some domain its topology allows, the members that fit node by node
add up to enough; other pods taking more can only lower those counts. So its "no" holds until
something is given back (a pod finished or gone, a node added or changed, a reservation released,
the hold moved), and its state counts only those (`Snapshot.freed_generation`): the binds of
everyone else, most of a busy cluster's changes, no longer make it plan again. Its reason string
is then the one of its last plan (counts of nodes short of room may have grown since).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from extender.core.model.snapshot import PodInfo
from extender.core.placement.candidates import constraints

# What a gang's plan depends on; equal states give equal answers (see GangPlacer.room_state).
RoomState = tuple[object, ...]

LIMIT = 10_000  # gangs remembered (forgotten all at once beyond)


def avoid_state(avoid: Mapping[str, Collection[str]] | None) -> tuple[object, ...]:
    """The part of the state that says which members must not go where."""
    return tuple(sorted((uid, tuple(sorted(nodes))) for uid, nodes in (avoid or {}).items()))


def alike(pods: Sequence[PodInfo]) -> bool:
    """Whether `pods` are interchangeable to a plan: the same requests and the same constraints
    (`candidates.constraints`), the cheap comparison of requests first."""
    if not pods:
        return False
    first = pods[0]
    wanted = constraints(first)
    return all(p.requests == first.requests and constraints(p) == wanted for p in pods)


def shrunk(
    before: Mapping[str, Mapping[str, Mapping[str, int]]],
    after: Mapping[str, Mapping[str, Mapping[str, int]]],
) -> bool:
    """Whether some reservation (node -> gang -> resources) of `before` is smaller or gone in
    `after`: capacity went back to others."""
    for node, gangs in before.items():
        now = after.get(node, {})
        for key, taken in gangs.items():
            kept = now.get(key, {})
            if any(kept.get(name, 0) < amount for name, amount in taken.items()):
                return True
    return False


class NoRoom:
    def __init__(self) -> None:
        self._known: dict[str, tuple[RoomState, str]] = {}

    def reason(self, key: str, state: RoomState | None) -> str | None:
        """Why gang `key` did not fit when last tried on this very state; None: not known."""
        if state is None:
            return None
        known = self._known.get(key)
        return known[1] if known is not None and known[0] == state else None

    def __len__(self) -> int:
        return len(self._known)

    def keep_only(self, keys: Collection[str]) -> None:
        """Forget every gang but `keys` (the ones still waiting): a gang that started or left
        needs no memory of why it did not fit."""
        self._known = {k: v for k, v in self._known.items() if k in keys}

    def remember(self, key: str, state: RoomState | None, reason: str) -> None:
        if state is None:
            return
        if len(self._known) >= LIMIT:
            self._known.clear()
        self._known[key] = (state, reason)
