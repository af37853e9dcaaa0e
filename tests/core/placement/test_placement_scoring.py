"""Placement decisions in the core: fragmentation as FGD defines it, scores as ranks, topology
tiers and constraints, GPU model and node-feature requirements, the policy's sections."""

from __future__ import annotations

import dataclasses
from typing import Any

import orjson
import pytest

from extender.core.gangs.gang import resolve_gang
from extender.core.placement.domains import plan_in_topology
from extender.core.placement.fragmentation import (
    DEFAULT_MIX,
    FragmentationCache,
    Mix,
    Shape,
    fits,
    fragment,
    placements,
    state_of,
)
from extender.core.placement.node_filter import decide_filter
from extender.core.placement.scoring import PlacementScorer, ScoreWeights, mix_of, rank_scores
from extender.core.placement.topology import DEFAULT_TOPOLOGY, Constraint, parse_constraint
from extender.core.queues.policy_parse import PolicyError, parse_policy
from extender.kube.convert import pod_from_api, pod_group_from_api
from extender.web.wire import prioritize_answer
from tests.builders import native_member, native_pod_group, node, pod, priority_class
from tests.cluster import Cluster

ONE = Shape(cpu=1000, memory=1024, gpus=1)
HALF = Shape(cpu=1000, memory=1024, gpus=1, milli=500)
EIGHT = Shape(cpu=8000, memory=8192, gpus=8)


def test_a_node_that_cannot_run_a_shape_strands_all_its_free_gpus_for_that_shape() -> None:
    state = state_of("A100", 32_000, 65_536, [1000, 1000, 300])
    assert fragment(state, EIGHT) == 2300, "too few GPUs: all of them are fragments"
    starved = state_of("A100", 500, 65_536, [1000, 1000])
    assert fragment(starved, ONE) == 2000, "too little CPU: the GPUs cannot be used"
    assert fragment(state, Shape(0, 0, 1, models=frozenset({"H100"}))) == 2300, "wrong model"


def test_gpus_too_partly_used_for_a_shape_are_its_fragments() -> None:
    state = state_of("", 32_000, 65_536, [1000, 600, 300])
    assert fragment(state, HALF) == 300, "300 left on one GPU is too little for a half"
    assert fragment(state, ONE) == 900, "whole-GPU shapes cannot use partly used GPUs"
    assert fragment(state, Shape(1000, 1024)) == 1900, "a CPU pod uses no GPU at all"


def test_a_shared_pod_may_go_on_each_distinct_gpu_that_fits_it() -> None:
    state = state_of("", 32_000, 65_536, [1000, 1000, 600, 300])
    afters = placements(state, HALF)
    assert [a[0][3] for a in afters] == [(1000, 600, 500, 300), (1000, 1000, 300, 100)]
    assert fits(state, HALF) and not fits(state, Shape(0, 0, 4))


def test_fgd_prefers_the_placement_that_grows_fragmentation_least() -> None:
    cache = FragmentationCache(Mix(((ONE, 0.5), (HALF, 0.5))))
    state = state_of("", 32_000, 65_536, [1000, 500])
    grow, after, _ = cache.best(state, HALF)
    assert after[3] == (1000,), "the half goes on the half-used GPU, keeping a whole one"
    assert grow < 0


def test_the_mix_is_the_most_common_shapes_weighted_by_count() -> None:
    mix = Mix.of([ONE, ONE, ONE, HALF], limit=1)
    assert mix.shapes == ((ONE, 1.0),)
    assert Mix.of([]) is DEFAULT_MIX


def test_scores_are_ranks_the_cheapest_cost_gets_10() -> None:
    assert rank_scores({"a": 0.5, "b": 0.1, "c": 0.5, "d": 2.0}) == {
        "b": 10,
        "a": 9,
        "c": 9,
        "d": 8,
    }
    many = rank_scores({f"n{i}": float(i) for i in range(15)})
    assert many["n0"] == 10 and many["n10"] == 0 and many["n14"] == 0


def test_a_cpu_pod_scores_a_cpu_node_above_a_gpu_node_with_free_gpus() -> None:
    cluster = Cluster(nodes=[node("gpu", gpu=8, cpu="64"), node("cpu", gpu=0, cpu="64")], pods=[])
    scorer = PlacementScorer()
    scores = scorer.scores(cluster.snap(), pod_from_api(pod("web", cpu="8")), ["gpu", "cpu"])
    assert scores.of("cpu") > scores.of("gpu")


def every_node_cluster() -> Cluster:
    """Eight 8-GPU nodes, a few partly taken, and two CPU nodes."""
    nodes = [node(f"g{i}", gpu=8, cpu="64") for i in range(8)]
    nodes += [node("c0", gpu=0, cpu="64"), node("c1", gpu=0, cpu="32")]
    taken = [pod(f"busy-{i}", node=f"g{i}", gpu=i + 1, phase="Running") for i in range(4)]
    return Cluster(nodes=nodes, pods=taken)


@pytest.mark.parametrize("gpus", [0, 1, 4])
def test_with_every_node_sent_the_scores_are_those_of_the_nodes_one_by_one(gpus: int) -> None:
    cluster = every_node_cluster()
    snap = cluster.snap()
    asking = pod_from_api(pod("asking", gpu=gpus, cpu="2"))
    names = sorted(snap.nodes, reverse=True)  # any order kube-scheduler finds them in
    every = PlacementScorer().scores(snap, asking, names).table(names)
    unversioned = dataclasses.replace(snap, states_version=-1)  # worked out name by name
    assert every == PlacementScorer().scores(unversioned, asking, names).table(names)
    assert max(every.values()) == 10 and len(set(every.values())) > 1


def test_with_every_node_sent_scores_are_worked_out_again_only_when_a_node_changes() -> None:
    cluster = every_node_cluster()
    scorer = PlacementScorer()
    asking = pod_from_api(pod("asking", gpu=4, cpu="2"))
    names = list(cluster.snap().nodes)
    first = scorer.scores(cluster.snap(), asking, names)
    cluster.add("pods", pod("unbound", gpu=8))  # a pending pod changes no node
    assert scorer.scores(cluster.snap(), asking, names) is first
    assert scorer.scores(cluster.snap(), asking, names[1:]) is not first, "a subset: its own"
    best = [n for n, score in first.table(names).items() if score == 10]
    assert best == ["g3"], "4 GPUs free on g3: the 4-GPU pod fills it"
    cluster.add("pods", pod("fills-g3", node="g3", gpu=4, phase="Running"))
    again = scorer.scores(cluster.snap(), asking, names)
    assert again is not first and again.table(names)["g3"] == 0, "g3 is full now"


def test_scores_of_every_node_brought_up_to_date_equal_scores_worked_out_afresh() -> None:
    cluster = every_node_cluster()
    scorer = PlacementScorer()
    shapes = [pod_from_api(pod(f"shape-{g}", gpu=g, cpu="2")) for g in (0, 1, 2, 8)]

    def check() -> None:
        snap = cluster.snap()
        names = list(snap.nodes)
        for asking in shapes:
            kept = scorer.scores(snap, asking, names).table(names)
            unversioned = dataclasses.replace(snap, states_version=-1)
            fresh = PlacementScorer().scores(unversioned, asking, names).table(names)
            assert kept == fresh, asking.name

    check()
    full = pod("b", node="g6", gpu=8, phase="Running")
    changes: list[tuple[str, str, dict[str, Any]]] = [
        ("add", "pods", pod("a", node="g5", gpu=3, phase="Running")),
        ("add", "pods", full),  # g6 full: a cost level goes
        ("add", "pods", pod("c", node="c0", cpu="60", phase="Running")),
        ("delete", "pods", full),
        ("add", "nodes", node("g8", gpu=8, cpu="64")),  # a node comes: started over
        ("add", "pods", pod("d", node="g8", gpu=1, phase="Running")),
    ]
    for action, kind, obj in changes:
        (cluster.add if action == "add" else cluster.delete)(kind, obj)
        check()


CACHED = [*(f"g{i}" for i in range(8)), "c0", "c1"]  # every_node_cluster's nodes, in order


@pytest.mark.parametrize(
    "sent",
    [
        [*CACHED[:3], "g-new", *CACHED[4:]],
        [f"other-{i}" for i in range(len(CACHED))],
        [*CACHED[:3], CACHED[0], *CACHED[4:]],
        CACHED[1:],
        [*CACHED, "g-new"],
        CACHED[::-1],
    ],
    ids=[
        "as many nodes as the cache holds, one of them replaced by a node it has not seen",
        "as many nodes as the cache holds, none of them its own",
        "as many nodes as the cache holds, one of them sent twice in place of another",
        "one node missing",
        "every node and an unknown one alongside",
        "every node, in another order",
    ],
)
def test_prioritize_answers_the_nodes_sent_and_no_other_whatever_their_count(
    sent: list[str],
) -> None:
    cluster = every_node_cluster()
    snap = cluster.snap()
    asking = pod_from_api(pod("asking", gpu=1, cpu="2"))
    scorer = PlacementScorer()
    every = scorer.scores(snap, asking, CACHED)  # the scores of every node, remembered

    answer = scored(prioritize_answer(sent, scorer.scores(snap, asking, sent)))
    assert set(answer) <= set(sent), "only nodes sent are answered"
    unversioned = dataclasses.replace(snap, states_version=-1)  # worked out name by name
    assert answer == scored(
        prioritize_answer(sent, PlacementScorer().scores(unversioned, asking, sent))
    ), "nodes sent scored as one by one; those the cache does not know: 0 (left out)"
    if sorted(sent) == sorted(CACHED):
        assert scorer.scores(snap, asking, sent) is every, "every node, in any order: remembered"


def scored(answer: bytes) -> dict[str, int]:
    """A prioritize answer (HostPriorityList) as {host: score}."""
    return {entry["Host"]: entry["Score"] for entry in orjson.loads(answer)}


def test_a_pod_preferring_node_features_scores_matching_nodes_higher() -> None:
    nvme = {"storage.gangplank.io/nvme": "true"}
    cluster = Cluster(nodes=[node("plain"), node("fast", labels=nvme)], pods=[])
    asking = pod(
        "ckpt", gpu=8, annotations={"gangplank.io/prefer-nodes": "storage.gangplank.io/nvme=true"}
    )
    scores = PlacementScorer().scores(cluster.snap(), pod_from_api(asking), ["plain", "fast"])
    assert scores.of("fast") == 10 and scores.of("plain") < 10


def test_gpu_model_and_required_node_features_fail_other_nodes_for_good() -> None:
    a100 = {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}
    h100 = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "storage/nvme": "true"}
    cluster = Cluster(nodes=[node("a", labels=a100), node("h", labels=h100)], pods=[])
    wants_h100 = pod("t", gpu=1, annotations={"gangplank.io/gpu-product": "NVIDIA-H100-80GB-HBM3"})
    result = decide_filter(cluster.snap(), pod_from_api(wants_h100), ["a", "h"])
    assert result.passed == ["h"]
    assert (
        "GPU model NVIDIA-A100-SXM4-80GB is not NVIDIA-H100-80GB-HBM3" in result.unresolvable["a"]
    )
    needs_nvme = pod("u", gpu=1, annotations={"gangplank.io/require-nodes": "storage/nvme=true"})
    result = decide_filter(cluster.snap(), pod_from_api(needs_nvme), ["a", "h"])
    assert result.passed == ["h"] and "node lacks storage/nvme=true" in result.unresolvable["a"]


@pytest.mark.parametrize(
    "text,expected",
    [
        ("required=rack", Constraint("rack", "")),
        ("preferred=block", Constraint("", "block")),
        ("required=rack, preferred=clique", Constraint("rack", "clique")),
        ("zone", Constraint("zone", "")),
    ],
)
def test_the_topology_annotation_reads_required_and_preferred(
    text: str, expected: Constraint
) -> None:
    assert parse_constraint(text) == (expected, "")


def test_a_malformed_topology_annotation_is_a_reason_on_the_gang() -> None:
    members = [
        pod(
            f"g-{i}",
            gpu=1,
            labels={"gangplank.io/gang": "g"},
            annotations={"gangplank.io/gang-size": "2", "gangplank.io/topology": "must=rack"},
        )
        for i in range(2)
    ]
    cluster = Cluster(nodes=[node("n0")], pods=members)
    gang = resolve_gang(cluster.snap(), "gangplank:default/g")
    assert "must=rack" in gang.problem and "required=<tier>" in gang.problem


def test_tiers_are_named_by_tier_or_by_label_and_cloud_labels_map_to_them() -> None:
    topology = DEFAULT_TOPOLOGY
    rack = topology.tier_of("rack")
    assert rack is not None and "topology.k8s.aws/network-node-layer-3" in rack.labels
    block = topology.tier_of("block")
    assert block is not None and "cloud.google.com/gce-topology-block" in block.labels
    named = topology.tier_of("cloud.google.com/gce-topology-block")
    assert named is not None and named.labels == ("cloud.google.com/gce-topology-block",)
    custom = topology.tier_of("example.com/pod")
    assert custom is not None and custom.labels == ("example.com/pod",)
    assert topology.tier_of("nonsense") is None


def _plan(
    nodes: list[dict[str, Any]],
    members: list[dict[str, Any]],
    required: str,
    running: list[dict[str, Any]] | None = None,
) -> Any:
    cluster = Cluster(nodes=nodes, pods=[*members, *(running or [])])
    snap = cluster.snap()
    pods = [pod_from_api(m) for m in members]
    return plan_in_topology(
        snap,
        pods,
        len(pods),
        lambda n: {k: v - n.requested.get(k, 0) for k, v in n.allocatable.items()},
        DEFAULT_TOPOLOGY,
        Constraint(required, ""),
    )


def test_a_required_tier_no_node_is_labelled_with_says_so() -> None:
    attempt = _plan([node("n0"), node("n1")], [pod(f"m{i}", gpu=8) for i in range(2)], "block")
    assert not attempt.ok and "no node carries a block label" in attempt.reason


def test_a_gang_prefers_one_block_over_two_when_no_rack_holds_it() -> None:
    nodes = [
        node(
            f"{b}{r}{i}",
            labels={"network.gangplank.io/block": b, "network.gangplank.io/rack": f"{b}{r}"},
        )
        for b in ("x", "y")
        for r in ("1", "2")
        for i in range(2)
    ]
    busy = pod("busy", gpu=8, node="x10", phase="Running")
    members = [pod(f"m{i}", gpu=8) for i in range(4)]
    attempt = _plan(nodes, members, "", [busy])
    assert attempt.ok
    assert {name[0] for name in attempt.assignments.values()} == {"y"}, "block y is whole"


def test_policy_topology_and_placement_sections_are_read_and_checked() -> None:
    policy = parse_policy(
        {
            "topology": {"tiers": [{"name": "pod", "labels": ["example.com/superpod"]}]},
            "placement": {"weights": {"fragmentation": 5, "binpack": 1}},
        }
    )
    assert [t.name for t in policy.topology.tiers] == ["pod"]
    assert policy.weights == ScoreWeights(fragmentation=5, binpack=1)
    with pytest.raises(PolicyError, match=r"placement\.weights\.spread: unknown"):
        parse_policy({"placement": {"weights": {"spread": 1}}})
    with pytest.raises(PolicyError, match=r"topology\.tiers\[0\]\.labels"):
        parse_policy({"topology": {"tiers": [{"name": "rack", "labels": []}]}})


def test_a_native_podgroup_gives_size_topology_and_priority() -> None:
    group = pod_group_from_api(
        native_pod_group("ring", 4, topology="network.gangplank.io/rack", priority_class="hi"),
        "native",
    )
    assert (group.min_member, group.topology, group.priority_class) == (
        4,
        ("network.gangplank.io/rack",),
        "hi",
    )
    basic = pod_group_from_api(native_pod_group("loose", None), "native")
    assert not basic.gang
    member = pod_from_api(native_member("ring-0", "ring", gpu=1))
    assert member.job == "native:default/ring"
    cluster = Cluster(
        nodes=[node("n0")],
        pods=[native_member("ring-0", "ring", gpu=1, priority=10)],
        native_podgroups=[
            native_pod_group("ring", 4, topology="network.gangplank.io/rack", priority_class="hi")
        ],
        priorityclasses=[priority_class("hi", 9000)],
    )
    gang = resolve_gang(cluster.snap(), "native:default/ring")
    assert (gang.size, gang.priority) == (4, 9000)
    assert gang.constraint.required == "network.gangplank.io/rack"


def test_the_mix_is_learned_from_the_cache_once_it_holds_enough_pods() -> None:
    nodes = [node(f"n{i}", gpu=8, cpu="512", memory="4Ti") for i in range(4)]
    few = [pod(f"p{i}", gpu=1, node="n0", phase="Running") for i in range(10)]
    assert mix_of(Cluster(nodes=nodes, pods=few).snap()) is None
    many = [pod(f"q{i}", gpu=1 + i % 2, node=f"n{i % 4}", phase="Running") for i in range(120)]
    mix = mix_of(Cluster(nodes=nodes, pods=many).snap())
    assert mix is not None
    assert sorted((s.gpus, w) for s, w in mix.shapes) == [(1, 0.5), (2, 0.5)]
    scorer = PlacementScorer()
    scorer.learn(mix)
    assert scorer.mix is mix
