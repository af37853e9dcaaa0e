"""Gangs end to end: a fake API server, gangplank over HTTP with its real runtime, and a
kube-scheduler stand-in driving the verbs pod by pod, with parking and retries as observed."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.builders import gang_pods, job, native_member, native_pod_group, node, pod, pod_group
from tests.fakeapi import FakeApiServer
from tests.scheduler_sim import Extender, KubeScheduler


def add_nodes(
    api: FakeApiServer,
    count: int,
    *,
    gpu: int = 8,
    prefix: str = "n",
    labels: dict[str, str] | None = None,
    start: int = 0,
) -> None:
    for i in range(start, start + count):
        api.put("nodes", node(f"{prefix}{i}", gpu=gpu, cpu="64", labels=labels))


def create(api: FakeApiServer, *pods: dict[str, Any]) -> None:
    for p in pods:
        api.put("pods", p)


def test_an_8_pod_gang_on_room_for_6_binds_none_holds_nothing_then_binds_all_on_2_more_nodes(
    api: FakeApiServer,
) -> None:
    add_nodes(api, 6)
    with Extender(api) as extender:
        scheduler = KubeScheduler(api, extender)
        create(api, *gang_pods("train-7", 8, gpu=8))
        scheduler.settle()
        assert scheduler.bound("train-7") == {}
        assert extender.runtime.scheduler.reservations.pods() == 0
        assert "needs 8 pods of 8 nvidia.com/gpu" in scheduler.reasons["default/train-7-0"]
        # It holds no capacity: other work still runs on the six nodes.
        create(api, pod("notebook", gpu=8))
        scheduler.settle()
        assert "notebook" in scheduler.bound()
        api.delete("pods", "default", "notebook")
        add_nodes(api, 2, start=6)
        scheduler.settle()
        assert len(scheduler.bound("train-7")) == 8
        assert len(set(scheduler.bound("train-7").values())) == 8


def test_two_100_pod_gangs_on_100_one_slot_nodes_end_one_bound_one_pending(
    api: FakeApiServer,
) -> None:
    add_nodes(api, 100, gpu=1)
    with Extender(api) as extender:
        scheduler = KubeScheduler(api, extender)
        a = gang_pods("a", 100, gpu=1, cpu="100m")
        b = gang_pods("b", 100, gpu=1, cpu="100m")
        create(api, *[p for pair in zip(a, b, strict=True) for p in pair])
        scheduler.settle(timeout=120)
        counts = sorted([len(scheduler.bound("a-")), len(scheduler.bound("b-"))])
        assert counts == [0, 100]
        assert extender.runtime.scheduler.reservations.pods() == 0


def test_a_job_with_parallelism_4_and_a_queue_label_is_a_gang_of_4(api: FakeApiServer) -> None:
    add_nodes(api, 4)
    with Extender(api) as extender:
        scheduler = KubeScheduler(api, extender)
        api.put("jobs", job("resnet", 4))
        workers = [
            pod(f"resnet-{i}", gpu=8, job="resnet", labels={"gangplank.io/queue": "vision"})
            for i in range(4)
        ]
        create(api, *workers[:3])
        scheduler.settle()
        assert scheduler.bound("resnet") == {}
        assert scheduler.reasons["default/resnet-0"] == "gang default/resnet: 3 of 4 pods exist"
        create(api, workers[3])
        scheduler.settle()
        assert len(scheduler.bound("resnet")) == 4
        metrics = extender.metrics()
        assert 'gangplank_gangs{state="running"} 1.0' in metrics
        assert "gangplank_gang_start_seconds_count 1.0" in metrics
        assert 'gangplank_gang_plan_failures_total{reason="incomplete"}' in metrics


SOURCES: list[tuple[str, dict[str, Any], tuple[str, dict[str, Any]] | None]] = [
    (
        "gangplank label and size annotation",
        {"labels": {"gangplank.io/gang": "g"}, "annotations": {"gangplank.io/gang-size": "3"}},
        None,
    ),
    (
        "Volcano group-name annotation and PodGroup",
        {"annotations": {"scheduling.k8s.io/group-name": "g"}},
        ("volcano-podgroups", pod_group("g", 3)),
    ),
    (
        "coscheduling pod-group label and PodGroup",
        {"labels": {"scheduling.x-k8s.io/pod-group": "g"}},
        ("coscheduling-podgroups", pod_group("g", 3)),
    ),
    (
        "Kueue pod-group-name and total count",
        {
            "labels": {"kueue.x-k8s.io/pod-group-name": "g"},
            "annotations": {"kueue.x-k8s.io/pod-group-total-count": "3"},
        },
        None,
    ),
]


@pytest.mark.parametrize(
    "marks,group", [s[1:] for s in SOURCES], ids=[f"{s[0]} make a gang" for s in SOURCES]
)
def test_each_compatible_label_source_makes_a_gang(
    api: FakeApiServer, marks: dict[str, Any], group: tuple[str, dict[str, Any]] | None
) -> None:
    add_nodes(api, 3)
    if group is not None:
        api.put(*group)
    with Extender(api) as extender:
        scheduler = KubeScheduler(api, extender)
        members = [pod(f"m{i}", gpu=8, **marks) for i in range(3)]
        create(api, *members[:2])
        scheduler.settle()
        assert scheduler.bound("m") == {}
        create(api, members[2])
        scheduler.settle()
        assert len(scheduler.bound("m")) == 3


def test_a_gang_without_its_podgroup_crd_waits_with_a_reason(api: FakeApiServer) -> None:
    api.state.absent.add("volcano-podgroups")  # Volcano is not installed
    add_nodes(api, 2)
    with Extender(api) as extender:
        scheduler = KubeScheduler(api, extender)
        create(
            api,
            *[
                pod(f"v{i}", gpu=8, annotations={"scheduling.k8s.io/group-name": "pg"})
                for i in range(2)
            ],
        )
        scheduler.settle()
        assert scheduler.bound("v") == {}
        assert "waiting for its Volcano PodGroup default/pg" in scheduler.reasons["default/v0"]


def test_parked_members_start_promptly_when_gangplank_sees_the_gang_complete_late(
    api: FakeApiServer,
) -> None:
    add_nodes(api, 3)
    with Extender(api) as extender:
        scheduler = KubeScheduler(api, extender)
        members = gang_pods("late", 3, gpu=8)
        create(api, *members[:2])
        scheduler.settle()
        # gangplank's view now lags: kube-scheduler retries the parked members on the creation
        # of the last one before gangplank has seen it, and parks them again.
        api.faults("pods").delay = 0.3
        create(api, members[2])
        scheduler.settle(timeout=30, until=lambda: len(scheduler.bound("late")) == 3)
        assert len(scheduler.bound("late")) == 3
        # The parked members were nudged: both, or the one that was still parked when the other's
        # retry (kube-scheduler's own, on the third pod's creation) made the plan.
        assert {name for _, name, _ in api.state.patches} & {"late-0", "late-1"}
        assert "gangplank_gang_kicks_total" in extender.metrics()


def test_a_partly_bound_gang_is_completed_first_next_to_its_running_members(
    api: FakeApiServer,
) -> None:
    add_nodes(api, 2, prefix="a", labels={"network.gangplank.io/rack": "r1"})
    add_nodes(api, 3, prefix="b", labels={"network.gangplank.io/rack": "r2"})
    members = gang_pods("resume", 3, gpu=8)
    running = {
        **members[0],
        "spec": {**members[0]["spec"], "nodeName": "b0"},
        "status": {"phase": "Running"},
    }
    create(api, running, *members[1:])  # as found after a restart of gangplank
    with Extender(api) as extender:
        scheduler = KubeScheduler(api, extender)
        scheduler.settle()
        placed = scheduler.bound("resume")
        assert len(placed) == 3
        assert set(placed.values()) <= {"b0", "b1", "b2"}, "the running member's rack"


def _volcano(name: str) -> dict[str, Any]:
    return pod(name, gpu=8, annotations={"scheduling.k8s.io/group-name": "pg"})


def _coscheduling(name: str) -> dict[str, Any]:
    return pod(name, gpu=8, labels={"scheduling.x-k8s.io/pod-group": "pg"})


def _native(name: str) -> dict[str, Any]:
    return native_member(name, "pg", gpu=8)


@pytest.mark.parametrize(
    "kind,member,group",
    [
        ("volcano-podgroups", _volcano, pod_group("pg", 2)),
        ("coscheduling-podgroups", _coscheduling, pod_group("pg", 2)),
        ("native-podgroups", _native, native_pod_group("pg", 2)),
    ],
    ids=["Volcano CRD", "coscheduling CRD", "Kubernetes' own PodGroup API switched on"],
)
def test_a_podgroup_kind_installed_after_gangplank_starts_is_picked_up_within_seconds(
    api: FakeApiServer,
    kind: str,
    member: Callable[[str], dict[str, Any]],
    group: dict[str, Any],
) -> None:
    """Not at the next 60-second poll: a waiting pod that names a PodGroup of a kind not
    installed makes gangplank look for the kind again (every 3 s at most), and the parked
    members are nudged once the PodGroup says the gang is complete."""
    api.state.absent.add(kind)
    add_nodes(api, 2)
    with Extender(api) as extender:
        scheduler = KubeScheduler(api, extender)
        create(api, *[member(f"v{i}") for i in range(2)])
        scheduler.settle()
        assert scheduler.bound("v") == {}
        installed = time.monotonic()
        api.install(kind)
        api.put(kind, group)
        scheduler.settle(timeout=20, until=lambda: len(scheduler.bound("v")) == 2)
        took = time.monotonic() - installed
        assert len(scheduler.bound("v")) == 2, scheduler.reasons
        assert took < 10, f"picked up after {took:.1f} s"
