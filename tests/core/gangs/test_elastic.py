"""Elastic gangs: the minimum all or nothing as any gang, then extras one by one, up to the
maximum, only on room no waiting job needs, near the gang's members (docs/elastic.md)."""

from __future__ import annotations

from typing import Any

import pytest

from extender.core.engine import Engine
from extender.core.queues.policy_parse import parse_policy
from extender.kube.convert import pod_from_api
from tests.builders import gpus, node, pod, policy_doc, queue
from tests.cluster import Cluster
from tests.core.gangs.test_placer import bind, filter_all, gpu_nodes, names

RACK = "network.gangplank.io/rack"


def elastic(gang: str, count: int, least: int, most: int, **kwargs: Any) -> list[dict[str, Any]]:
    """`count` pods of gangplank gang `gang`, 8 GPUs each, minimum `least`, maximum `most`."""
    labels = {"gangplank.io/gang": gang, **kwargs.pop("labels", {})}
    annotations = {"gangplank.io/gang-size": str(least), "gangplank.io/gang-max": str(most)}
    return [
        pod(f"{gang}-{i}", gpu=8, labels=labels, annotations=annotations, **kwargs)
        for i in range(count)
    ]


def test_a_gang_of_min_2_and_max_4_on_room_for_3_starts_its_minimum_then_one_extra() -> None:
    members = elastic("t", 4, 2, 4)
    cluster = Cluster(nodes=gpu_nodes(3), pods=members)
    gs = Engine()
    kept = filter_all(gs, cluster, members)
    assert sorted(len(nodes) for nodes in kept.values()) == [0, 1, 1, 1]
    assert len({n for nodes in kept.values() for n in nodes}) == 3
    left = next(name for name, nodes in kept.items() if not nodes)
    raw = next(m for m in members if m["metadata"]["name"] == left)
    result = gs.filter(cluster.snap(), pod_from_api(raw), names(cluster), 1.0)
    assert "its 2 members are placed; no room for this extra pod" in result.unresolvable["n0"]


def test_extras_stop_at_the_maximum_even_with_room_left() -> None:
    members = elastic("t", 5, 2, 4)
    cluster = Cluster(nodes=gpu_nodes(6), pods=members)
    gs = Engine()
    kept = filter_all(gs, cluster, members)
    assert sorted(len(nodes) for nodes in kept.values()) == [0, 1, 1, 1, 1]
    result = gs.filter(cluster.snap(), pod_from_api(members[4]), names(cluster), 1.0)
    assert "4 members are placed, its maximum of 4" in result.unresolvable["n0"]


def test_an_extra_made_after_the_minimum_is_bound_starts_on_spare_room() -> None:
    members = elastic("t", 2, 2, 4)
    cluster = Cluster(nodes=gpu_nodes(3), pods=members)
    gs = Engine()
    for raw, nodes in zip(members, filter_all(gs, cluster, members).values(), strict=True):
        bind(cluster, gs, raw, nodes[0])
    extra = elastic("t", 3, 2, 4)[2]
    cluster.add("pods", extra)
    result = gs.filter(cluster.snap(), pod_from_api(extra), names(cluster), 1.0)
    assert result.passed == ["n2"]


def test_an_extra_goes_to_the_rack_of_its_gangs_members_when_it_can() -> None:
    nodes = [
        *gpu_nodes(2, prefix="a", labels={RACK: "a"}),
        *gpu_nodes(3, prefix="b", labels={RACK: "b"}),
    ]
    running = [
        {**raw, "spec": {**raw["spec"], "nodeName": f"b{i}"}, "status": {"phase": "Running"}}
        for i, raw in enumerate(elastic("t", 2, 2, 4))
    ]
    extra = elastic("t", 3, 2, 4)[2]
    cluster = Cluster(nodes=nodes, pods=[*running, extra])
    result = Engine().filter(cluster.snap(), pod_from_api(extra), names(cluster), 1.0)
    assert result.passed == ["b2"]


def in_queue(raw: dict[str, Any], q: str) -> dict[str, Any]:
    labels = {**raw["metadata"]["labels"], "gangplank.io/queue": q}
    return {**raw, "metadata": {**raw["metadata"], "labels": labels}}


def engine_with(*queues: dict[str, Any]) -> Engine:
    return Engine(policy=parse_policy(policy_doc(*queues), "policy.yaml"))


def test_quota_admits_the_minimum_asking_only_for_the_minimum_then_counts_each_extra() -> None:
    members = [in_queue(raw, "research") for raw in elastic("t", 4, 2, 4)]
    cluster = Cluster(nodes=gpu_nodes(4), pods=members)
    gs = engine_with(queue("research", max=gpus(24)))
    kept = filter_all(gs, cluster, members)
    assert sorted(len(nodes) for nodes in kept.values()) == [0, 1, 1, 1]
    left = next(raw for raw in members if not kept[raw["metadata"]["name"]])
    result = gs.filter(cluster.snap(), pod_from_api(left), names(cluster), 1.0)
    assert "queue research: nvidia.com/gpu 24 of max 24 in use" in result.unresolvable["n0"]


@pytest.mark.parametrize(
    "head_gpus,starts",
    [(8, False), (16, True)],
    ids=[
        "an extra does not take the room the first job in line needs",
        "an extra takes room the first job in line could not use anyway",
    ],
)
def test_an_extra_starts_only_where_the_first_job_in_line_still_fits(
    head_gpus: int, starts: bool
) -> None:
    running = [
        in_queue(
            {**raw, "spec": {**raw["spec"], "nodeName": f"n{i}"}, "status": {"phase": "Running"}},
            "research",
        )
        for i, raw in enumerate(elastic("t", 2, 2, 4, created="2026-12-01T09:00:00Z"))
    ]
    extra = in_queue(elastic("t", 3, 2, 4)[2], "research")
    head = pod("head", gpu=head_gpus, labels={"gangplank.io/queue": "vision"})
    cluster = Cluster(
        nodes=[node(f"n{i}", gpu=8, cpu="64") for i in range(3)], pods=[*running, extra, head]
    )
    gs = engine_with(queue("research"), queue("vision"))
    result = gs.filter(cluster.snap(), pod_from_api(extra), names(cluster), 1.0)
    if starts:
        assert result.passed == ["n2"]
    else:
        assert not result.passed
        assert (
            "this extra pod waits, the room on node n2 is kept for pod default/head, first in "
            "line in queue vision" in result.unresolvable["n0"]
        )


def test_an_extra_never_takes_the_room_the_hold_keeps_for_the_gang_first_in_line() -> None:
    running = [
        {**raw, "spec": {**raw["spec"], "nodeName": f"n{i}"}, "status": {"phase": "Running"}}
        for i, raw in enumerate(elastic("t", 2, 2, 4))
    ]
    ending = pod("ending", gpu=8, node="n2", phase="Running")
    big = elastic("big", 2, 2, 2)
    cluster = Cluster(nodes=gpu_nodes(3), pods=[*running, ending, *big])
    gs = Engine()
    assert filter_all(gs, cluster, big[:1]) == {"big-0": []}
    assert gs.holder.current is not None and gs.holder.current.key == "gangplank:default/big"
    cluster.delete("pods", ending)  # n2 frees up after the hold began: kept for big
    extra = elastic("t", 3, 2, 4)[2]
    cluster.add("pods", extra)
    result = gs.filter(cluster.snap(), pod_from_api(extra), names(cluster), 1.0)
    assert not result.passed
    assert "no room for this extra pod" in result.unresolvable["n2"]
