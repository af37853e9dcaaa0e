"""Why a pod waits and what the scheduler holds (`core/report/why.py`): the answers behind
`gangplank why`, `gangplank status` and `gangplank pods`."""

from __future__ import annotations

from typing import Any

from extender.core.engine import Engine
from extender.core.report.why import (
    describe_pods,
    explain,
    find_pod,
    gangplanks,
    held_pods,
    list_pods,
    not_held,
    situation,
    status,
)
from extender.kube.convert import pod_from_api
from tests.builders import gang_pods, node, pod, pod_info
from tests.cluster import Cluster

CREATED = 1_796_119_200.0  # the builders' creation time (2026-12-01T10:00:00Z)
NO_ROOM = "gang default/g: needs 2 pods of 8 nvidia.com/gpu, 1 cpu, 1Gi memory; only 1 fit"


def one_node_for_a_gang_of_two() -> tuple[Cluster, list[dict[str, Any]]]:
    members = gang_pods("g", 2, gpu=8)
    web = pod("web", node="n0", gpu=0, phase="Running", created="2026-12-01T09:00:00Z")
    other = pod("theirs", node="n0", gpu=0, phase="Running")
    other["spec"]["schedulerName"] = "default-scheduler"
    return Cluster(nodes=[node("n0")], pods=[*members, web, other]), members


def test_a_pod_s_situation_in_a_few_words() -> None:
    assert situation(pod_info(phase="Succeeded", node="n1"), None) == "finished (Succeeded) on n1"
    assert situation(pod_info(node="n1", phase="Running"), None) == "running on n1"
    assert situation(pod_info(), "n2") == "planned on n2"
    assert situation(pod_info(), None) == "waiting"


def test_a_gang_member_lacking_room_is_explained_in_one_line_with_its_reason() -> None:
    cluster, members = one_node_for_a_gang_of_two()
    co = Engine()
    snapshot = cluster.snap()
    co.filter(snapshot, pod_from_api(members[0]), ["n0"], CREATED)
    found = find_pod(snapshot, "default", "g-0")
    assert found is not None
    why = explain(co, snapshot, found, CREATED + 1)
    assert why["line"] == (
        f"pod default/g-0, gang default/g (0 of 2 running, 2 exist); waiting: {NO_ROOM}"
    )
    assert why["gang"]["planned"] is False and why["reason"] == NO_ROOM
    assert why["hold"] == {"job": "gang default/g", "secondsLeft": 119.0}


def test_the_status_lists_waiting_gangs_with_how_many_members_are_parked() -> None:
    cluster, members = one_node_for_a_gang_of_two()
    co = Engine()
    co.filter(cluster.snap(), pod_from_api(members[0]), ["n0"], CREATED)
    now = status(co, cluster.snap(), CREATED + 1)
    assert now["waitingGangs"] == [{"job": "gang default/g", "reason": NO_ROOM, "parked": 1}]
    assert now["plans"] == [] and now["reservedPods"] == 0 and now["policy"] is None


def test_a_pod_not_held_is_said_to_be_finished_deleted_or_unknown() -> None:
    cluster, _ = one_node_for_a_gang_of_two()
    assert find_pod(cluster.snap(), "default", "nobody") is None
    assert not_held("default", "nobody").startswith(
        "pod default/nobody is not in gangplank's view of the cluster"
    )


def test_gangplank_s_pods_are_listed_waiting_first_and_others_left_out() -> None:
    cluster, _ = one_node_for_a_gang_of_two()
    snapshot = cluster.snap()
    assert sorted(p.name for p in held_pods(snapshot)) == ["g-0", "g-1", "theirs", "web"]
    listed = list_pods(snapshot, None, {"gangplank"})
    assert listed is not None
    assert [p.name for p, _ in listed] == ["g-0", "g-1", "web"], "theirs is another scheduler's"
    assert [p.name for p, _ in list_pods(snapshot, None, {"gangplank"}, waiting=True) or []] == [
        "g-0",
        "g-1",
    ]
    assert list_pods(snapshot, None, {"gangplank"}, queue="team") is None, "no such queue"
    theirs = find_pod(snapshot, "default", "theirs")
    assert theirs is not None and not gangplanks(theirs, {"gangplank"})


def test_the_rows_of_gangplank_pods_say_gang_state_and_how_long_it_waited() -> None:
    cluster, _ = one_node_for_a_gang_of_two()
    listed = list_pods(cluster.snap(), None, {"gangplank"}) or []
    rows = describe_pods(listed, lambda p: "n0" if p.name == "g-1" else None, CREATED + 30)
    assert rows == [
        {
            "pod": "default/g-0",
            "gang": "default/g",
            "queue": None,
            "state": "waiting",
            "node": None,
            "waitingSeconds": 30.0,
        },
        {
            "pod": "default/g-1",
            "gang": "default/g",
            "queue": None,
            "state": "planned on n0",
            "node": None,
            "waitingSeconds": 30.0,
        },
        {"pod": "default/web", "gang": None, "queue": None, "state": "running on n0", "node": "n0"},
    ]
