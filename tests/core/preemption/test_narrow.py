"""kube-scheduler's preemption narrowed (`core/preemption/narrow.py`): a planned pod keeps only its
planned victims on its planned node; a gang member with no plan keeps none; a pod alone keeps
only victims the rules allow (never a gang member, but an elastic gang's extras), on nodes where
they make room and no PodDisruptionBudget breaks."""

from __future__ import annotations

from typing import Any

from extender.core.gangs.plans import Plan
from extender.core.model.answers import Victims
from extender.core.model.snapshot import PodInfo, Snapshot
from extender.core.preemption.narrow import narrow
from extender.core.queues.policy import PreemptionRules
from extender.kube.convert import pod_from_api
from tests.builders import gang_pods, node, pod
from tests.cluster import Cluster

NOW = 1_800_000_000.0


def rules(queue: str | None) -> PreemptionRules:
    return PreemptionRules()


def no_queue(pod: PodInfo) -> str | None:
    return None


def running(name: str, on: str, gpu: int = 8, priority: int = 0) -> dict[str, Any]:
    return pod(name, node=on, gpu=gpu, priority=priority, phase="Running")


def elastic_member(name: str, on: str) -> dict[str, Any]:
    """A running 4-GPU member of elastic gang e (minimum 2, maximum 4)."""
    member = running(name, on, gpu=4)
    member["metadata"]["labels"] = {"gangplank.io/gang": "e"}
    member["metadata"]["annotations"] = {
        "gangplank.io/gang-size": "2",
        "gangplank.io/gang-max": "4",
    }
    return member


def uid(raw: dict[str, Any]) -> str:
    return str(raw["metadata"]["uid"])


def narrowed(
    snapshot: Snapshot,
    raw: dict[str, Any],
    candidates: dict[str, Victims],
    plan: Plan | None = None,
) -> dict[str, Victims]:
    return narrow(snapshot, pod_from_api(raw), candidates, NOW, plan, rules, no_queue)


def test_a_planned_pod_keeps_only_its_planned_victims_on_its_planned_node() -> None:
    low, other, far = running("low", "n0"), running("other", "n0", gpu=0), running("far", "n1")
    urgent = pod("urgent", gpu=8, priority=100)
    snapshot = Cluster(nodes=[node("n0"), node("n1")], pods=[low, other, far, urgent]).snap()
    me = pod_from_api(urgent)
    plan = Plan.with_victims("pod:default/urgent", [me], {me.uid: "n0"}, {uid(low): "n0"}, NOW)
    candidates = {
        "n0": Victims((uid(low), uid(other))),
        "n1": Victims((uid(far),)),
    }
    assert narrowed(snapshot, urgent, candidates, plan) == {"n0": Victims((uid(low),))}
    assert narrowed(snapshot, urgent, {"n1": Victims((uid(far),))}, plan) == {}, "not its node"
    broken = {"n0": Victims((uid(low),), pdb_violations=1)}
    assert narrowed(snapshot, urgent, broken, plan) == {}, "a budget would break"


def test_a_gang_member_without_a_plan_keeps_no_victim() -> None:
    low = running("low", "n0")
    member = gang_pods("g", 2, gpu=8, priority=100)[0]
    snapshot = Cluster(nodes=[node("n0")], pods=[low, member]).snap()
    assert narrowed(snapshot, member, {"n0": Victims((uid(low),))}) == {}


def test_a_pod_alone_keeps_lower_priority_pods_alone_where_they_make_room() -> None:
    low = running("low", "n0", priority=0)
    equal = running("equal", "n1", priority=100)
    small, stays = running("small", "n2", gpu=2), running("stays", "n2", gpu=6, priority=1000)
    urgent = pod("urgent", gpu=8, priority=100)
    nodes = [node("n0"), node("n1"), node("n2")]
    snapshot = Cluster(nodes=nodes, pods=[low, equal, small, stays, urgent]).snap()
    candidates = {
        "n0": Victims((uid(low),)),
        "n1": Victims((uid(equal),)),
        "n2": Victims((uid(small),)),
    }
    assert narrowed(snapshot, urgent, candidates) == {"n0": Victims((uid(low),))}, (
        "n1: the same priority may not go; n2: the 2 GPUs freed do not make room for 8"
    )


def test_a_pod_alone_never_takes_a_gang_member_or_breaks_a_budget() -> None:
    member = {**gang_pods("running", 1, gpu=8)[0], "status": {"phase": "Running"}}
    member["spec"]["nodeName"] = "n0"
    low = running("low", "n1")
    urgent = pod("urgent", gpu=8, priority=100)
    snapshot = Cluster(nodes=[node("n0"), node("n1")], pods=[member, low, urgent]).snap()
    candidates = {
        "n0": Victims((uid(member),)),
        "n1": Victims((uid(low),), pdb_violations=1),
    }
    assert narrowed(snapshot, urgent, candidates) == {}
    assert narrowed(snapshot, urgent, {"n1": Victims((uid(low),))}) == {"n1": Victims((uid(low),))}


def test_a_pod_alone_may_take_an_elastic_gangs_extras_but_never_its_minimum() -> None:
    """Gang e runs 3 (minimum 2, maximum 4) of 4-GPU members, two on n0: kube-scheduler proposes
    both for an 8-GPU pod; one is an extra, so only one may go, which is not room enough there."""
    members = [elastic_member(f"e-{i}", on) for i, on in enumerate(["n0", "n0", "n1"])]
    other = running("other", "n1", gpu=4)
    urgent = pod("urgent", gpu=4, priority=100)
    snapshot = Cluster(nodes=[node("n0"), node("n1")], pods=[*members, other, urgent]).snap()
    both = {"n0": Victims((uid(members[0]), uid(members[1])))}
    assert narrowed(snapshot, urgent, both) == {"n0": Victims((uid(members[0]),))}, "one extra"
    whole = pod("whole", gpu=8, priority=100)
    assert narrowed(snapshot, whole, both) == {}, "two would break the minimum"
