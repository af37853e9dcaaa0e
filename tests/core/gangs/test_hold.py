"""The hold (`core/gangs/hold.py`): capacity that frees up after it began is kept for the gang
first in line, up to what it needs; what was free already stays usable by others (backfill)."""

from __future__ import annotations

from collections.abc import Collection

from extender.core.gangs.hold import Hold
from extender.core.model.resources import GPU
from extender.core.model.snapshot import NodeInfo
from extender.kube.convert import pod_from_api
from tests.builders import gang_pods, node, pod
from tests.cluster import Cluster

BUSY = pod("busy", node="n0", gpu=8, phase="Running")
HALF = pod("half", node="n1", gpu=4, phase="Running")


def free_of(node: NodeInfo, only: Collection[str] | None = None) -> dict[str, int]:
    """What a node has free for the holder, nothing reserved by anyone else."""
    return {name: node.free(name) for name in (only if only is not None else node.allocatable)}


def a_hold(cluster: Cluster, gpus_each: int = 8) -> Hold:
    """Gang big's two members (8 GPUs each) get the hold, until t=100."""
    members = [pod_from_api(p) for p in gang_pods("big", 2, gpu=gpus_each)]
    hold = Hold.begin(cluster.snap(), "gangplank:default/big", members, 100.0, free_of)
    assert hold is not None
    return hold


def test_nothing_pending_is_no_hold() -> None:
    cluster = Cluster(nodes=[node("n0")])
    assert Hold.begin(cluster.snap(), "gangplank:default/big", [], 100.0, free_of) is None


def test_a_hold_needs_what_the_gang_asks_for_together_on_nodes_it_could_use() -> None:
    cluster = Cluster(nodes=[node("n0"), node("n1"), node("small", gpu=4)], pods=[BUSY, HALF])
    hold = a_hold(cluster)
    assert hold.needs[GPU] == 16
    assert hold.usable == {"n0", "n1"}, "a 4-GPU node can never take an 8-GPU member"


def test_what_was_free_when_the_hold_began_stays_usable_by_others() -> None:
    cluster = Cluster(nodes=[node("n0"), node("n1")], pods=[BUSY, HALF])
    hold = a_hold(cluster)
    n1 = cluster.snap().nodes["n1"]
    assert hold.held_on("n1", {GPU: 4}, n1) == {}, "4 GPUs were free already: backfill"
    assert hold.touched(cluster.snap().nodes) == frozenset(), "no node changed since"


def test_capacity_freed_after_the_hold_began_is_kept_up_to_what_the_gang_needs() -> None:
    cluster = Cluster(nodes=[node("n0"), node("n1")], pods=[BUSY, HALF])
    hold = a_hold(cluster, gpus_each=2)
    cluster.add("pods", {**BUSY, "status": {"phase": "Succeeded"}})
    n0 = cluster.snap().nodes["n0"]
    assert hold.touched(cluster.snap().nodes) == {"n0"}
    assert hold.held_on("n0", {GPU: 8}, n0) == {GPU: 4}, "8 freed, the gang needs 2 x 2"


def test_a_node_the_gang_cannot_use_is_never_held() -> None:
    cluster = Cluster(nodes=[node("n0"), node("small", gpu=4)], pods=[BUSY])
    hold = a_hold(cluster)
    assert hold.held_on("small", {GPU: 4}) == {}
