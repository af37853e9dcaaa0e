"""What reserved and held nodes leave for a pod of no plan, worked out once per state.

A pod of no gang (or of a gang without a plan) must not take capacity planned for a gang or kept
by the hold. Every such pod sees the same: for each node where reservations or the hold take
something, what is left. kube-scheduler asks about pass-through pods all the time, so the answer
is kept until the snapshot, the reservations or the hold change; nodes where nothing is taken are
left out (such a pod sees them as they are, and kube-scheduler checks that). A new snapshot with the
same reservations and hold works out again only the nodes that changed (a node unchanged is the
same object from one snapshot to the next).
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from extender.core.model.snapshot import NodeInfo, Snapshot


class HeldNodes:
    def __init__(self) -> None:
        self._cached: tuple[Snapshot | None, object, dict[str, dict[str, int]]] = (None, None, {})

    def taken(
        self,
        snapshot: Snapshot,
        state: object,
        watched: Collection[str],
        free_of: Callable[[NodeInfo], dict[str, int]],
    ) -> dict[str, dict[str, int]]:
        """Node -> what is left of it, for the watched nodes where something is taken. `state`
        stands for the reservations and the hold (equal states: equal answers on one snapshot);
        `free_of` is what a node has left for a pod of no plan."""
        cached, cached_state, before = self._cached
        if cached_state != state or cached is None or cached.origin != snapshot.origin:
            cached, before = None, {}
        elif cached is snapshot:
            return before
        old = cached.nodes if cached is not None else {}
        nodes = snapshot.nodes
        taken = {}
        for name in watched:
            node = nodes.get(name)
            if node is None:
                continue
            if old.get(name) is node:
                if name in before:
                    taken[name] = before[name]
                continue
            free = free_of(node)
            if any(amount != node.free(r) for r, amount in free.items()):
                taken[name] = free
        self._cached = (snapshot, state, taken)
        return taken
