"""Plans (`core/gangs/plans.py`): a planned pod passes its planned node only, and a plan made by
preemption lets its pods pass only once every victim has left."""

from __future__ import annotations

from extender.core.gangs.plans import Plan, planned_answer
from extender.core.model.snapshot import PodInfo
from extender.kube.convert import pod_from_api
from tests.builders import gang_pods, node, pod
from tests.cluster import Cluster

KEY = "gangplank:default/g"
LOW = pod("low", node="n1", gpu=8, phase="Running")  # on the node planned for g-1


def a_gang(*, victims: bool) -> tuple[Cluster, Plan]:
    """Gang g's two members planned on n0 and n1; `victims`: LOW must leave n1 first."""
    members = gang_pods("g", 2, gpu=8)
    cluster = Cluster(nodes=[node("n0"), node("n1")], pods=[*members, *([LOW] if victims else [])])
    pods = [pod_from_api(p) for p in members]
    assignments = {pods[0].uid: "n0", pods[1].uid: "n1"}
    left = {LOW["metadata"]["uid"]: "n1"} if victims else {}
    return cluster, Plan.with_victims(KEY, pods, assignments, left, deadline=60.0)


def member(cluster: Cluster, name: str) -> PodInfo:
    return next(p for p in cluster.snap().groups[KEY] if p.name == name)


def test_a_planned_pod_passes_its_planned_node_only() -> None:
    cluster, plan = a_gang(victims=False)
    result = planned_answer(cluster.snap(), plan, member(cluster, "g-0"), ["n0", "n1", "n2"])
    assert result.passed == ["n0"] and not result.unresolvable


def test_a_planned_node_kube_scheduler_did_not_offer_is_said_so() -> None:
    cluster, plan = a_gang(victims=False)
    result = planned_answer(cluster.snap(), plan, member(cluster, "g-0"), ["n1"])
    assert result.passed == []
    assert result.unresolvable == {
        "n1": "gang default/g: planned on node n0, which kube-scheduler did not offer"
    }


def test_the_pods_of_a_preemption_plan_wait_until_every_victim_has_left() -> None:
    cluster, plan = a_gang(victims=True)
    snapshot = cluster.snap()
    assert plan.leaving(snapshot) == 1
    second = member(cluster, "g-1")
    result = planned_answer(snapshot, plan, second, ["n0", "n1"])
    assert result.passed == []
    assert set(result.unresolvable.values()) == {
        "gang default/g: planned on node n1, waiting for 1 preempted pod to leave "
        "(its pods start together)"
    }
    cluster.delete("pods", LOW)
    assert plan.leaving(cluster.snap()) == 0
    assert planned_answer(cluster.snap(), plan, second, ["n0", "n1"]).passed == ["n1"]


def test_a_plan_made_by_preemption_keeps_the_requests_of_its_planned_members_only() -> None:
    members = [pod_from_api(p) for p in gang_pods("g", 3, gpu=8)]
    plan = Plan.with_victims(KEY, members, {members[0].uid: "n0"}, {}, deadline=60.0)
    assert set(plan.requests) == {members[0].uid}
    assert plan.last_member_created == max(p.created for p in members)
