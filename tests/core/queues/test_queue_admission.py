"""Admission by quota, per job: the engine on snapshots, with the clock in the test's hand."""

from __future__ import annotations

from typing import Any

from extender.core.engine import Engine
from extender.core.model.answers import FilterResult
from extender.core.queues.admission import check_quota
from extender.core.queues.policy_parse import parse_policy
from extender.kube.convert import pod_from_api
from tests.builders import (
    gang_pods,
    gpus,
    node,
    nothing_to_preempt,
    pod,
    policy_doc,
    queue,
)
from tests.cluster import Cluster

QUEUE = "gangplank.io/queue"
AN_HOUR_IN = 1_796_122_800.0  # 2026-12-01T11:00Z: an hour after the builders' pods were created


def in_queue(name: str, q: str | None, *, gpu: int = 1, **kwargs: Any) -> dict[str, Any]:
    labels = {QUEUE: q} if q else {}
    return pod(name, gpu=gpu, labels={**labels, **kwargs.pop("labels", {})}, **kwargs)


def running(name: str, q: str | None, gpu: int, on: str, **kwargs: Any) -> dict[str, Any]:
    return in_queue(name, q, gpu=gpu, node=on, phase="Running", **kwargs)


def cluster(*pods: dict[str, Any], nodes: int = 4, gpu: int = 8) -> Cluster:
    return Cluster(nodes=[node(f"n{i}", gpu=gpu, cpu="64") for i in range(nodes)], pods=pods)


def engine_with(*queues: dict[str, Any]) -> Engine:
    return Engine(policy=parse_policy(policy_doc(*queues), "policy.yaml"))


def decide(co: Engine, c: Cluster, raw: dict[str, Any], now: float = 0.0) -> FilterResult:
    return co.filter(c.snap(), pod_from_api(raw), sorted(c.snap().nodes), now)


def reason(result: FilterResult) -> str:
    reasons = set(result.unresolvable.values()) | set(result.failed.values())
    assert len(reasons) == 1, reasons
    assert not result.passed
    return reasons.pop()


def test_without_a_policy_and_for_pods_in_no_queue_nothing_changes() -> None:
    c = cluster()
    assert decide(Engine(), c, in_queue("p", "anything")).passed == ["n0", "n1", "n2", "n3"]
    co = engine_with(queue("research", max=gpus(0)))
    assert decide(co, c, in_queue("plain", None)).passed == ["n0", "n1", "n2", "n3"]


def test_a_queue_at_its_max_fails_every_node_saying_how_much_is_in_use_and_needed() -> None:
    c = cluster(*(running(f"r{i}", "research", 8, f"n{i}") for i in range(3)), nodes=5)
    c.add("pods", running("r3", "research", 6, "n3"))
    co = engine_with(queue("research", max=gpus(32)))
    result = decide(co, c, in_queue("more", "research", gpu=4))
    assert set(result.unresolvable) == {"n0", "n1", "n2", "n3", "n4"}, "unresolvable: no preemption"
    assert reason(result) == (
        "queue research: nvidia.com/gpu 30 of max 32 in use, pod default/more needs 4"
        + nothing_to_preempt("research")
    )
    assert decide(co, c, in_queue("fits", "research", gpu=2)).passed


def test_a_parent_max_holds_its_children_together() -> None:
    c = cluster(running("a", "vision", 8, "n0"), running("b", "nlp", 8, "n1"))
    co = engine_with(
        queue("ml", max=gpus(16)), queue("vision", parent="ml"), queue("nlp", parent="ml")
    )
    assert reason(decide(co, c, in_queue("x", "vision"))) == (
        "queue vision: parent queue ml: nvidia.com/gpu 16 of max 16 in use, pod default/x needs 1"
        + nothing_to_preempt("vision")
    )


def test_a_label_naming_no_queue_holds_the_pod_and_says_which_label() -> None:
    co = engine_with(queue("research"))
    assert reason(decide(co, cluster(), in_queue("p", "reserch"))) == (
        "pod default/p: queue 'reserch' does not exist (pod label gangplank.io/queue)"
    )
    volcano = pod("v", labels={"volcano.sh/queue-name": "nope"})
    assert "(pod label volcano.sh/queue-name)" in reason(decide(co, cluster(), volcano))


def test_a_closed_queue_holds_new_work_and_a_draining_one_admits_nothing_new() -> None:
    co = engine_with(queue("old", state="draining"), queue("shut", state="closed"))
    c = cluster()
    assert reason(decide(co, c, in_queue("a", "shut"))) == (
        "queue shut is closed: it holds new work until it is opened"
    )
    assert reason(decide(co, c, in_queue("b", "old"))) == (
        "queue old is draining: it admits nothing new (running work goes on)"
    )


def test_a_draining_queue_completes_a_gang_that_is_already_running_in_part() -> None:
    members = gang_pods("resume", 2, gpu=8, labels={"gangplank.io/gang": "resume", QUEUE: "old"})
    members[0] = {**members[0], "spec": {**members[0]["spec"], "nodeName": "n0"}}
    c = cluster(*members)
    co = engine_with(queue("old", state="draining"))
    assert decide(co, c, members[1]).passed != []


def test_the_namespace_queue_applies_to_pods_without_a_label() -> None:
    c = cluster(running("r", None, 8, "n0", namespace="vision"))
    co = engine_with(queue("vision", max=gpus(8), namespaces=["vision"]))
    assert "queue vision: nvidia.com/gpu 8 of max 8" in reason(
        decide(co, c, in_queue("p", None, namespace="vision"))
    )


def test_a_queue_borrows_idle_gpus_beyond_its_guarantee() -> None:
    c = cluster(*(running(f"a{i}", "a", 8, f"n{i}") for i in range(2)))
    co = engine_with(queue("a", guarantee=gpus(8)), queue("b", guarantee=gpus(24)))
    assert decide(co, c, in_queue("more", "a", gpu=8)).passed, "b has nothing waiting: idle"


def test_borrowing_stops_when_the_lender_has_work_waiting() -> None:
    c = cluster(*(running(f"a{i}", "a", 8, f"n{i}") for i in range(2)))
    c.add("pods", in_queue("b-job", "b", gpu=8), in_queue("b-job2", "b", gpu=8))
    co = engine_with(queue("a", guarantee=gpus(8)), queue("b", guarantee=gpus(24)))
    assert reason(decide(co, c, in_queue("more", "a", gpu=8))) == (
        "queue a: pod default/more needs 8 nvidia.com/gpu beyond its guarantee (16 of 8 in use); "
        "16 are idle but 16 of them are guaranteed to queues with work waiting (b 16)"
        + nothing_to_preempt("a")
    )
    assert decide(co, c, in_queue("b-job", "b", gpu=8)).passed, "the lender's own work goes"


def test_what_the_lender_waits_for_is_protected_no_more() -> None:
    c = cluster(*(running(f"a{i}", "a", 8, f"n{i}") for i in range(2)))
    c.add("pods", in_queue("small", "b", gpu=2))
    co = engine_with(queue("a", guarantee=gpus(8)), queue("b", guarantee=gpus(24)))
    assert decide(co, c, in_queue("more", "a", gpu=8)).passed, "16 idle - 8 >= 2 owed to b"


def test_a_guarantee_too_small_for_every_job_waiting_under_it_holds_nothing_back() -> None:
    # b has 2 of its 4 GPUs left and its only waiting gang needs 8: it has to borrow like a, so
    # the 2 are not held for it. (Held, a's and b's gangs would each wait for the other, with
    # GPUs idle.)
    c = cluster(running("a0", "a", 8, "n0"), running("b0", "b", 2, "n1"), nodes=2)
    c.add("pods", *gang_pods("b-big", 2, gpu=4, labels={QUEUE: "b"}))
    queues = (queue("a", guarantee=gpus(8)), queue("b", guarantee=gpus(4)))
    assert decide(engine_with(*queues), c, in_queue("more", "a", gpu=6)).passed
    c.add("pods", in_queue("b-small", "b", gpu=1))
    assert "6 are idle but 2 of them are guaranteed to queues with work waiting (b 2)" in reason(
        decide(engine_with(*queues), c, in_queue("more", "a", gpu=6))
    ), "once one waiting job fits in b's guarantee, what is left of it is held"


def test_siblings_share_their_parents_guarantee_before_anyone_elses() -> None:
    c = cluster(running("v0", "vision", 8, "n0"))
    c.add("pods", in_queue("prod-job", "prod", gpu=8))
    co = engine_with(
        queue("ml", guarantee=gpus(16)),
        queue("vision", parent="ml", guarantee=gpus(4)),
        queue("nlp", parent="ml", guarantee=gpus(4)),
        queue("prod", guarantee=gpus(16)),
    )
    # vision is over its own guarantee but within ml's: prod's waiting work does not stop it.
    assert decide(co, c, in_queue("v1", "vision", gpu=8)).passed
    c.add("pods", running("v1", "vision", 8, "n1"))
    # Now beyond ml's guarantee too: prod's claim counts (16 idle, 8 needed, 8 owed to prod).
    c.add("pods", in_queue("prod-job2", "prod", gpu=8))
    assert "guaranteed to queues with work waiting (prod 16)" in reason(
        decide(co, c, in_queue("v2", "vision", gpu=8))
    )


def test_a_4_pod_gang_is_never_admitted_in_part_by_quota() -> None:
    members = gang_pods("train", 4, gpu=1, labels={"gangplank.io/gang": "train", QUEUE: "q"})
    blocker = running("r", "q", 6, "n0")
    c = cluster(*members, blocker)
    co = engine_with(queue("q", max=gpus(8)))
    for member in members:
        assert reason(decide(co, c, member)) == (
            "queue q: nvidia.com/gpu 6 of max 8 in use, gang default/train needs 4"
            + nothing_to_preempt("q")
        )
    assert co.reservations.pods() == 0
    c.delete("pods", blocker)
    assert all(len(decide(co, c, m).passed) == 1 for m in members)
    assert co.reservations.pods() == 4


def test_a_planned_gang_counts_against_its_queue_before_it_binds() -> None:
    members = gang_pods("train", 2, gpu=8, labels={"gangplank.io/gang": "train", QUEUE: "q"})
    c = cluster(*members)
    co = engine_with(queue("q", max=gpus(20)))
    assert decide(co, c, members[0]).passed
    assert reason(decide(co, c, in_queue("other", "q", gpu=8))) == (
        "queue q: nvidia.com/gpu 16 of max 20 in use, pod default/other needs 8"
        + nothing_to_preempt("q")
    )
    assert decide(co, c, members[1]).passed, "a planned member passes: its quota is reserved"


def test_finished_pods_free_their_quota_and_the_refused_pod_is_nudged() -> None:
    done = running("done", "q", 8, "n0")
    c = cluster(done)
    co = engine_with(queue("q", max=gpus(8)))
    waiting = in_queue("next", "q", gpu=8)
    c.add("pods", waiting)
    assert reason(decide(co, c, waiting, now=1.0))
    assert co.kick_candidates(c.snap(), 2.0) == [], "nothing freed yet"
    c.add("pods", {**done, "status": {"phase": "Succeeded"}})
    assert co.kick_candidates(c.snap(), 3.0) == [("default", "next")]
    assert decide(co, c, waiting, now=3.5).passed


def test_a_policy_change_nudges_pods_it_may_now_admit() -> None:
    co = engine_with(queue("research"))
    c = cluster()
    typo = in_queue("p", "reserch")
    c.add("pods", typo)
    reason(decide(co, c, typo))
    co.set_policy(parse_policy(policy_doc(queue("research"), queue("reserch"))))
    assert co.kick_candidates(c.snap(), 1.0) == [("default", "p")]
    assert decide(co, c, typo).passed


def test_pods_of_another_scheduler_are_not_work_waiting_in_a_queue() -> None:
    other = in_queue("elsewhere", "b", gpu=8)
    other["spec"]["schedulerName"] = "default-scheduler"
    c = cluster(*(running(f"a{i}", "a", 8, f"n{i}") for i in range(2)), other)
    co = engine_with(queue("a", guarantee=gpus(8)), queue("b", guarantee=gpus(24)))
    assert decide(co, c, in_queue("more", "a", gpu=8)).passed


def test_usage_counts_gpus_cpu_memory_and_what_the_policy_names() -> None:
    raw = running("r", "q", 8, "n0")
    raw["spec"]["containers"][0]["resources"]["requests"]["example.com/fpga"] = "2"
    raw["spec"]["containers"][0]["resources"]["requests"]["ephemeral-storage"] = "1Gi"
    c = cluster(raw)
    co = engine_with(queue("q", max={"example.com/fpga": 4}))
    book = co.book_for(c.snap())
    assert book.state["q"].used == {
        "nvidia.com/gpu": 8,
        "cpu": 1000,
        "memory": 2**30,
        "example.com/fpga": 2,
    }


# ---- a queue at its max: victims' usage counts before they leave ----


def test_a_higher_priority_pod_in_a_queue_at_max_plans_on_its_own_queues_lower_work() -> None:
    """4 nodes of 8 GPUs: the team's four priority-100 pods fill its max of 32 and the cluster;
    a priority-1000 pod of the team gets a plan that evicts exactly one of them."""
    c = cluster(*(running(f"low{i}", "team", 8, f"n{i}", priority=100) for i in range(4)))
    co = engine_with(queue("team", max=gpus(32)))
    result = decide(co, c, in_queue("urgent", "team", gpu=8, priority=1000), now=AN_HOUR_IN)
    assert "waiting for 1 preempted pod to leave" in reason(result)
    evicted = co.preemption.take_evictions()
    assert [e.name for e in evicted] in (["low0"], ["low1"], ["low2"], ["low3"])
    assert evicted[0].rule == "priority" and evicted[0].queue == "team"


def test_victims_in_a_queue_at_max_may_run_on_nodes_the_job_cannot_use() -> None:
    """The queue, not the cluster, is full: the pod may only go on n4 (its node selector), its
    queue's lower-priority pod runs on n0; evicting it makes room in the quota, not on n4."""
    c = cluster(running("low", "team", 8, "n0", priority=100), nodes=5)
    picky = in_queue("urgent", "team", gpu=8, priority=1000)
    picky["spec"]["nodeSelector"] = {"kubernetes.io/hostname": "n4"}
    co = engine_with(queue("team", max=gpus(8)))
    result = decide(co, c, picky, now=AN_HOUR_IN)
    assert "planned on node n4, waiting for 1 preempted pod to leave" in reason(result)
    assert [e.name for e in co.preemption.take_evictions()] == ["low"]


def test_freed_usage_lowers_a_queue_and_every_ancestor() -> None:
    """check_quota with `freed`: a child's victims free room under its parent's max too."""
    c = cluster(running("a", "vision", 8, "n0"), running("b", "nlp", 8, "n1"))
    co = engine_with(
        queue("ml", max=gpus(16)), queue("vision", parent="ml"), queue("nlp", parent="ml")
    )
    book = co.book_for(c.snap())
    ask = {"nvidia.com/gpu": 8}
    assert not check_quota(book, "vision", ask, "pod default/x").ok
    assert check_quota(book, "vision", ask, "pod default/x", {"nlp": ask}).ok
    assert check_quota(book, "vision", ask, "pod default/x", {"vision": ask}).ok
    half = {"nvidia.com/gpu": 4}
    assert check_quota(book, "vision", ask, "pod default/x", {"nlp": half}).reason == (
        "queue vision: parent queue ml: nvidia.com/gpu 12 of max 16 in use, pod default/x needs 8"
    )


def test_a_preemption_needing_more_jobs_than_a_minutes_evictions_says_so() -> None:
    """16 one-GPU pods of priority 100 fill queue team's max of 16; a priority-1000 gang of 16
    one-GPU pods would need all 16 evicted, more than evictionsPerMinute (10) allows: nothing is
    evicted and the reason says which setting stands in the way (not "would not make room")."""
    lows = [running(f"low{i}", "team", 1, f"n{i % 2}", priority=100) for i in range(16)]
    gang = gang_pods("big", 16, gpu=1, priority=1000, labels={QUEUE: "team"})
    c = cluster(*lows, *gang, nodes=2)
    doc = {**policy_doc(queue("team", max=gpus(16))), "preemption": {"evictionsPerMinute": 10}}
    co = Engine(policy=parse_policy(doc, "policy.yaml"))
    why = reason(decide(co, c, gang[0], now=AN_HOUR_IN))
    assert why.endswith(
        "preemption would have to evict 16 jobs at once, more than "
        "preemption.evictionsPerMinute (10) allows: raise it for this job to preempt"
    ), why
    assert co.preemption.take_evictions() == []
