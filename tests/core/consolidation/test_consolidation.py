"""Consolidation through the engine (`core/consolidation/consolidation.py`): in the leader's
pass, a job that fits nowhere has room made by moving movable jobs, whose new places are kept
for their new pods, before anyone is preempted; nothing moves when the plan would not be whole."""

from __future__ import annotations

from typing import Any

import pytest

from extender.core.consolidation.consolidation import SLOT
from extender.core.consolidation.movable import Way
from extender.core.consolidation.moves import Move
from extender.core.engine import Engine
from extender.core.model.answers import Victims
from extender.core.queues.policy_parse import parse_policy
from extender.core.report.why import explain
from extender.kube.convert import pod_from_api
from tests.builders import job, node, pod, policy_doc, queue
from tests.cluster import Cluster

QUEUE = "gangplank.io/queue"
CREATED = 1_796_119_200.0
NOW = CREATED + 3600.0


def labels(movable: str) -> dict[str, str]:
    return {QUEUE: "ml", **({"gangplank.io/movable": movable} if movable else {})}


def replica(name: str, on: str, movable: str = "") -> dict[str, Any]:
    """A running 2-GPU pod of ReplicaSet `name` (its controller recreates it when evicted);
    `movable`: its gangplank.io/movable label ("": none)."""
    return pod(
        f"{name}-x1",
        gpu=2,
        node=on,
        phase="Running",
        labels=labels(movable),
        owner=("apps/v1", "ReplicaSet", name),
    )


def batch_job(name: str, on: str, movable: str = "") -> dict[str, Any]:
    """A running 2-GPU pod of batch/v1 Job `name` (parallelism 1)."""
    return pod(
        f"{name}-abcde",
        gpu=2,
        node=on,
        phase="Running",
        labels=labels(movable),
        job=name,
    )


def blocker(name: str, on: str, gpu: int) -> dict[str, Any]:
    """A running bare pod: nobody recreates it, so it is never moved."""
    return pod(name, gpu=gpu, node=on, phase="Running", labels={QUEUE: "ml"})


BIG = pod("big", gpu=8, labels={QUEUE: "ml"})


def scattered(*movers: dict[str, Any], extra: tuple[dict[str, Any], ...] = ()) -> Cluster:
    """Three 8-GPU nodes with 8 GPUs free in all: n1 runs the two movers (4 free), n2 and n3
    run six GPUs each of pods that stay (2 free each); the 8-GPU pod `big` waits."""
    pods = (*movers, blocker("x2", "n2", 6), blocker("x3", "n3", 6), BIG, *extra)
    return Cluster(nodes=[node("n1"), node("n2"), node("n3")], pods=pods)


def engine(allow: bool = False, moves: int | None = None, **doc: Any) -> Engine:
    top: dict[str, Any] = {"allow": allow}
    if moves is not None:
        top["movesPerMinute"] = moves
    raw = {**policy_doc(queue("ml", namespaces=["default"])), "consolidation": top, **doc}
    co = Engine(policy=parse_policy(raw, "policy.yaml"))
    co.lifecycle.suspend_workloads = True  # as the service runs it
    co.consolidation.active = True
    return co


def one_pass(co: Engine, c: Cluster, now: float = NOW) -> list[Move]:
    co.kick_candidates(c.snap(), now)
    return co.consolidation.take_moves()


def test_two_movable_jobs_move_to_planned_nodes_and_the_8_gpu_pod_gets_the_node_they_leave() -> (
    None
):
    c = scattered(replica("a", "n1", movable="true"), replica("b", "n1", movable="true"))
    co = engine()
    [move] = one_pass(co, c)
    assert move.key == "pod:default/big"
    assert sorted((j.key, j.way, sorted(j.targets.values())) for j in move.jobs) == [
        ("pod:default/a-x1", Way.EVICT, ["n2"]),
        ("pod:default/b-x1", Way.EVICT, ["n3"]),
    ] or sorted((j.key, sorted(j.targets.values())) for j in move.jobs) == [
        ("pod:default/a-x1", ["n3"]),
        ("pod:default/b-x1", ["n2"]),
    ]
    plan = co.reservations.get("pod:default/big")
    assert plan is not None and plan.moved
    assert set(plan.assignments.values()) == {"n1"}
    assert sorted(plan.victims) == sorted(p.uid for j in move.jobs for p in j.pods)
    assert all(e.rule == "consolidation" for j in move.jobs for e in j.evictions)
    message = move.jobs[0].message
    assert message.startswith("gangplank moves pod default/a-x1 (2 GPUs) from node n1 to n")
    assert message.endswith("to make room for pod default/big (8 GPUs in one node)")
    notices = {n.reason: n.message for n in co.take_notices()}
    assert notices["ConsolidationPlanned"].startswith(
        "pod default/big (8 GPUs in one node) fits once gangplank moves 2 job(s)"
    )
    assert co.preemption.take_evictions() == [], "no one is preempted"


def test_the_waiting_pod_waits_for_the_moved_pods_to_leave_with_a_reason_saying_so() -> None:
    c = scattered(replica("a", "n1", movable="true"), replica("b", "n1", movable="true"))
    co = engine()
    one_pass(co, c)
    snapshot = c.snap()
    result = co.filter(snapshot, pod_from_api(BIG), sorted(snapshot.nodes), NOW + 1)
    assert result.passed == []
    assert set(result.unresolvable.values()) == {
        "pod default/big: planned on node n1, waiting for 2 moved pods to leave "
        "(its pods start together)"
    }


def test_a_moved_jobs_new_pod_takes_the_place_kept_for_it_and_no_other() -> None:
    a, b = replica("a", "n1", movable="true"), replica("b", "n1", movable="true")
    c = scattered(a, b)
    co = engine()
    [move] = one_pass(co, c)
    target = next(j for j in move.jobs if j.key == "pod:default/a-x1").targets
    c.delete("pods", a)
    new = pod("a-x2", gpu=2, labels=labels("true"), owner=("apps/v1", "ReplicaSet", "a"))
    c.add("pods", new)
    snapshot = c.snap()
    result = co.filter(snapshot, pod_from_api(new), sorted(snapshot.nodes), NOW + 5)
    assert result.passed == list(target.values())
    plan = co.reservations.get("pod:default/a-x1")
    assert plan is not None and not any(uid.startswith(SLOT) for uid in plan.assignments)


def test_a_batch_job_is_moved_by_suspending_it_with_a_kept_record_that_spends_no_requeue() -> None:
    c = scattered(batch_job("a", "n1", movable="true"), batch_job("b", "n1", movable="true"))
    c.add("jobs", job("a", 1), job("b", 1))
    co = engine()
    [move] = one_pass(co, c)
    assert {j.way for j in move.jobs} == {Way.SUSPEND}
    suspension = move.jobs[0].suspension
    assert suspension is not None and suspension.workload.shown == "Job default/a"
    assert suspension.reason == "ConsolidationMove"
    record = co.lifecycle.requeues.get(move.jobs[0].key)
    assert record is not None and record.moved and record.count == 0
    assert [r.job for r in co.lifecycle.resumes_due(NOW + 10)] == [j.key for j in move.jobs]


@pytest.mark.parametrize(
    ("movers", "allow", "extra"),
    [
        ((replica("a", "n1"), replica("b", "n1")), False, ()),
        ((blocker("a", "n1", 2), blocker("b", "n1", 2)), True, ()),
        (
            (replica("a", "n1", movable="true"), replica("b", "n1", movable="true")),
            False,
            (blocker("y2", "n2", 2), blocker("y3", "n3", 2)),
        ),
        ((replica("a", "n1", movable="true"), blocker("b", "n1", 2)), False, ()),
        (
            (
                replica("a", "n1", movable="false"),
                replica("b", "n1", movable="false"),
            ),
            True,
            (),
        ),
    ],
    ids=[
        "jobs neither labelled movable nor in a queue that allows moves stay",
        "bare pods stay even where the queue allows moves (nobody would recreate them)",
        "nothing moves when the moved jobs would have no place",
        "nothing moves when the waiting pod would not fit after the moves",
        "a job labelled movable false stays whatever its queue says",
    ],
)
def test_nothing_moves_unless_the_whole_plan_holds(
    movers: tuple[dict[str, Any], ...], allow: bool, extra: tuple[dict[str, Any], ...]
) -> None:
    c = scattered(*movers, extra=extra)
    co = engine(allow=allow)
    assert one_pass(co, c) == []
    assert co.reservations.get("pod:default/big") is None


def test_a_search_that_found_nothing_is_not_made_again_for_ten_seconds_whatever_changed() -> None:
    co = engine()
    assert one_pass(co, scattered(replica("a", "n1"), replica("b", "n1"))) == []  # unlabelled
    movable = scattered(replica("a", "n1", "true"), replica("b", "n1", "true"))
    assert one_pass(co, movable, NOW + 5) == [], "a search costs ~150 ms on 5,000 nodes"
    assert len(one_pass(co, movable, NOW + 10)) == 1


def test_a_queue_that_allows_moves_makes_its_recreated_jobs_movable() -> None:
    c = scattered(replica("a", "n1"), replica("b", "n1"))
    assert len(one_pass(engine(allow=True), c)) == 1


def test_a_pod_with_local_storage_moves_only_when_labelled_movable() -> None:
    def scratch(raw: dict[str, Any]) -> dict[str, Any]:
        raw["spec"]["volumes"] = [{"name": "scratch", "emptyDir": {}}]
        return raw

    c = scattered(scratch(replica("a", "n1")), scratch(replica("b", "n1")))
    assert one_pass(engine(allow=True), c) == []
    c = scattered(
        scratch(replica("a", "n1", movable="true")), scratch(replica("b", "n1", movable="true"))
    )
    assert len(one_pass(engine(allow=True), c)) == 1


def test_no_more_jobs_move_in_a_minute_than_moves_per_minute() -> None:
    c = scattered(replica("a", "n1", movable="true"), replica("b", "n1", movable="true"))
    assert one_pass(engine(moves=1), c) == [], "the plan needs two moves, the budget is one"


def test_a_job_moved_is_not_moved_again_for_a_while() -> None:
    c = scattered(replica("a", "n1", movable="true"), replica("b", "n1", movable="true"))
    co = engine()
    [move] = one_pass(co, c)
    co.consolidation.refused(move.key)  # a disruption budget: the plan is dropped
    assert co.reservations.get(move.key) is None
    assert one_pass(co, c, NOW + 120) == [], "a and b were moved a moment ago"


def test_consolidation_comes_before_preemption() -> None:
    c = scattered(replica("a", "n1", movable="true"), replica("b", "n1", movable="true"))
    co = engine()
    big = pod_from_api(BIG)
    # kube-scheduler proposes evicting the two lower-priority pods on n1 for `big`
    snapshot = c.snap()
    victims = Victims(tuple(p.uid for p in snapshot.nodes["n1"].pods))
    assert co.preempt(snapshot, big, {"n1": victims}, NOW) == {}
    assert co.consolidation.moving("pod:default/big")
    assert co.preemption.take_evictions() == []


def test_gangplank_why_says_the_waiting_pod_waits_for_the_jobs_moved_for_it() -> None:
    c = scattered(replica("a", "n1", movable="true"), replica("b", "n1", movable="true"))
    co = engine()
    one_pass(co, c)
    snapshot = c.snap()
    why = explain(co, snapshot, pod_from_api(BIG), NOW + 1)
    assert why["line"].startswith(
        "pod default/big, queue ml; planned on n1, waiting for the 2 job(s) "
        "gangplank moves for it: moves pod default/a-x1 (2 GPUs) from node n1 to n"
    )
    assert len(why["moves"]) == 2


def test_nothing_is_planned_where_nobody_carries_moves_out() -> None:
    c = scattered(replica("a", "n1", movable="true"), replica("b", "n1", movable="true"))
    co = engine()
    co.consolidation.active = False  # the simulator
    assert one_pass(co, c) == []
    assert co.reservations.get("pod:default/big") is None


def test_a_moved_jobs_new_pod_is_left_out_of_the_fair_line_its_place_is_kept() -> None:
    a, b = replica("a", "n1", movable="true"), replica("b", "n1", movable="true")
    c = scattered(a, b)
    co = engine()
    one_pass(co, c)
    c.delete("pods", a)
    new = pod("a-x2", gpu=2, labels=labels("true"), owner=("apps/v1", "ReplicaSet", "a"))
    c.add("pods", new)
    snapshot = c.snap()
    assert co.consolidation.kept_for(pod_from_api(new))
    book = co.book_for(snapshot)
    assert "pod:default/a-x2" in book.waiting_keys
    assert "pod:default/a-x2" not in [j.key for j in co.line.admissible(book, NOW + 5)]
