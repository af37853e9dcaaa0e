"""Plans read only the nodes that could take a member, and get the same answer as reading all."""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

from extender.cache.handlers import handlers_for
from extender.cache.store import ClusterStore
from extender.core.model.snapshot import NodeInfo, PodInfo, Snapshot
from extender.core.placement.candidates import allowed, candidates, could_hold
from extender.core.placement.planner import plan_gang
from extender.core.placement.topology import Tier, domains
from extender.core.preemption.victims import placeable_nodes
from tests.builders import node, pod, pod_info


def store_of(*nodes: dict[str, Any]) -> ClusterStore:
    store = ClusterStore()
    handlers_for(store)["nodes"].replace(list(nodes))
    return store


def tainted(name: str, **kwargs: Any) -> dict[str, Any]:
    out = node(name, **kwargs)
    out["spec"]["taints"] = [{"key": "dedicated", "value": "infra", "effect": "NoSchedule"}]
    return out


def unindexed(snapshot: Snapshot) -> Snapshot:
    """The same cluster as a snapshot made without the store's index (as the core's tests and
    the simulator's trial views make them): everything is worked out by reading every node."""
    return replace(snapshot, by_free_gpus=None, node_generation=-1)


def own_free(node: NodeInfo) -> dict[str, int]:
    return {r: node.free(r) for r in node.allocatable}


def test_the_store_files_each_node_under_its_free_gpus_and_moves_it_as_pods_come_and_go() -> None:
    store = store_of(node("n1", gpu=8), node("n2", gpu=8), node("cpu", gpu=0))
    pods = handlers_for(store)["pods"]
    assert store.snapshot().by_free_gpus == {8: frozenset({"n1", "n2"}), 0: frozenset({"cpu"})}
    pods.apply("ADDED", pod("a", node="n1", gpu=3, phase="Running", uid="ua"))
    assert store.snapshot().by_free_gpus == {
        8: frozenset({"n2"}),
        5: frozenset({"n1"}),
        0: frozenset({"cpu"}),
    }
    pods.apply("MODIFIED", pod("a", node="n1", gpu=3, phase="Succeeded", uid="ua"))
    assert store.snapshot().by_free_gpus == {8: frozenset({"n1", "n2"}), 0: frozenset({"cpu"})}
    handlers_for(store)["nodes"].apply("DELETED", node("n2"))
    assert store.snapshot().by_free_gpus == {8: frozenset({"n1"}), 0: frozenset({"cpu"})}


def test_the_node_generation_moves_with_labels_taints_and_new_nodes_but_not_with_pods() -> None:
    store = store_of(node("n1"))
    nodes, pods = handlers_for(store)["nodes"], handlers_for(store)["pods"]
    first = store.snapshot().node_generation
    pods.apply("ADDED", pod("a", node="n1", gpu=1, phase="Running", uid="ua"))
    nodes.apply("MODIFIED", node("n1"))  # a status update that changes nothing gangplank reads
    assert store.snapshot().node_generation == first
    nodes.apply("MODIFIED", node("n1", labels={"pool": "a"}))
    second = store.snapshot().node_generation
    nodes.apply("MODIFIED", tainted("n1", labels={"pool": "a"}))
    third = store.snapshot().node_generation
    nodes.apply("ADDED", node("n2"))
    assert first < second < third < store.snapshot().node_generation


def test_a_node_relabelled_is_seen_at_once_by_the_nodes_a_pod_may_use() -> None:
    store = store_of(node("n1", labels={"pool": "a"}), node("n2", labels={"pool": "b"}))
    wants_a = pod_info(gpu=1, node_selector={"pool": "a"})
    assert allowed(store.snapshot(), wants_a).names == frozenset({"n1"})
    handlers_for(store)["nodes"].apply("MODIFIED", node("n2", labels={"pool": "a"}))
    assert allowed(store.snapshot(), wants_a).names is None  # every node
    handlers_for(store)["nodes"].apply("MODIFIED", tainted("n1", labels={"pool": "a"}))
    found = allowed(store.snapshot(), wants_a)
    assert found.names == frozenset({"n2"})
    assert found.rejected == {"taint dedicated=infra:NoSchedule": 1}


def test_two_stores_never_share_what_was_worked_out_for_the_other() -> None:
    small = store_of(node("n1"))
    big = store_of(node("n1"), node("n2"))
    sample = pod_info(gpu=1)
    assert small.snapshot().node_generation == big.snapshot().node_generation
    assert could_hold(small.snapshot(), [sample]) == ("n1",)
    assert could_hold(big.snapshot(), [sample]) == ("n1", "n2")


def test_bounded_candidates_are_the_allowed_nodes_with_the_gpus_for_one_member() -> None:
    store = store_of(node("full", gpu=8), node("half", gpu=8), node("free", gpu=8), tainted("t"))
    pods = handlers_for(store)["pods"]
    pods.apply("ADDED", pod("a", node="full", gpu=8, phase="Running", uid="ua"))
    pods.apply("ADDED", pod("b", node="half", gpu=5, phase="Running", uid="ub"))
    found = candidates(store.snapshot(), pod_info(gpu=4), bounded=True)
    assert [n.name for n in found.nodes] == ["free"]
    assert (found.short_of_gpus, found.most_free_gpus) == (2, 3)
    assert found.rejected == {"taint dedicated=infra:NoSchedule": 1}


def random_cluster(rng: random.Random) -> ClusterStore:
    nodes = []
    for i in range(rng.randint(1, 40)):
        name = f"n{i:02d}"
        labels = {"pool": rng.choice("ab")}
        nodes.append(
            (tainted if rng.random() < 0.15 else node)(
                name, gpu=rng.choice([0, 4, 8]), labels=labels
            )
        )
    store = store_of(*nodes)
    pods = handlers_for(store)["pods"]
    for i in range(rng.randint(0, 60)):
        target = rng.choice(nodes)["metadata"]["name"]
        pods.apply("ADDED", pod(f"r{i}", node=target, gpu=rng.randint(0, 4), phase="Running"))
    return store


def random_gang(rng: random.Random) -> list[PodInfo]:
    selector = rng.choice([None, {"pool": "a"}, {"pool": "c"}])
    gpu = rng.choice([0, 1, 2, 4, 8])
    return [
        pod_info(name=f"w-{i}", gpu=gpu, cpu=str(rng.randint(1, 8)), node_selector=selector)
        for i in range(rng.randint(1, 12))
    ]


def test_a_plan_on_the_index_equals_a_plan_that_reads_every_node() -> None:
    rng = random.Random(7)
    for _ in range(150):
        snapshot = random_cluster(rng).snapshot()
        gang = random_gang(rng)
        needed = rng.randint(1, len(gang))
        for bounded in (True, False):
            fast = plan_gang(snapshot, gang, needed, own_free, bounded=bounded)
            slow = plan_gang(unindexed(snapshot), gang, needed, own_free, bounded=bounded)
            every = list(snapshot.nodes.values())  # a node list given: each node read in turn
            read_all = plan_gang(snapshot, gang, needed, own_free, bounded=bounded, nodes=every)
            assert (fast.assignments, fast.reason) == (slow.assignments, slow.reason)
            assert (fast.assignments, fast.reason) == (read_all.assignments, read_all.reason)
        plain = unindexed(snapshot)
        assert placeable_nodes(could_hold(snapshot, gang), snapshot) == placeable_nodes(
            could_hold(plain, gang), plain
        )


def test_a_tier_s_domains_follow_a_relabelled_node_and_are_never_shared_between_stores() -> None:
    rack = Tier("rack", ("rack",))
    store = store_of(node("n1", labels={"rack": "r1"}), node("n2", labels={"rack": "r1"}))
    assert {v: set(ns) for v, ns in domains(store.snapshot(), rack).members.items()} == {
        "r1": {"n1", "n2"}
    }
    handlers_for(store)["pods"].apply("ADDED", pod("a", node="n1", gpu=1, phase="Running"))
    assert domains(store.snapshot(), rack).of == {"n1": "r1", "n2": "r1"}
    handlers_for(store)["nodes"].apply("MODIFIED", node("n2", labels={"rack": "r2"}))
    assert domains(store.snapshot(), rack).members == {"r1": ("n1",), "r2": ("n2",)}
    other = store_of(node("n1", labels={"rack": "r9"}), node("n3"))
    assert domains(other.snapshot(), rack).of == {"n1": "r9"}  # n3 carries no rack label
    assert domains(unindexed(store.snapshot()), rack).of == {"n1": "r1", "n2": "r2"}
    # a view of some of the nodes (preemption's trials) keeps the generation, not the nodes
    whole = store.snapshot()
    part = replace(whole, nodes={"n2": whole.nodes["n2"]})
    assert domains(part, rack).of == {"n2": "r2"}
    assert domains(whole, rack).of == {"n1": "r1", "n2": "r2"}
    assert domains(part, rack).of == {"n2": "r2"}
