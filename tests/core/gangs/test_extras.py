"""Where a member its gang's plan does not know goes, alone: an elastic gang's extra waits at the
maximum, where no node has room, and where the fair line keeps the room (docs/elastic.md)."""

from __future__ import annotations

from typing import Any

import pytest

from extender.core.gangs.extras import extras_only, no_one_waits, place_extra
from extender.core.gangs.gang import Gang, resolve_gang
from extender.core.model.snapshot import NodeInfo, PodInfo, Snapshot
from extender.core.placement.topology import DEFAULT_TOPOLOGY
from extender.kube.convert import pod_from_api
from tests.builders import node, pod
from tests.cluster import Cluster

KEY = "gangplank:default/t"


def elastic(count: int, most: int, bound: int) -> list[dict[str, Any]]:
    """`count` pods of gang t (8 GPUs each, minimum 2, maximum `most`), the first `bound` of them
    running."""
    annotations = {"gangplank.io/gang-size": "2", "gangplank.io/gang-max": str(most)}
    pods = [
        pod(f"t-{i}", gpu=8, labels={"gangplank.io/gang": "t"}, annotations=annotations)
        for i in range(count)
    ]
    for i, raw in enumerate(pods[:bound]):
        raw["spec"]["nodeName"] = f"n{i}"
        raw["status"] = {"phase": "Running"}
    return pods


def free(info: NodeInfo) -> dict[str, int]:
    return {r: info.allocatable.get(r, 0) - info.requested.get(r, 0) for r in info.allocatable}


def setting(count: int, nodes: int, bound: int, most: int = 4) -> tuple[Snapshot, Gang, PodInfo]:
    pods = elastic(count, most=most, bound=bound)
    snapshot = Cluster(nodes=[node(f"n{i}", gpu=8) for i in range(nodes)], pods=pods).snap()
    extra = pod_from_api(pods[-1])
    return snapshot, resolve_gang(snapshot, KEY, asking=extra), extra


@pytest.mark.parametrize(
    ("most", "bound", "expected"),
    [(4, 2, True), (4, 1, False), (2, 2, False)],
    ids=[
        "an elastic gang whose minimum runs waits for extras only",
        "an elastic gang whose minimum is not all running waits for its minimum",
        "a gang whose maximum is its minimum has no extras",
    ],
)
def test_a_gang_waits_for_extras_only_once_its_elastic_minimum_runs(
    most: int, bound: int, expected: bool
) -> None:
    assert extras_only(setting(count=3, nodes=3, bound=bound, most=most)[1]) is expected


def test_an_extra_takes_a_free_node_kube_scheduler_offers() -> None:
    snapshot, gang, extra = setting(count=3, nodes=4, bound=2)
    node_name, reason = place_extra(
        snapshot, gang, extra, ["n2"], None, free, DEFAULT_TOPOLOGY, no_one_waits
    )
    assert (node_name, reason) == ("n2", "")


@pytest.mark.parametrize(
    ("count", "nodes", "bound", "most", "says"),
    [
        (3, 2, 2, 4, "gang default/t: its 2 members are placed; no room for this extra pod"),
        (4, 4, 3, 3, "gang default/t: 3 members are placed, its maximum of 3; this pod waits"),
    ],
    ids=["with no node free the extra waits", "at the maximum a further pod waits"],
)
def test_an_extra_waits_saying_why(
    count: int, nodes: int, bound: int, most: int, says: str
) -> None:
    snapshot, gang, extra = setting(count, nodes, bound, most)
    offered = sorted(snapshot.nodes)
    node_name, reason = place_extra(
        snapshot, gang, extra, offered, None, free, DEFAULT_TOPOLOGY, no_one_waits
    )
    assert node_name is None
    assert reason.startswith(says)


def test_an_extra_waits_where_the_fair_line_keeps_the_room() -> None:
    snapshot, gang, extra = setting(count=3, nodes=3, bound=2)

    def kept(snapshot: Snapshot, gang: Gang, pod: PodInfo, node: str) -> str:
        return f"the room on node {node} is kept for default/head"

    node_name, reason = place_extra(
        snapshot, gang, extra, ["n2"], None, free, DEFAULT_TOPOLOGY, kept
    )
    assert node_name is None
    assert reason == (
        "gang default/t: its 2 members are placed; this extra pod waits, the room on node n2 is "
        "kept for default/head"
    )
