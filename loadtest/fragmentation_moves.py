"""Consolidation on the trace model of `loadtest/fragmentation.py`: when a pod fits no node, move
placed pods so that it does, with the move planner gangplank runs
(`extender/core/consolidation/plan.py: plan_moves`).

Movable here: a placed pod asking for whole GPUs, fewer than its node has (less than a whole
node), with no GPU-model constraint (it may land on any GPU node). Not movable: pods sharing a GPU
(`gpu_milli` < 1000: the planner counts whole GPUs), pods pinned to a GPU model, pods without GPUs,
pods holding every GPU of their node. Consolidation is tried for a waiting pod of whole GPUs when
the eligible nodes (its GPU models, enough GPUs) have that many whole GPUs free in total; at most
`LIMIT` pods move for it. The plan counts GPUs only; before anything moves, every moved pod and
the waiting pod are checked against their new node's CPU, memory and GPUs, in the plan's order,
and the whole plan is undone if one does not fit (no pod is moved by a plan that fails); the
planner is asked again without that node, `TRIES` times at most.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from extender.core.consolidation.plan import MovePlan, plan_moves
from extender.core.placement.fragmentation import WHOLE, Shape, fits

if TYPE_CHECKING:
    from loadtest.fragmentation import SimNode

LIMIT = 8  # pods (each its own job in this model) moved for one waiting pod at most
TRIES = 4  # plans for one waiting pod, each without the nodes where the last did not fit
WAITING = "waiting"


def whole_free(node: SimNode) -> int:
    return sum(1 for g in node.gpu_free if g == WHOLE)


def movable(shape: Shape, node: SimNode) -> bool:
    return shape.gpus >= 1 and shape.milli == WHOLE and not shape.models and shape.gpus < node.gpus


@dataclass
class Placed:
    node: SimNode
    shape: Shape
    gpus: list[int]  # the indices of the GPUs it holds


class Consolidator:
    """The placed pods and which of them may move; carries out a plan that makes room."""

    def __init__(self, nodes: list[SimNode], limit: int = LIMIT) -> None:
        self.nodes = {node.name: node for node in nodes}
        self.limit = limit
        self.placed: dict[str, Placed] = {}
        self.movable: dict[str, dict[str, tuple[str, int]]] = {}  # job key -> {uid: (node, GPUs)}
        self.moved = 0  # pods moved so far
        self.gained = 0  # pods placed thanks to a plan
        self.rejected = 0  # plans undone: a pod did not fit its new node's CPU or memory

    def record(self, uid: str, node: SimNode, shape: Shape, gpus: list[int]) -> None:
        self.placed[uid] = Placed(node, shape, gpus)
        if movable(shape, node):
            self.movable[uid] = {uid: (node.name, shape.gpus)}

    def make_room(self, uid: str, shape: Shape) -> SimNode | None:
        """Move pods so that `shape` fits, and place it: its node, or None (nothing moved)."""
        if shape.gpus < 1 or shape.milli < WHOLE:
            return None
        eligible = {
            name: whole_free(node)
            for name, node in self.nodes.items()
            if node.gpus >= shape.gpus and (not shape.models or node.model in shape.models)
        }
        if sum(eligible.values()) < shape.gpus:
            return None
        candidates = (
            self.movable
            if len(eligible) == len(self.nodes)
            else {k: pods for k, pods in self.movable.items() if pods[k][0] in eligible}
        )
        for _ in range(TRIES):
            plan = plan_moves(eligible, [(WAITING, shape.gpus)], candidates, self.limit)
            if plan is None:
                return None
            placed = self._carry_out(plan, uid, shape)
            if isinstance(placed, str):  # the node that did not fit: plan without it
                eligible.pop(placed, None)
                continue
            return placed
        return None

    def _carry_out(self, plan: MovePlan, uid: str, shape: Shape) -> SimNode | str:
        """The waiting pod's node once the plan is carried out, or (nothing moved) the name of
        the node where a pod did not fit."""
        done: list[tuple[str, Placed]] = []  # (moved uid, where it was)
        for _, pods in plan.moves:
            for moved, (_, to) in pods.items():
                before = self.placed[moved]
                target = self.nodes[to]
                if not fits(target.state, before.shape):
                    self._undo(done)
                    return to
                gpus = target.place(before.shape, None)
                before.node.unplace(before.shape, before.gpus)
                self.placed[moved] = Placed(target, before.shape, gpus)
                done.append((moved, before))
        node = self.nodes[plan.assignments[WAITING]]
        if not fits(node.state, shape):
            self._undo(done)
            return node.name
        for moved, _ in done:
            self.movable[moved] = {
                moved: (self.placed[moved].node.name, self.placed[moved].shape.gpus)
            }
        self.moved += len(done)
        self.gained += 1
        self.record(uid, node, shape, node.place(shape, None))
        return node

    def _undo(self, done: list[tuple[str, Placed]]) -> None:
        for moved, before in reversed(done):
            now = self.placed[moved]
            now.node.unplace(now.shape, now.gpus)
            before.node.take(before.shape, before.gpus)
            self.placed[moved] = before
        self.rejected += 1
