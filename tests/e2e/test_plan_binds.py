"""gangplank binds the plan's other members itself once a filter call plans a gang (the default,
`--bind-planned-members`; the asking member goes on through kube-scheduler's bind), except members
whose volumes or DRA claims kube-scheduler's own bind cycle binds or allocates: those keep its
path."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from extender.core.gangs.plan_record import PLAN_ANNOTATION as PLAN
from extender.core.gangs.plan_record import decode
from tests.builders import gang_pods, node, pod
from tests.e2e.test_failover import bound, schedule
from tests.fakeapi import FakeApiServer
from tests.scheduler_sim import Extender, KubeScheduler

NODES = [f"n{i}" for i in range(4)]


def wait_for(check: Callable[[], bool], seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def node_of(api: FakeApiServer, name: str) -> str | None:
    with api.cond:
        found: str | None = api.state.objects["pods"][f"default/{name}"]["spec"].get("nodeName")
        return found


def first_filter(extender: Extender, member: dict[str, Any]) -> list[str]:
    """The first member's filter, asked until gangplank's cache has the whole gang."""
    passed: list[str] = []

    def asked() -> bool:
        nonlocal passed
        _, answer = extender.post("filter", {"Pod": member, "Nodes": None, "NodeNames": NODES})
        passed = answer["NodeNames"]
        return bool(passed)

    assert wait_for(asked)
    return passed


def a_gang_of_4_on_4_nodes(api: FakeApiServer) -> list[dict[str, Any]]:
    for name in NODES:
        api.put("nodes", node(name, gpu=8))
    return [api.put("pods", p) for p in gang_pods("train", 4, gpu=8)]


def test_the_filter_that_plans_a_gang_has_gangplank_bind_its_other_members_at_once(
    api: FakeApiServer,
) -> None:
    members = a_gang_of_4_on_4_nodes(api)
    with Extender(api, bind_planned=True) as extender:
        planned = first_filter(extender, members[0])
        others = ["train-1", "train-2", "train-3"]
        assert wait_for(lambda: all(node_of(api, name) for name in others))
        assert node_of(api, "train-0") is None  # the asking member is kube-scheduler's to bind
        status, answer = extender.post(
            "bind",
            {
                "PodName": "train-0",
                "PodNamespace": "default",
                "PodUID": members[0]["metadata"]["uid"],
                "Node": planned[0],
            },
        )
        assert (status, answer) == (200, {"Error": ""})
        assert sorted(node_of(api, f"train-{i}") or "" for i in range(4)) == NODES
        assert len(api.state.bindings) == 4
        assert extender.runtime.scheduler.reservations.pods() == 0


@pytest.mark.parametrize(
    "spec",
    [
        {"volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data-1"}}]},
        {"volumes": [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}]},
        {"resourceClaims": [{"name": "gpu", "resourceClaimName": "gpu-claim"}]},
    ],
    ids=[
        "a claim that may wait for its first consumer is bound in kube-scheduler's bind cycle",
        "an ephemeral volume's claim is too",
        "a DRA claim is allocated there",
    ],
)
def test_a_member_that_needs_kube_schedulers_bind_cycle_is_left_to_it(
    api: FakeApiServer, spec: dict[str, Any]
) -> None:
    for name in NODES:
        api.put("nodes", node(name, gpu=8))
    pods = gang_pods("train", 2, gpu=8)
    pods[1]["spec"].update(spec)
    members = [api.put("pods", p) for p in pods]
    with Extender(api, bind_planned=True) as extender:
        first_filter(extender, members[0])
        time.sleep(0.5)  # what gangplank would bind, it binds within milliseconds
        assert node_of(api, "train-1") is None
        scheduler = KubeScheduler(api, extender)
        scheduler.settle(timeout=30, until=lambda: len(scheduler.bound("train-")) == 2)
        assert len(set(scheduler.bound("train-").values())) == 2


def test_the_plan_is_written_once_on_the_asking_member_before_any_member_binds(
    api: FakeApiServer,
) -> None:
    """One write for the plan, not one a member: the asking member's record names every node."""
    members = a_gang_of_4_on_4_nodes(api)
    with Extender(api, bind_planned=True) as extender:
        first_filter(extender, members[0])
        assert wait_for(lambda: all(node_of(api, f"train-{i}") for i in (1, 2, 3)))
        with api.cond:
            records = [(name, body) for _, name, body in api.state.patches if PLAN in str(body)]
        assert [name for name, _ in records] == ["train-0"], records
        record = decode(records[0][1]["metadata"]["annotations"][PLAN])
        assert record is not None and len(set(record.members.values())) == 4
        for i in (1, 2, 3):
            assert record.members[members[i]["metadata"]["uid"]] == node_of(api, f"train-{i}")


def test_killed_mid_wave_the_gang_comes_back_whole_from_its_one_record(
    api: FakeApiServer,
) -> None:
    """The API server fails after two Bindings of the wave; gangplank is killed; a new process
    (kube-scheduler binding now) holds the other two members' nodes from the record, so a gang
    that arrives first cannot take them, and the gang is completed whole where it was planned."""
    members = a_gang_of_4_on_4_nodes(api)
    api.state.bind_budget = 2
    with Extender(api, bind_planned=True) as extender:
        first_filter(extender, members[0])
        assert wait_for(lambda: len(bound(api, "train-")) == 2)
        time.sleep(0.3)  # the refused Bindings are answered
    asking = api.object("pods", "default", "train-0")
    assert asking is not None
    planned = decode(asking["metadata"]["annotations"][PLAN])
    assert planned is not None
    api.state.bind_budget = None
    for i in range(2):
        api.put("pods", pod(f"intruder-{i}", gpu=8, priority=1000))  # plain pods, higher
    with Extender(api) as new:
        scheduler = KubeScheduler(api, new)
        time.sleep(0.3)
        schedule(scheduler, "intruder-0", "intruder-1")  # the worst order: the newcomers first
        scheduler.settle(timeout=30, until=lambda: len(bound(api, "train-")) == 4)
        assert bound(api, "intruder-") == {}, scheduler.reasons
        by_uid = {m["metadata"]["uid"]: m["metadata"]["name"] for m in members}
        assert bound(api, "train-") == {by_uid[u]: n for u, n in planned.members.items()}
