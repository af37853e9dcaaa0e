"""What reservations and the hold leave for a pod of no plan (`core/gangs/held_nodes.py`): only
the watched nodes where something is taken, worked out once per snapshot and state."""

from __future__ import annotations

from extender.core.gangs.held_nodes import HeldNodes
from extender.core.model.resources import GPU
from extender.core.model.snapshot import NodeInfo
from tests.builders import node
from tests.cluster import Cluster


def four_gpus_reserved_on_n0(node: NodeInfo) -> dict[str, int]:
    free = {name: node.free(name) for name in node.allocatable}
    if node.name == "n0":
        free[GPU] -= 4
    return free


def nothing_reserved(node: NodeInfo) -> dict[str, int]:
    return {name: node.free(name) for name in node.allocatable}


def test_only_watched_nodes_where_something_is_taken_are_listed_with_what_is_left() -> None:
    cluster = Cluster(nodes=[node("n0"), node("n1"), node("n2")])
    taken = HeldNodes().taken(cluster.snap(), 1, ["n0", "n1", "gone"], four_gpus_reserved_on_n0)
    assert list(taken) == ["n0"]
    assert taken["n0"][GPU] == 4


def test_the_same_snapshot_and_state_give_the_same_answer_without_looking_again() -> None:
    cluster = Cluster(nodes=[node("n0"), node("n1")])
    held = HeldNodes()
    snapshot = cluster.snap()
    first = held.taken(snapshot, 1, ["n0", "n1"], four_gpus_reserved_on_n0)
    assert held.taken(snapshot, 1, ["n0", "n1"], nothing_reserved) is first, "kept"
    assert held.taken(snapshot, 2, ["n0", "n1"], nothing_reserved) == {}, "a new state: again"
