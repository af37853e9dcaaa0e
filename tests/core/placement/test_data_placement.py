"""Data-aware placement in the core (docs/data-placement.md): which datasets a job reads, which
nodes cache them and how near each node is, the policy's link budgets as parsed, and plans that
go to the data and keep within the budgets."""

from __future__ import annotations

from typing import Any

import pytest

from extender.core.engine import Engine
from extender.core.model.snapshot import NodeInfo, PodInfo
from extender.core.placement.budgets import Budget, judge
from extender.core.placement.data import (
    Dataset,
    cached_nodes,
    data_of,
    locality,
    where_cached,
)
from extender.core.placement.data_plan import plan_near_data
from extender.core.placement.rules import parse_topology
from extender.core.placement.topology import DEFAULT_TOPOLOGY, NO_CONSTRAINT, Tier, Topology
from extender.kube.convert import pod_from_api
from tests.builders import gang_pods, node, pod
from tests.cluster import Cluster

RACK = "network.gangplank.io/rack"
ZONE = "topology.kubernetes.io/zone"
RACK_TIER = next(t for t in DEFAULT_TOPOLOGY.tiers if t.name == "rack")


class Refused(Exception):
    pass


def fail(where: str, why: str) -> Exception:
    return Refused(f"{where}: {why}")


def racks(layout: dict[str, int], cached: dict[str, dict[str, str]] | None = None) -> list[Any]:
    """Nodes <rack>-<i> of 8 GPUs per rack in `layout`, zone z1 for racks r1/r2, z2 beyond."""
    out = []
    for rack, count in layout.items():
        for i in range(count):
            name = f"{rack}-{i}"
            zone = "z1" if rack in ("r1", "r2") else "z2"
            labels = {RACK: rack, ZONE: zone, **(cached or {}).get(name, {})}
            out.append(node(name, gpu=8, cpu="64", labels=labels))
    return out


CACHED = {"data.gangplank.io/imagenet": "cached"}


def free(node: NodeInfo) -> dict[str, int]:
    return {k: v - node.requested.get(k, 0) for k, v in node.allocatable.items()}


def infos(members: list[dict[str, Any]]) -> list[PodInfo]:
    return [pod_from_api(m) for m in members]


# ---- what a job reads ------------------------------------------


@pytest.mark.parametrize(
    ("written", "expected"),
    [
        ({"annotations": {"gangplank.io/dataset": "imagenet"}}, [("ml", "imagenet")]),
        ({"labels": {"gangplank.io/dataset": "imagenet"}}, [("ml", "imagenet")]),
        (
            {"annotations": {"gangplank.io/dataset": "shared/c4, wiki"}},
            [("shared", "c4"), ("ml", "wiki")],
        ),
        ({}, []),
    ],
    ids=[
        "an annotation names a dataset of the pod's namespace",
        "a label does as well",
        "several datasets, one of another namespace, are comma-separated",
        "a pod that names none reads none",
    ],
)
def test_the_datasets_a_pod_reads_are_named_on_it(
    written: dict[str, Any], expected: list[tuple[str, str]]
) -> None:
    info = pod_from_api(pod("p", namespace="ml", **written))
    assert [(d.namespace, d.name) for d in data_of([info]).datasets] == expected


def test_a_claim_is_a_fluid_dataset_when_a_node_carries_fluids_cache_label_for_it() -> None:
    fluid = {"fluid.io/s-ml-imagenet": "true"}
    snap = Cluster(nodes=[node("a", labels=fluid), node("b")]).snap()
    member = pod("p", namespace="ml")
    member["spec"]["volumes"] = [
        {"name": "d", "persistentVolumeClaim": {"claimName": "imagenet"}},
        {"name": "s", "persistentVolumeClaim": {"claimName": "scratch"}},
        {"name": "e", "emptyDir": {}},
    ]
    info = pod_from_api(member)
    assert info.claims == ("imagenet", "scratch")
    need = data_of([info], snap)
    assert need.datasets == (Dataset("ml", "imagenet"),), "scratch is cached nowhere: no dataset"
    assert cached_nodes(snap, need) == {"a"}


@pytest.mark.parametrize(
    ("policy", "required", "problem"),
    [
        ("required", True, ""),
        ("Preferred", False, ""),
        ("always", False, "gangplank.io/dataset-policy: 'always' must be required or preferred"),
    ],
    ids=["required makes it a constraint", "preferred is the default", "anything else is refused"],
)
def test_the_dataset_policy_is_required_or_preferred(
    policy: str, required: bool, problem: str
) -> None:
    notes = {"gangplank.io/dataset": "imagenet", "gangplank.io/dataset-policy": policy}
    need = data_of([pod_from_api(pod("p", annotations=notes))])
    assert (need.required, need.problem) == (required, problem)


def test_nodes_rank_by_closeness_to_the_data_node_then_rack_then_zone() -> None:
    snap = Cluster(nodes=racks({"r1": 2, "r2": 2, "r3": 2}, {"r1-0": CACHED})).snap()
    need = data_of([pod_from_api(pod("p", annotations={"gangplank.io/dataset": "imagenet"}))])
    ranks = locality(snap, need, DEFAULT_TOPOLOGY)
    assert ranks["r1-0"] < ranks["r1-1"] < ranks["r2-0"], "node, then its rack, then its zone"
    assert ranks["r2-0"] == ranks["r2-1"] and "r3-0" not in ranks, "another zone: far"
    assert where_cached(snap, need, DEFAULT_TOPOLOGY) == "1 node in rack r1"


# ---- the policy's budgets ------------------------------------------


def test_a_budget_is_read_per_tier_and_quantity_in_bytes_per_second() -> None:
    topology = parse_topology(
        {"budgets": {"rack": {"storageRead": {"perDomain": "200Gi", "mode": "required"}}}}, fail
    )
    assert topology.tiers == DEFAULT_TOPOLOGY.tiers, "tiers may be left to their defaults"
    (budget,) = topology.budgets
    assert (budget.tier.name, budget.quantity, budget.per_domain) == (
        "rack",
        "storageRead",
        200 << 30,
    )
    assert budget.required and budget.annotation == "gangplank.io/storage-read"


@pytest.mark.parametrize(
    ("budgets", "refusal"),
    [
        ({"aisle": {"storageRead": {"perDomain": "1Gi"}}}, "topology.budgets.aisle: names no tier"),
        (
            {"rack": {"storage_read": {"perDomain": "1Gi"}}},
            "topology.budgets.rack.storage_read: a quantity is named in camelCase",
        ),
        (
            {"rack": {"storageRead": {"mode": "required"}}},
            "topology.budgets.rack.storageRead.perDomain: is missing",
        ),
        (
            {"rack": {"storageRead": {"perDomain": "200GB"}}},
            "topology.budgets.rack.storageRead.perDomain: '200GB' is not a quantity; did you mean",
        ),
        (
            {"rack": {"storageRead": {"perDomain": "1Gi", "mode": "strict"}}},
            "topology.budgets.rack.storageRead.mode: 'strict' must be preferred or required",
        ),
        (
            {"rack": {"storageRead": "1Gi"}},
            "topology.budgets.rack.storageRead: must be a map with perDomain",
        ),
        ({"rack": []}, "topology.budgets.rack: must be a map of quantity name"),
    ],
    ids=[
        "a tier the topology does not have",
        "a quantity not in camelCase",
        "a budget without its amount",
        "an amount that is no Kubernetes quantity",
        "a mode that is neither preferred nor required",
        "a bare amount instead of a map",
        "a tier's budgets that are not a map",
    ],
)
def test_a_wrong_budget_is_refused_with_its_field(budgets: dict[str, Any], refusal: str) -> None:
    with pytest.raises(Refused) as refused:
        parse_topology({"budgets": budgets}, fail)
    assert str(refused.value).startswith(refusal)


def test_a_budget_counts_running_and_reserved_pods_of_each_domain() -> None:
    reads = {"gangplank.io/storage-read": "8Gi"}
    nodes = racks({"r1": 2, "r2": 2})
    running = [
        pod(f"run{i}", node="r1-0", gpu=1, phase="Running", annotations=reads) for i in range(2)
    ]
    done = pod("done", node="r2-0", gpu=1, phase="Succeeded", annotations=reads)
    snap = Cluster(nodes=nodes, pods=[*running, done]).snap()
    reserved = [(pod_from_api(pod("planned", annotations=reads)), "r2-1")]
    budget = Budget(RACK_TIER, "storageRead", 20 << 30, required=True)
    verdict = judge(snap, {budget: 8 << 30}, reserved)
    assert verdict.refused == {"r1-0", "r1-1"}, "r1: 16Gi/s in use + 8 > 20; r2: 8 + 8 fits"
    (overrun,) = verdict.overruns
    assert str(overrun) == (
        "rack r1 storageRead budget 20Gi/s: 16Gi/s in use, this job needs 8Gi/s"
    )


# ---- plans ------------------------------------------


def plan(
    nodes: list[Any],
    members: list[dict[str, Any]],
    topology: Topology = DEFAULT_TOPOLOGY,
    running: list[Any] | None = None,
) -> Any:
    snap = Cluster(nodes=nodes, pods=[*members, *(running or [])]).snap()
    pods = infos(members)
    return snap, plan_near_data(snap, pods, len(pods), free, topology, NO_CONSTRAINT, lambda: [])


def reading(members: list[dict[str, Any]], **notes: str) -> list[dict[str, Any]]:
    for member in members:
        member["metadata"]["annotations"].update(notes)
    return members


def test_a_gang_goes_to_the_rack_that_caches_its_data_among_equally_tight_ones() -> None:
    nodes = racks({"r1": 2, "r2": 2, "r3": 2}, {"r3-1": CACHED})
    _, attempt = plan(
        nodes, reading(gang_pods("g", 2, gpu=8), **{"gangplank.io/dataset": "imagenet"})
    )
    assert attempt.ok and set(attempt.assignments.values()) == {"r3-0", "r3-1"}


def test_a_gang_without_data_is_planned_as_before() -> None:
    nodes = racks({"r1": 2, "r2": 2, "r3": 2}, {"r3-1": CACHED})
    _, attempt = plan(nodes, gang_pods("g", 2, gpu=8))
    assert attempt.ok and set(attempt.assignments.values()) == {"r1-0", "r1-1"}


def test_a_single_member_goes_on_the_node_that_caches_its_data() -> None:
    nodes = racks({"r1": 3}, {"r1-2": CACHED})
    _, attempt = plan(
        nodes, reading(gang_pods("g", 1, gpu=8), **{"gangplank.io/dataset": "imagenet"})
    )
    assert list(attempt.assignments.values()) == ["r1-2"]


@pytest.mark.parametrize(
    ("cached", "busy", "reason"),
    [
        ({}, [], "dataset imagenet is cached on no node (nodes that cache it carry"),
        (
            {"r2-0": CACHED, "r2-1": CACHED},
            ["r2-0", "r2-1"],
            "dataset imagenet is cached on no node with room "
            "(cached on 2 nodes in rack r2, all full)",
        ),
        (
            {"r2-0": CACHED, "r2-1": CACHED},
            ["r2-0"],
            "dataset imagenet is cached on no node with room "
            "(cached on 2 nodes in rack r2, room there for 1 of 2 pods)",
        ),
    ],
    ids=[
        "cached nowhere",
        "cached only on full nodes",
        "cached on too few free nodes",
    ],
)
def test_a_required_dataset_that_no_node_with_room_caches_is_no_plan_and_the_reason_names_it(
    cached: dict[str, dict[str, str]], busy: list[str], reason: str
) -> None:
    nodes = racks({"r1": 2, "r2": 2}, cached)
    running = [pod(f"busy-{n}", node=n, gpu=8, phase="Running") for n in busy]
    notes = {"gangplank.io/dataset": "imagenet", "gangplank.io/dataset-policy": "required"}
    _, attempt = plan(nodes, reading(gang_pods("g", 2, gpu=8), **notes), running=running)
    assert not attempt.ok and attempt.reason.startswith(reason)


READS = {"gangplank.io/storage-read": "8Gi"}


def readers_on_r1_0() -> list[dict[str, Any]]:
    """Three running pods of 2 GPUs on r1-0 that read 8Gi/s each: 24Gi/s of rack r1's budget."""
    return [
        pod(f"run{i}", node="r1-0", gpu=2, phase="Running", annotations=READS) for i in range(3)
    ]


def budget(mode: str) -> Topology:
    return Topology(
        DEFAULT_TOPOLOGY.tiers, (Budget(RACK_TIER, "storageRead", 24 << 30, mode == "required"),)
    )


@pytest.mark.parametrize(
    ("mode", "placed"),
    [("preferred", {"r2-0"}), ("required", {"r2-0"})],
    ids=["a preferred budget sends it to the rack with room", "a required one as well"],
)
def test_a_job_goes_to_a_rack_with_budget_left_though_a_fuller_node_is_elsewhere(
    mode: str, placed: set[str]
) -> None:
    reads, running = READS, readers_on_r1_0()
    _, attempt = plan(
        racks({"r1": 1, "r2": 1}), reading(gang_pods("g", 1, gpu=2), **reads), budget(mode), running
    )
    assert set(attempt.assignments.values()) == placed


def test_a_preferred_budget_gives_way_when_nothing_else_fits_and_a_required_one_does_not() -> None:
    reads, running = READS, readers_on_r1_0()
    members = reading(gang_pods("g", 1, gpu=2), **reads)
    _, attempt = plan(racks({"r1": 1}), members, budget("preferred"), running)
    assert list(attempt.assignments.values()) == ["r1-0"]
    _, attempt = plan(
        racks({"r1": 1}), reading(gang_pods("g", 1, gpu=2), **reads), budget("required"), running
    )
    assert attempt.reason == (
        "no rack has storageRead budget left (rack r1 storageRead budget 24Gi/s: 24Gi/s in use, "
        "this job needs 8Gi/s)"
    )


def test_a_storage_read_that_is_no_quantity_is_the_reason_the_job_waits() -> None:
    members = reading(gang_pods("g", 1, gpu=2), **{"gangplank.io/storage-read": "fast"})
    _, attempt = plan(racks({"r1": 1}), members, budget("preferred"))
    assert attempt.reason.startswith(
        "gangplank.io/storage-read on pod g-0: 'fast' is not a quantity"
    )


def test_a_tier_of_its_own_may_carry_a_budget() -> None:
    aisle = Tier("aisle", ("example.com/aisle",))
    topology = parse_topology(
        {
            "tiers": [{"name": "aisle", "labels": ["example.com/aisle"]}],
            "budgets": {"aisle": {"netWrite": {"perDomain": "10G"}}},
        },
        fail,
    )
    assert topology.budgets == (Budget(aisle, "netWrite", 10**10),)
    assert topology.budgets[0].annotation == "gangplank.io/net-write"


# ---- single pods: scores and filter ------------------------------------------


def engine_with(topology: Topology = DEFAULT_TOPOLOGY) -> Engine:
    engine = Engine()
    engine.placer.topology = engine.scorer.topology = topology
    return engine


def test_a_single_pod_scores_highest_where_its_data_is_then_in_its_rack() -> None:
    cluster = Cluster(nodes=racks({"r1": 2, "r2": 2}, {"r2-1": CACHED}))
    names = sorted(cluster.snap().nodes)
    asking = pod_from_api(pod("p", gpu=8, annotations={"gangplank.io/dataset": "imagenet"}))
    scores = engine_with().scores(cluster.snap(), asking, names).table(names)
    assert scores["r2-1"] > scores["r2-0"] > scores["r1-0"] == scores["r1-1"]


def test_a_plain_pod_scores_as_before_where_data_is_cached() -> None:
    cluster = Cluster(nodes=racks({"r1": 2, "r2": 2}, {"r2-1": CACHED}))
    names = sorted(cluster.snap().nodes)
    scores = engine_with().scores(cluster.snap(), pod_from_api(pod("p", gpu=8)), names)
    assert len(set(scores.table(names).values())) == 1


def test_a_single_pod_scores_a_rack_with_budget_left_over_a_fuller_node_in_a_full_rack() -> None:
    reads, running = READS, readers_on_r1_0()
    cluster = Cluster(nodes=racks({"r1": 1, "r2": 1}), pods=running)
    asking = pod_from_api(pod("p", gpu=2, annotations=reads))
    scores = engine_with(budget("preferred")).scores(cluster.snap(), asking, ["r1-0", "r2-0"])
    table = scores.table(["r1-0", "r2-0"])
    assert table["r2-0"] > table["r1-0"]
    plain = engine_with().scores(cluster.snap(), asking, ["r1-0", "r2-0"]).table(["r1-0", "r2-0"])
    assert plain["r1-0"] > plain["r2-0"], "without the budget the fuller node wins"


def test_a_single_pod_that_requires_its_data_passes_only_the_nodes_that_cache_it() -> None:
    cluster = Cluster(nodes=racks({"r1": 2, "r2": 2}, {"r2-1": CACHED}))
    notes = {"gangplank.io/dataset": "imagenet", "gangplank.io/dataset-policy": "required"}
    asking = pod_from_api(pod("p", gpu=8, annotations=notes))
    result = engine_with().filter(cluster.snap(), asking, ["r1-0", "r2-0", "r2-1"], 0.0)
    assert result.passed == ["r2-1"]
    assert result.unresolvable["r1-0"] == (
        "dataset imagenet is not cached on this node (gangplank.io/dataset-policy: required); "
        "cached on 1 node in rack r2"
    )


def test_a_single_pod_is_refused_the_racks_a_required_budget_has_no_room_for() -> None:
    reads, running = READS, readers_on_r1_0()
    cluster = Cluster(nodes=racks({"r1": 2, "r2": 1}), pods=running)
    asking = pod_from_api(pod("p", gpu=2, annotations=reads))
    result = engine_with(budget("required")).filter(
        cluster.snap(), asking, ["r1-0", "r1-1", "r2-0"], 0.0
    )
    assert result.passed == ["r2-0"]
    assert result.unresolvable["r1-1"] == (
        "rack r1 storageRead budget 24Gi/s: 24Gi/s in use, this job needs 8Gi/s"
    )


def test_a_cluster_without_gpus_still_scores_a_pod_nearest_its_data_first() -> None:
    cached = {"data.gangplank.io/logs": "cached"}
    cluster = Cluster(nodes=[node("a", gpu=0), node("b", gpu=0, labels=cached)])
    asking = pod_from_api(pod("p", annotations={"gangplank.io/dataset": "logs"}))
    assert engine_with().scores(cluster.snap(), asking, ["a", "b"]).table(["a", "b"]) == {
        "a": 9,
        "b": 10,
    }


def test_a_job_no_rack_in_budget_has_room_for_names_the_racks_left_out_over_budget() -> None:
    full = [pod("full", node="r2-0", gpu=8, phase="Running")]
    members = reading(gang_pods("g", 1, gpu=2), **READS)
    _, attempt = plan(
        racks({"r1": 1, "r2": 1}), members, budget("required"), [*readers_on_r1_0(), *full]
    )
    assert attempt.reason.startswith("needs 1 pod of 2 nvidia.com/gpu")
    assert attempt.reason.endswith(
        "; 1 rack left out over their storageRead budget (rack r1 storageRead budget 24Gi/s: "
        "24Gi/s in use, this job needs 8Gi/s)"
    )
