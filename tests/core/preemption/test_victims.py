"""Victims: whole jobs only, the fewest that make room, never the protected, nothing in vain."""

from __future__ import annotations

from typing import Any

import pytest

from extender.core.engine import Engine
from extender.core.preemption.trial_planner import planner_for
from extender.core.preemption.victim_candidates import (
    priority_candidates,
    reclaim_candidates,
    running_jobs,
)
from extender.core.preemption.victims import find_victims
from extender.core.queues.policy import PreemptionRules
from extender.core.queues.policy_parse import PolicyError, parse_policy
from extender.kube.convert import pod_from_api
from tests.builders import gang_pods, gpus, node, pod, policy_doc, queue
from tests.cluster import Cluster

NOW = 1_000_000.0


def on(raw: dict[str, Any], node_name: str, started: float = NOW - 3600) -> dict[str, Any]:
    from datetime import UTC, datetime

    stamp = datetime.fromtimestamp(started, UTC).isoformat().replace("+00:00", "Z")
    return {
        **raw,
        "spec": {**raw["spec"], "nodeName": node_name},
        "status": {"phase": "Running", "startTime": stamp},
    }


def gang_on(
    name: str, nodes: list[str], *, priority: int = 0, gpu: int = 8, **kw: Any
) -> list[dict[str, Any]]:
    members = gang_pods(name, len(nodes), gpu=gpu, priority=priority, **kw)
    return [on(m, n) for m, n in zip(members, nodes, strict=True)]


def defaults(_: str | None) -> PreemptionRules:
    return PreemptionRules()


def search(c: Cluster, waiting: list[dict[str, Any]], priority: int) -> Any:
    snap = c.snap()
    pods = [pod_from_api(p) for p in waiting]
    jobs = running_jobs(snap, lambda p: None)
    candidates = priority_candidates(jobs, None, priority, defaults, NOW)
    free = Engine().placer.free_of(None)
    return find_victims(snap, pods, len(pods), free, candidates, NOW)


def nodes(count: int) -> list[dict[str, Any]]:
    return [node(f"n{i}", gpu=8) for i in range(count)]


def test_a_4_pod_gang_evicts_exactly_one_lower_priority_4_pod_gang() -> None:
    c = Cluster(
        nodes=nodes(8),
        pods=[
            *gang_on("low-a", ["n0", "n1", "n2", "n3"]),
            *gang_on("low-b", ["n4", "n5", "n6", "n7"]),
        ],
    )
    plan = search(c, gang_pods("urgent", 4, gpu=8, priority=100), 100)
    assert plan is not None
    assert [v.key for v in plan.victims] in (
        ["gangplank:default/low-a"],
        ["gangplank:default/low-b"],
    )
    victim_nodes = {p.node_name for p in plan.victim_pods}
    assert set(plan.assignments.values()) == victim_nodes, "the gang goes where its victims were"


def test_the_fewest_jobs_are_evicted_then_the_least_gpu_time() -> None:
    singles = [on(pod(f"s{i}", gpu=2), "n0", started=NOW - 100) for i in range(4)]
    whole = on(pod("whole", gpu=8), "n1", started=NOW - 50)
    c = Cluster(nodes=nodes(2), pods=[*singles, whole])
    plan = search(c, [pod("big", gpu=8, priority=10)], 10)
    assert plan is not None and [v.key for v in plan.victims] == ["pod:default/whole"]


def test_a_job_that_would_not_fit_even_after_evictions_evicts_nothing() -> None:
    c = Cluster(nodes=nodes(2), pods=gang_on("low", ["n0", "n1"]))
    assert search(c, gang_pods("huge", 3, gpu=8, priority=100), 100) is None


def test_protected_pods_are_never_victims_and_protect_their_whole_gang() -> None:
    system = on(pod("dns", gpu=8, priority=2_000_000_000), "n0")
    opted = on(pod("keep", gpu=8, labels={"gangplank.io/preemptible": "false"}), "n1")
    volcano = gang_on("vc", ["n2", "n3"])
    volcano[1]["metadata"]["labels"]["volcano.sh/preemptable"] = "false"
    c = Cluster(nodes=nodes(4), pods=[system, opted, *volcano])
    jobs = running_jobs(c.snap(), lambda p: None)
    assert priority_candidates(jobs, None, 10**9 + 5, defaults, NOW) == []
    assert search(c, [pod("x", gpu=8, priority=100)], 100) is None


def test_equal_or_higher_priority_and_other_queues_are_not_priority_victims() -> None:
    c = Cluster(
        nodes=nodes(3),
        pods=[
            on(pod("same", gpu=8, priority=5), "n0"),
            on(pod("higher", gpu=8, priority=9), "n1"),
            on(pod("lower", gpu=8, priority=1, labels={"gangplank.io/queue": "other"}), "n2"),
        ],
    )
    queue_of = lambda p: p.labels.get("gangplank.io/queue")  # noqa: E731
    jobs = running_jobs(c.snap(), queue_of)
    assert priority_candidates(jobs, None, 5, defaults, NOW) == []


def test_a_job_younger_than_its_minimum_runtime_is_spared() -> None:
    c = Cluster(nodes=nodes(1), pods=[on(pod("young", gpu=8), "n0", started=NOW - 60)])
    jobs = running_jobs(c.snap(), lambda p: None)
    ten_minutes = lambda q: PreemptionRules(min_runtime=600)  # noqa: E731
    assert priority_candidates(jobs, None, 10, ten_minutes, NOW) == []
    assert len(priority_candidates(jobs, None, 10, defaults, NOW)) == 1


def test_reclaim_takes_only_what_a_queue_borrowed_lowest_priority_newest_first() -> None:
    q = {"gangplank.io/queue": "borrower"}
    running = [
        on(pod(f"b{i}", gpu=8, priority=i % 2, labels=q), f"n{i}", started=NOW - 1000 + i)
        for i in range(4)
    ]
    c = Cluster(nodes=nodes(4), pods=running)
    jobs = running_jobs(c.snap(), lambda p: p.labels.get("gangplank.io/queue"))
    borrowed = {"borrower": {"nvidia.com/gpu": 16}}
    found = reclaim_candidates(
        jobs, "owner", borrowed.__getitem__, ["nvidia.com/gpu"], defaults, NOW
    )
    assert [j.key for j in found] == ["pod:default/b2", "pod:default/b0"], (
        "priority 0, newest first; 16 GPUs"
    )
    no = lambda q: PreemptionRules(reclaimable=False)  # noqa: E731
    assert (
        reclaim_candidates(jobs, "owner", borrowed.__getitem__, ["nvidia.com/gpu"], no, NOW) == []
    )


def test_preemption_rules_are_read_from_the_policy_with_defaults() -> None:
    policy = parse_policy(
        {
            **policy_doc(
                queue("prod", guarantee=gpus(8)),
                {"name": "research", "preemption": {"withinQueue": False, "minRuntime": "10m"}},
            ),
            "preemption": {
                "evictionsPerMinute": 4,
                "minRuntime": "1h30m",
                "gracePeriodSeconds": 30,
            },
        }
    )
    assert policy.evictions_per_minute == 4
    assert policy.rules("prod") == PreemptionRules(True, True, 5400.0, 30)
    assert policy.rules("research") == PreemptionRules(False, True, 600.0, 30)
    assert policy.rules(None).min_runtime == 5400.0
    with pytest.raises(
        PolicyError, match=r"queue r: preemption.minRuntime: 'soon' is not a duration"
    ):
        parse_policy(policy_doc({"name": "r", "preemption": {"minRuntime": "soon"}}))
    with pytest.raises(PolicyError, match=r"preemption: unknown field 'withinQueue'"):
        parse_policy({**policy_doc(), "preemption": {"withinQueue": True}})


def test_reclaim_measures_borrowing_where_the_trees_meet() -> None:
    """vision runs beyond its own guarantee but within its parent's: a queue outside the parent
    may take back only what the parent as a whole borrowed."""
    v = {"gangplank.io/queue": "vision"}
    running = [on(pod(f"v{i}", gpu=8, labels=v), f"n{i}", started=NOW - 100 + i) for i in range(3)]
    c = Cluster(nodes=nodes(3), pods=running)
    jobs = running_jobs(c.snap(), lambda p: p.labels.get("gangplank.io/queue"))
    borrowed = {"vision": {"nvidia.com/gpu": 16}, "ml": {"nvidia.com/gpu": 8}}
    found = reclaim_candidates(
        jobs, "prod", borrowed.__getitem__, ["nvidia.com/gpu"], defaults, NOW, lambda q: "ml"
    )
    assert [j.key for j in found] == ["pod:default/v2"], "8 borrowed by ml, not 16 by vision"


def test_a_gang_that_requires_one_rack_evicts_within_one_rack_even_if_that_takes_more() -> None:
    rack = "network.gangplank.io/rack"
    c = Cluster(
        nodes=[
            node("a0", labels={rack: "r1"}),
            node("a1", labels={rack: "r1"}),
            node("b0", labels={rack: "r2"}),
        ],
        pods=[on(pod("low-0", gpu=8), "a0"), on(pod("low-1", gpu=8), "a1")],
    )
    waiting = gang_pods("ring", 2, gpu=8, priority=100)
    anywhere = search(c, waiting, 100)
    assert anywhere is not None and len(anywhere.victims) == 1, "b0 is free: one victim"
    for member in waiting:
        member["metadata"]["annotations"]["gangplank.io/topology"] = "required=rack"
    snap = c.snap()
    pods = [pod_from_api(p) for p in waiting]
    candidates = priority_candidates(running_jobs(snap, lambda p: None), None, 100, defaults, NOW)
    engine = Engine()
    preemption = engine.preemption
    ring = Cluster(nodes=[], pods=waiting).snap()
    planner = planner_for(ring, "gangplank:default/ring", preemption.topology)
    in_rack = find_victims(
        snap, pods, 2, engine.placer.free_of(None), candidates, NOW, None, planner
    )
    assert in_rack is not None and len(in_rack.victims) == 2
    assert set(in_rack.assignments.values()) == {"a0", "a1"}


def test_a_search_for_priority_victims_starts_only_if_the_store_counts_a_lower_priority_pod() -> (
    None
):
    """The store keeps the lowest priority running in each queue; when nothing below the job's
    priority runs, preemption reads no pod (here the floor is made to disagree with the pods, to
    show it is the floor that decides)."""
    from dataclasses import replace

    c = Cluster(nodes=nodes(1), pods=[on(pod("low", gpu=8, priority=0), "n0")])
    waiting = [pod_from_api(pod("urgent", gpu=8, priority=100))]
    snap = c.snap()
    assert snap.queue_floor == {("", "default"): 0}

    def plan(snapshot: Any) -> int:
        return Engine().preemption.plan(
            snapshot, "pod:default/urgent", waiting, 1, None, NOW, None, None
        )

    assert plan(snap) == 1, "the low-priority pod is evicted"
    assert plan(replace(snap, queue_floor={("", "default"): 100})) == 0, "nothing lower: no search"
    assert plan(replace(snap, queue_floor=None)) == 1, "no floor kept: search every pod"


def test_a_gang_already_running_short_is_chosen_before_a_whole_one_is_cut() -> None:
    """low-a lost two members (a leader died between its evictions); low-b is whole and, by the
    rule's order alone (most GPUs freed first), would be chosen: low-a goes instead."""
    short = gang_on("low-a", ["n2", "n3"])
    for member in short:
        member["metadata"]["annotations"]["gangplank.io/gang-size"] = "4"
    c = Cluster(nodes=nodes(8), pods=[*short, *gang_on("low-b", ["n4", "n5", "n6", "n7"])])
    snap = c.snap()
    assert search(c, gang_pods("urgent", 4, gpu=8, priority=100), 100).victims[0].key == (
        "gangplank:default/low-b"
    ), "the rule's order alone"
    waiting = [pod_from_api(p) for p in gang_pods("urgent", 4, gpu=8, priority=100)]
    preemption = Engine().preemption
    assert preemption.plan(snap, "gangplank:default/urgent", waiting, 4, None, NOW, None, None)
    assert [e.job for e in preemption.evictions.pending] == ["gangplank:default/low-a"] * 2


def test_a_gang_that_requires_its_data_evicts_where_it_is_cached_though_another_node_is_free() -> (
    None
):
    cached = {"data.gangplank.io/imagenet": "cached"}
    c = Cluster(
        nodes=[node("a0", labels=cached), node("b0")],
        pods=[on(pod("low-0", gpu=8), "a0")],
    )
    waiting = gang_pods("ring", 1, gpu=8, priority=100)
    notes = {"gangplank.io/dataset": "imagenet", "gangplank.io/dataset-policy": "required"}
    for member in waiting:
        member["metadata"]["annotations"].update(notes)
    snap = c.snap()
    pods = [pod_from_api(p) for p in waiting]
    candidates = priority_candidates(running_jobs(snap, lambda p: None), None, 100, defaults, NOW)
    engine = Engine()
    planner = planner_for(
        Cluster(nodes=[], pods=waiting).snap(), "gangplank:default/ring", engine.preemption.topology
    )
    found = find_victims(snap, pods, 1, engine.placer.free_of(None), candidates, NOW, None, planner)
    assert found is not None and [j.key for j in found.victims] == ["pod:default/low-0"]
    assert found.assignments == {pods[0].uid: "a0"}
