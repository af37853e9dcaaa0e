"""The hold: capacity kept for the gang first in line, so that it is not starved.

Only capacity that frees up *after* the hold began is kept (up to what the gang needs): what was
free already stays usable by others (backfill), so a gang that cannot fit does not idle the nodes
it cannot use yet. The gang scheduler bounds how long a hold lasts.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

from extender.core.candidates import could_hold
from extender.core.model import NodeInfo, PodInfo, Snapshot

# What a node has left for the holder: free_of(node, only=resources)
FreeOf = Callable[..., dict[str, int]]


@dataclass
class Hold:
    key: str  # the gang
    deadline: float
    needs: dict[str, int]  # the gang's total request per resource: the cap of what is held
    usable: frozenset[str]  # nodes the gang could use
    baseline: dict[str, dict[str, int]]  # free capacity per node when the hold began

    @classmethod
    def begin(
        cls,
        snapshot: Snapshot,
        key: str,
        pending: Sequence[PodInfo],
        deadline: float,
        free_of: FreeOf,
    ) -> Hold | None:
        """A hold for job `key`'s `pending` pods: on the nodes they may use, up to what they ask
        for together. `free_of(node, only=...)` is measured while any previous hold still stands,
        so what that one kept counts as freed for the new holder: a hold that moves does not
        hand its capacity to everyone. None when nothing is pending."""
        if not pending:
            return None
        # Nodes that could ever take a member (its constraints allow it, its allocatable is big
        # enough): remembered per node generation, so a hold that moves reads no node for this.
        usable = frozenset(could_hold(snapshot, pending))
        needs: dict[str, int] = {}
        for p in pending:
            for name, amount in p.requests.items():
                needs[name] = needs.get(name, 0) + amount
        nodes: Mapping[str, NodeInfo] = snapshot.nodes
        only: Collection[str] = needs
        baseline = {name: free_of(nodes[name], only=only) for name in usable}
        return cls(key, deadline, needs, usable, baseline)

    def held_on(self, node: str, free: Mapping[str, int]) -> dict[str, int]:
        """What the hold keeps on `node`, given what is `free` there for someone else."""
        if node not in self.usable:
            return {}
        base = self.baseline.setdefault(node, {})
        held: dict[str, int] = {}
        for name, cap in self.needs.items():
            if name not in free:  # a resource the asker does not need: nothing to learn
                continue
            have = free[name]
            start = base.get(name, 0)
            if have < start:  # others used capacity that was free already: fair game
                base[name] = have
            elif have > start:
                held[name] = min(have - start, cap)
        return held
