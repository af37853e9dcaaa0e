"""Preemption (`core/preemption/preemption.py`): a plan on what victims free goes in through the
reservations, with its victims, and their evictions are queued; a minute's eviction budget bounds
it; evictions the API server refuses drop the plans counting on them and spare those pods."""

from __future__ import annotations

from typing import Any

from extender.core.engine import Engine
from extender.core.model.answers import Victims
from extender.core.model.snapshot import PodInfo, Snapshot
from extender.core.preemption.preemption import NO_POLICY_RATE, Preemption
from extender.core.queues.policy_parse import parse_policy
from tests.builders import gang_pods, node, pod, policy_doc, queue
from tests.cluster import Cluster

NOW = 1_800_000_000.0
GANG = "gangplank:default/g"
RESERVATION_SECONDS = 60.0  # the engine's default
GRACE = 30  # a victim's grace period when its rules give none


def running(name: str, on: str, priority: int = 0) -> dict[str, Any]:
    return pod(name, node=on, gpu=8, priority=priority, phase="Running")


def lows(count: int = 2) -> list[dict[str, Any]]:
    return [running(f"low{i}", f"n{i}") for i in range(count)]


def setting(*running_pods: dict[str, Any]) -> tuple[Engine, Preemption, Snapshot, list[PodInfo]]:
    """Two full 8-GPU nodes; gang g (two 8-GPU members of priority 100) waits."""
    cluster = Cluster(
        nodes=[node("n0"), node("n1")],
        pods=[*running_pods, *gang_pods("g", 2, gpu=8, priority=100)],
    )
    engine = Engine()
    snapshot = cluster.snap()
    return engine, engine.preemption, snapshot, list(snapshot.groups[GANG])


def test_a_plan_goes_in_through_the_reservations_with_its_victims_and_their_evictions() -> None:
    low = lows()
    engine, preemption, snapshot, members = setting(*low)
    engine.take_notices()
    assert preemption.plan(snapshot, GANG, members, 2, None, NOW, None, None) == 2
    plan = engine.reservations.get(GANG)
    assert plan is not None
    assert sorted(plan.assignments.values()) == ["n0", "n1"]
    assert plan.victims == {low[0]["metadata"]["uid"]: "n0", low[1]["metadata"]["uid"]: "n1"}
    assert plan.deadline == NOW + RESERVATION_SECONDS + GRACE
    assert [n.reason for n in engine.take_notices()] == ["GangPlanned"]
    evictions = preemption.take_evictions()
    assert sorted((e.name, e.rule, e.plan) for e in evictions) == [
        ("low0", "priority", GANG),
        ("low1", "priority", GANG),
    ]
    assert preemption.decided == {GANG: NOW}
    assert preemption.plan(snapshot, GANG, members, 2, None, NOW, None, None) == 0, "planned"


def test_only_lower_priority_work_makes_room() -> None:
    engine, preemption, snapshot, members = setting(
        *(running(f"hi{i}", f"n{i}", 100) for i in (0, 1))
    )
    assert preemption.plan(snapshot, GANG, members, 2, None, NOW, None, None) == 0
    assert GANG not in engine.reservations and preemption.take_evictions() == []


def test_a_minutes_budget_of_evicted_jobs_bounds_preemption() -> None:
    _, preemption, snapshot, members = setting(*lows())
    assert preemption.budget_left(None, NOW) == NO_POLICY_RATE
    preemption.plan(snapshot, GANG, members, 2, None, NOW, None, None)
    assert preemption.budget_left(None, NOW + 60) == NO_POLICY_RATE - 2
    assert preemption.budget_left(None, NOW + 61) == NO_POLICY_RATE, "a minute later"
    doc = {**policy_doc(queue("q")), "preemption": {"evictionsPerMinute": 3}}
    assert preemption.budget_left(parse_policy(doc), NOW + 61) == 3


def test_no_plan_is_made_that_evicts_more_jobs_than_the_budget_has_left() -> None:
    engine, preemption, snapshot, members = setting(*lows())
    preemption.recent.extend([NOW] * (NO_POLICY_RATE - 1))
    assert preemption.plan(snapshot, GANG, members, 2, None, NOW, None, None) == 0
    assert GANG not in engine.reservations and preemption.take_evictions() == []


def test_a_refused_eviction_drops_the_plans_counting_on_it_and_spares_the_pod() -> None:
    low = lows()
    engine, preemption, snapshot, members = setting(*low)
    preemption.plan(snapshot, GANG, members, 2, None, NOW, None, None)
    preemption.take_evictions()
    refused = {low[0]["metadata"]["uid"]}
    preemption.refused(refused, NOW + 1, spare_seconds=600)
    assert GANG not in engine.reservations and GANG not in preemption.decided
    assert preemption.plan(snapshot, GANG, members, 2, None, NOW + 2, None, None) == 0, (
        "the only other victim cannot make room alone"
    )
    later = NOW + 1 + 600 + 1
    assert preemption.plan(snapshot, GANG, members, 2, None, later, None, None) == 2


def test_kube_schedulers_candidates_for_a_planned_member_are_narrowed_to_its_plan() -> None:
    low = lows()
    engine, preemption, snapshot, members = setting(*low)
    preemption.plan(snapshot, GANG, members, 2, None, NOW, None, None)
    member = members[0]
    mine = engine.reservations.planned_node(member)
    victim = next(p["metadata"]["uid"] for p in low if p["spec"]["nodeName"] == mine)
    candidates = {f"n{i}": Victims((p["metadata"]["uid"],)) for i, p in enumerate(low)}
    narrowed = preemption.narrow(snapshot, member, candidates, NOW, None, None)
    assert narrowed == {mine: Victims((victim,))}
