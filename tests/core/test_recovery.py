"""Picking up where another process left off (`core/recovery.py`): recorded plans back in the
reservations, their members nudged and what they still wait for evicted; pending pods written in
the waiting room as their filter would have left them; the records to write before a bind."""

from __future__ import annotations

from typing import Any

from extender.core import recovery
from extender.core.engine import Engine
from extender.core.gangs.plan_record import PLAN_ANNOTATION, encode
from extender.core.model.rejection import Rejection
from extender.core.model.resources import GPU
from extender.core.queues.policy_parse import parse_policy
from extender.kube.convert import pod_from_api
from tests.builders import gang_pods, gpus, node, pod, policy_doc, queue
from tests.cluster import Cluster

NOW = 1_800_000_000.0
RING = "gangplank:default/ring"
QUEUE = "gangplank.io/queue"


def recorded(raw: dict[str, Any], on: str, victims: dict[str, str] | None = None) -> dict[str, Any]:
    """`raw` with the record of a plan (deadline a minute from NOW) placing it on `on`."""
    notes = {**raw["metadata"]["annotations"], PLAN_ANNOTATION: encode(on, NOW + 60, victims)}
    return {**raw, "metadata": {**raw["metadata"], "annotations": notes}}


def bound(raw: dict[str, Any], on: str) -> dict[str, Any]:
    return {**raw, "spec": {**raw["spec"], "nodeName": on}, "status": {"phase": "Running"}}


def name_of(raw: dict[str, Any]) -> tuple[str, str]:
    return (raw["metadata"]["namespace"], raw["metadata"]["name"])


def with_policy(*queues: dict[str, Any]) -> Engine:
    return Engine(policy=parse_policy(policy_doc(*queues)))


# ---- restore_plans ------------------------------------------


def test_a_recorded_plan_comes_back_and_its_members_are_nudged() -> None:
    members = [recorded(m, f"n{i}") for i, m in enumerate(gang_pods("ring", 2, gpu=8))]
    c = Cluster(nodes=[node("n0"), node("n1")], pods=members)
    co = Engine()
    assert recovery.restore_plans(co, c.snap(), NOW) == 1
    assert co.take_notices() == [], "restored: not announced again"
    assert sorted(co.kick_candidates(c.snap(), NOW)) == sorted(name_of(m) for m in members)


def test_a_restored_plan_counts_against_its_queue() -> None:
    labels = {QUEUE: "q"}
    members = [recorded(m, f"n{i}") for i, m in enumerate(gang_pods("ring", 2, labels=labels))]
    c = Cluster(nodes=[node("n0"), node("n1")], pods=members)
    co = with_policy(queue("q", max=gpus(8)))
    recovery.restore_plans(co, c.snap(), NOW)
    reserved, _ = co.ledger.reserved(co.reservations.amounts())
    assert reserved["q"][GPU] == 2


def test_the_victims_a_restored_plan_still_waits_for_are_evicted() -> None:
    low, leaving = pod("low", node="n0", gpu=4), pod("leaving", node="n0", gpu=4)
    low["status"]["phase"] = leaving["status"]["phase"] = "Running"
    leaving["metadata"]["deletionTimestamp"] = "2026-12-01T10:00:00Z"
    victims = {low["metadata"]["uid"]: "n0", leaving["metadata"]["uid"]: "n0"}
    [member] = [recorded(m, "n0", victims) for m in gang_pods("ring", 1, gpu=8)]
    c = Cluster(nodes=[node("n0")], pods=[low, leaving, member])
    co = Engine()
    assert recovery.restore_plans(co, c.snap(), NOW) == 1
    evictions = co.preemption.take_evictions()
    assert [(e.name, e.rule, e.plan) for e in evictions] == [("low", "recovery", RING)], (
        "the pod being deleted is on its way out"
    )
    assert evictions[0].preemptor == ("default", "ring-0")


def test_a_gang_running_in_part_whose_missing_members_fit_nowhere_is_evicted_whole() -> None:
    first, second = gang_pods("ring", 2, gpu=8)
    taker = pod("taker", node="n1", gpu=8, phase="Running")
    c = Cluster(
        nodes=[node("n0"), node("n1")], pods=[bound(first, "n0"), recorded(second, "n1"), taker]
    )
    co = Engine()
    assert recovery.restore_plans(co, c.snap(), NOW) == 0, (
        "n1 was taken since: the record holds no more"
    )
    assert [(e.name, e.rule) for e in co.preemption.take_evictions()] == [("ring-0", "recovery")]


# ---- adopt_pending ------------------------------------------


def test_pending_gang_members_are_parked_as_their_filter_would_have_left_them() -> None:
    incomplete = gang_pods("few", 1, size=2, gpu=8)
    too_big = gang_pods("big", 3, gpu=8)
    spoiled = gang_pods("bad", 1, gpu=8)
    spoiled[0]["metadata"]["annotations"]["gangplank.io/gang-size"] = "many"
    c = Cluster(nodes=[node("n0"), node("n1")], pods=[*incomplete, *too_big, *spoiled])
    co = Engine()
    assert recovery.adopt_pending(co, c.snap(), NOW) == []
    kind = co.waiting.parked_kind
    assert kind("gangplank:default/few", incomplete[0]["metadata"]["uid"]) is Rejection.INCOMPLETE
    assert kind("gangplank:default/bad", spoiled[0]["metadata"]["uid"]) is Rejection.INVALID
    assert {kind("gangplank:default/big", p["metadata"]["uid"]) for p in too_big} == {
        Rejection.NO_ROOM
    }
    assert co.take_outcomes().failures == {"incomplete": 1, "invalid": 1}, (
        "lacking room is counted where a plan fails"
    )


def test_pods_alone_their_queue_admits_may_go_ahead_and_those_it_refuses_wait_refused() -> None:
    admitted = pod("admitted", gpu=1, labels={QUEUE: "open"})
    held = pod("held", gpu=1, labels={QUEUE: "closed"})
    typo = pod("typo", gpu=1, labels={QUEUE: "opne"})
    plain = pod("plain", gpu=1)
    elsewhere = pod("elsewhere", gpu=1, labels={QUEUE: "open"})
    elsewhere["spec"]["schedulerName"] = "default-scheduler"
    c = Cluster(nodes=[node("n0")], pods=[admitted, held, typo, plain, elsewhere])
    co = with_policy(queue("open"), queue("closed", state="closed"))
    assert recovery.adopt_pending(co, c.snap(), NOW) == [name_of(admitted)]
    held_refusal = co.waiting.refusal_of("pod:default/held")
    typo_refusal = co.waiting.refusal_of("pod:default/typo")
    assert held_refusal is not None and held_refusal.rule == "closed"
    assert typo_refusal is not None and typo_refusal.rule == "unknown-queue"
    assert not co.waiting.is_refused("pod:default/plain")
    assert co.take_notices() == [], "written down, not told: this process never asked"


def test_planned_pending_pods_may_go_ahead() -> None:
    members = [recorded(m, f"n{i}") for i, m in enumerate(gang_pods("ring", 2, gpu=8))]
    c = Cluster(nodes=[node("n0"), node("n1")], pods=members)
    co = Engine()
    recovery.restore_plans(co, c.snap(), NOW)
    assert sorted(recovery.adopt_pending(co, c.snap(), NOW)) == sorted(name_of(m) for m in members)
    assert co.waiting.gangs_waiting() == 0


# ---- records_to_write ------------------------------------------


def test_the_records_to_write_are_a_plans_members_not_recorded_yet() -> None:
    members = gang_pods("ring", 2, gpu=8)
    c = Cluster(nodes=[node("n0"), node("n1")], pods=members)
    co = Engine()
    first = pod_from_api(members[0])
    assert co.filter(c.snap(), first, ["n0", "n1"], NOW).passed
    plan = co.reservations.get(RING)
    assert plan is not None
    every = recovery.records_to_write(co, c.snap())
    assert {(w.name, w.value) for w in every} == {
        (m["metadata"]["name"], encode(plan.assignments[uid(m)], plan.deadline)) for m in members
    }
    assert recovery.records_to_write(co, c.snap(), uid=first.uid) == every, (
        "the plan of the pod's job"
    )
    assert recovery.records_to_write(co, c.snap(), key=RING) == every
    assert recovery.records_to_write(co, c.snap(), uid="unknown") == []
    c.add("pods", *(recorded_as(m, w.value) for m in members for w in every if w.uid == uid(m)))
    assert recovery.records_to_write(co, c.snap()) == [], "recorded already"


def uid(raw: dict[str, Any]) -> str:
    return str(raw["metadata"]["uid"])


def recorded_as(raw: dict[str, Any], value: str) -> dict[str, Any]:
    notes = {**raw["metadata"]["annotations"], PLAN_ANNOTATION: value}
    return {**raw, "metadata": {**raw["metadata"], "annotations": notes}}
