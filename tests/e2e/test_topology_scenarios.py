"""Placement end to end: gangs in the tightest topology domain, required topology, Kubernetes'
own PodGroup API, and scores that keep GPUs whole — fake API server, gangplank over HTTP, and the
kube-scheduler stand-in."""

from __future__ import annotations

import time
from typing import Any

from tests.builders import gang_pods, native_member, native_pod_group, node, pod, priority_class
from tests.fakeapi import FakeApiServer
from tests.scheduler_sim import Extender, KubeScheduler

CLIQUE = "nvidia.com/gpu.clique"
RACK = "network.gangplank.io/rack"


def label(key: str, value: str) -> dict[str, str]:
    return {key: value}


def put_nodes(api: FakeApiServer, names: list[str], labels: dict[str, str], gpu: int = 8) -> None:
    for name in names:
        api.put("nodes", node(name, gpu=gpu, cpu="64", labels=labels))


def running(name: str, on: str, gpu: int) -> dict[str, Any]:
    return pod(name, node=on, gpu=gpu, phase="Running")


def test_an_8_gpu_job_lands_inside_one_free_nvlink_domain(api: FakeApiServer) -> None:
    # Three NVLink cliques of two 4-GPU nodes; clique c1 has 2 GPUs taken. The old "most room
    # first" order took a1 and b0 (two cliques); the whole job fits in clique c2 alone.
    put_nodes(api, ["a0", "a1"], label(CLIQUE, "c1"), gpu=4)
    put_nodes(api, ["b0", "b1"], label(CLIQUE, "c2"), gpu=4)
    put_nodes(api, ["c0", "c1"], label(CLIQUE, "c3"), gpu=4)
    api.put("pods", running("busy", "a0", 2))
    with Extender(api) as extender:
        scheduler = KubeScheduler(api, extender)
        for member in gang_pods("nv", 2, gpu=4):
            api.put("pods", member)
        scheduler.settle()
        placed = scheduler.bound("nv")
        assert len(placed) == 2
        assert set(placed.values()) in ({"b0", "b1"}, {"c0", "c1"}), placed


def test_a_32_gpu_gang_with_required_rack_waits_naming_the_largest_rack_then_lands_in_one(
    api: FakeApiServer,
) -> None:
    put_nodes(api, ["r1-0", "r1-1", "r1-2"], label(RACK, "r1"))
    put_nodes(api, ["r2-0", "r2-1", "r2-2", "r2-3"], label(RACK, "r2"))
    api.put("pods", running("busy-0", "r2-0", 8))
    api.put("pods", running("busy-1", "r2-1", 8))
    with Extender(api) as extender:
        scheduler = KubeScheduler(api, extender)
        members = gang_pods("allreduce", 4, gpu=8)
        for member in members:
            member["metadata"]["annotations"]["gangplank.io/topology"] = "required=rack"
            api.put("pods", member)
        scheduler.settle()
        # 40 GPUs are free, but no rack has 32.
        assert scheduler.bound("allreduce") == {}
        reason = scheduler.reasons["default/allreduce-0"]
        assert "required topology rack" in reason
        assert "the largest free rack r1 has room for 3" in reason
        assert "lacks 8 nvidia.com/gpu" in reason
        assert extender.runtime.scheduler.reservations.pods() == 0
        put_nodes(api, ["r1-3"], label(RACK, "r1"))
        scheduler.settle()
        placed = scheduler.bound("allreduce")
        assert sorted(placed.values()) == ["r1-0", "r1-1", "r1-2", "r1-3"]


def test_a_native_podgroup_with_min_count_4_is_held_then_placed_whole_in_its_topology(
    api: FakeApiServer,
) -> None:
    put_nodes(api, ["a0", "a1"], label(RACK, "r1"))
    put_nodes(api, ["b0", "b1", "b2", "b3"], label(RACK, "r2"))
    api.put("priorityclasses", priority_class("training", 5000))
    api.put("native-podgroups", native_pod_group("ring", 4, topology=RACK))
    with Extender(api) as extender:
        scheduler = KubeScheduler(api, extender)
        members = [native_member(f"ring-{i}", "ring", gpu=8) for i in range(4)]
        for member in members[:3]:
            api.put("pods", member)
        scheduler.settle()
        assert scheduler.bound("ring") == {}
        assert "of 4 pods exist" in scheduler.reasons["default/ring-0"]
        api.put("pods", members[3])
        scheduler.settle()
        placed = scheduler.bound("ring")
        assert len(placed) == 4
        assert set(placed.values()) == {"b0", "b1", "b2", "b3"}, "the one rack that holds 4"
        assert extender.runtime.scheduler.reservations.pods() == 0


def test_a_native_podgroup_with_the_basic_policy_schedules_its_pods_one_by_one(
    api: FakeApiServer,
) -> None:
    put_nodes(api, ["n0"], {})
    api.put("native-podgroups", native_pod_group("loose", None))
    with Extender(api) as extender:
        scheduler = KubeScheduler(api, extender)
        api.put("pods", native_member("loose-0", "loose", gpu=8))
        api.put("pods", native_member("loose-1", "loose", gpu=8))
        scheduler.settle()
        assert len(scheduler.bound("loose")) == 1, "room for one: it runs without the other"


def test_a_native_podgroup_not_yet_served_waits_with_a_reason(api: FakeApiServer) -> None:
    api.state.absent.add("native-podgroups")  # an API server without GenericWorkload
    put_nodes(api, ["n0", "n1"], {})
    with Extender(api) as extender:
        scheduler = KubeScheduler(api, extender)
        api.put("pods", native_member("w-0", "w", gpu=8))
        scheduler.settle()
        assert scheduler.bound("w") == {}
        assert (
            "waiting for its PodGroup default/w (scheduling.k8s.io/v1alpha2"
            in (scheduler.reasons["default/w-0"])
        )


def test_single_gpu_pods_fill_partly_used_nodes_first_and_whole_nodes_stay_free(
    api: FakeApiServer,
) -> None:
    put_nodes(api, ["n0", "n1", "n2", "n3"], {})
    api.put("pods", running("busy", "n2", 6))
    with Extender(api) as extender:
        scheduler = KubeScheduler(api, extender)
        api.put("pods", pod("small-0", gpu=2))
        scheduler.settle()
        assert scheduler.bound("small") == {"small-0": "n2"}, "fills n2, not the first node"
        for i in range(1, 5):
            api.put("pods", pod(f"small-{i}", gpu=2))
        scheduler.settle()
        used = set(scheduler.bound("small").values())
        assert len(used - {"n2"}) == 1, "four more 2-GPU pods share one node"
        for i in range(2):
            api.put("pods", pod(f"whole-{i}", gpu=8))
        scheduler.settle()
        assert len(scheduler.bound("whole")) == 2, "two whole nodes were kept free"


def test_scores_are_integers_from_1_to_10_for_nodes_sent_and_the_rest_left_out_as_0(
    api: FakeApiServer,
) -> None:
    names = [f"n{i}" for i in range(12)]
    put_nodes(api, names, {})
    for i, name in enumerate(names[:8]):
        api.put("pods", running(f"busy-{i}", name, i))
    with Extender(api) as extender:
        probe = pod("probe", gpu=1)
        status, scores = extender.post(
            "prioritize", {"Pod": probe, "Nodes": None, "NodeNames": [*names, "unknown-node"]}
        )
        assert status == 200
        assert {s["Host"] for s in scores} <= set(names), "the unknown node scores 0: left out"
        assert all(isinstance(s["Score"], int) and 1 <= s["Score"] <= 10 for s in scores)
        best = [s["Host"] for s in scores if s["Score"] == 10]
        assert best == ["n7"], "the node the pod fills to the brim"
        cpu_only = pod("cpu-only", gpu=0, cpu="2")
        status, scores = extender.post(
            "prioritize", {"Pod": cpu_only, "Nodes": None, "NodeNames": names}
        )
        assert status == 200 and len(scores) == len(names)
        assert all(isinstance(s["Score"], int) and 0 <= s["Score"] <= 10 for s in scores)


def test_with_every_node_sent_the_scores_follow_each_change_of_a_node(api: FakeApiServer) -> None:
    names = [f"n{i}" for i in range(12)]
    put_nodes(api, names, {})
    for i, name in enumerate(names[:8]):
        api.put("pods", running(f"busy-{i}", name, i))
    with Extender(api) as extender:
        body = {"Pod": pod("probe", gpu=1), "Nodes": None, "NodeNames": names[::-1]}

        def scores() -> dict[str, int]:
            status, answer = extender.post("prioritize", body)
            assert status == 200
            return {s["Host"]: s["Score"] for s in answer}

        first = scores()
        assert scores() == first and first["n7"] == 10, "n7, filled to the brim, every time"
        api.put("pods", running("fills-n7", "n7", 1))
        deadline = time.monotonic() + 10
        while "n7" in scores() and time.monotonic() < deadline:
            time.sleep(0.05)
        now = scores()
        assert "n7" not in now, "n7 is full: the pod does not fit there (0, left out)"
        assert max(now.values()) == 10 and now != first
