"""The hold: capacity kept for the gang first in line, so that it is not starved.

Only capacity that frees up *after* the hold began is kept (up to what the gang needs): what was
free already stays usable by others (backfill), so a gang that cannot fit does not idle the nodes
it cannot use yet. The hold keeper (`holder.py`) bounds how long a hold lasts.

A hold is cheap to begin and to ask: only the nodes where something else takes capacity when it
begins (reservations, the hold it replaces) are measured then; any other node's starting point is
read from the node as it was, the first time it has changed, and a node no pod has come to or left
since is passed over (nothing freed up on it). So capacity a reservation took after the hold
began and gave back unused on such a node is not kept.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field

from extender.core.model.snapshot import NodeInfo, PodInfo, Snapshot
from extender.core.placement.candidates import could_hold

# What a node has left for the holder: free_of(node, only=resources)
FreeOf = Callable[..., dict[str, int]]


@dataclass
class Hold:
    key: str  # the gang
    deadline: float
    needs: dict[str, int]  # the gang's total request per resource: the cap of what is held
    usable: frozenset[str]  # nodes the gang could use
    # Free capacity per node when the hold began: measured at once where something else took
    # capacity then (reservations, a previous hold); elsewhere read from the node as it was
    # (`begun`) the first time the node is asked about.
    baseline: dict[str, dict[str, int]]
    begun: Mapping[str, NodeInfo]  # the nodes when the hold began (a snapshot's, unchanging)
    # `touched` for the last nodes asked about: (those nodes, the answer)
    _touched: tuple[object, frozenset[str]] = field(default=(None, frozenset()), repr=False)

    def __post_init__(self) -> None:
        self._measured = frozenset(self.baseline)  # the nodes measured when the hold began

    @classmethod
    def begin(
        cls,
        snapshot: Snapshot,
        key: str,
        pending: Sequence[PodInfo],
        deadline: float,
        free_of: FreeOf,
        taken: Collection[str] = (),
    ) -> Hold | None:
        """A hold for job `key`'s `pending` pods: on the nodes they may use, up to what they ask
        for together. `taken`: the nodes where reservations or a previous hold take capacity
        now; `free_of(node, only=...)` measures those at once, while any previous hold still
        stands, so what that one kept counts as freed for the new holder: a hold that moves does
        not hand its capacity to everyone. Every other node's baseline is its free capacity as
        the snapshot shows it, read when first needed. None when nothing is pending."""
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
        baseline = {
            name: free_of(nodes[name], only=only)
            for name in usable.intersection(taken)
            if name in nodes
        }
        return cls(key, deadline, needs, usable, baseline, nodes)

    def touched(self, nodes: Mapping[str, NodeInfo]) -> frozenset[str]:
        """The nodes where the hold may keep something: those measured when it began, and those
        that changed since (a node still as it was then has had nothing freed on it)."""
        asked, answer = self._touched
        if asked is nodes:
            return answer
        answer = frozenset(n for n in self.usable if not self._untouched(n, nodes.get(n)))
        self._touched = (nodes, answer)
        return answer

    def _untouched(self, name: str, node: NodeInfo | None) -> bool:
        """Still as it was when the hold began, and not measured then: nothing freed up on it."""
        return node is self.begun.get(name) and name not in self._measured

    def held_on(
        self, node: str, free: Mapping[str, int], now: NodeInfo | None = None
    ) -> dict[str, int]:
        """What the hold keeps on `node`, given what is `free` there for someone else. `now`:
        the node as the caller sees it; if it is still as it was when the hold began (and was
        not measured then) nothing has freed up on it, and nothing is kept."""
        if node not in self.usable:
            return {}
        if now is not None and self._untouched(node, now):
            return {}
        base = self.baseline.get(node)
        if base is None:
            then = self.begun.get(node)
            base = self.baseline[node] = (
                {name: then.free(name) for name in self.needs} if then is not None else {}
            )
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
