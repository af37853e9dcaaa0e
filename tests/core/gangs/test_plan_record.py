"""A plan's record on its pods (`core/gangs/plan_record.py`): what is written, what is read back."""

from __future__ import annotations

from typing import Any

import pytest

from extender.core.engine import Engine
from extender.core.gangs.plan_record import PLAN_ANNOTATION, decode, encode, restore
from extender.core.gangs.plans import Plan
from tests.builders import gang_pods, node
from tests.cluster import Cluster

NOW = 1_796_122_800.0


def recorded_gang(deadline: float, nodes: list[str]) -> list[dict[str, Any]]:
    members = gang_pods("ring", len(nodes), gpu=8)
    for member, where in zip(members, nodes, strict=True):
        member["metadata"].setdefault("annotations", {})[PLAN_ANNOTATION] = encode(where, deadline)
    return members


@pytest.mark.parametrize(
    "text",
    [
        "",
        "not json",
        "[]",
        '{"node": 3, "deadline": 1}',
        '{"node": "n1"}',
        '{"node": "n1", "deadline": 1, "victims": {"u": 2}}',
    ],
    ids=[
        "empty",
        "not JSON",
        "not a map",
        "a node that is no name",
        "no deadline",
        "a victim without its node",
    ],
)
def test_a_record_a_person_spoiled_is_ignored_whole_never_trusted_in_part(text: str) -> None:
    assert decode(text) is None


def test_a_record_reads_back_as_written() -> None:
    record = decode(encode("n3", NOW + 0.12345, {"uid-1": "n3"}))
    assert record is not None
    assert (record.node, record.deadline, dict(record.victims)) == (
        "n3",
        NOW + 0.123,
        {"uid-1": "n3"},
    )


def test_restore_keeps_the_plan_in_memory_that_the_record_describes() -> None:
    """The record keeps the deadline to the millisecond: a replica that regains the Lease and
    reads back its own plan's record keeps that plan as it is (no drop and reinstall)."""
    deadline = NOW + 60.123456
    members = recorded_gang(deadline, ["n0", "n1"])
    c = Cluster(nodes=[node(f"n{i}", gpu=8) for i in range(2)], pods=members)
    engine = Engine()
    gangs = engine.reservations
    snap = c.snap()
    pods = snap.groups["gangplank:default/ring"]
    kept = {p.uid: f"n{i}" for i, p in enumerate(sorted(pods, key=lambda p: p.name))}
    gangs.install(Plan.with_victims("gangplank:default/ring", pods, kept, {}, deadline))
    done = restore(snap, gangs, engine.placer.free_of, NOW)
    assert done.plans == 0 and done.nudge == {}
    plan = gangs.get("gangplank:default/ring")
    assert plan is not None and plan.deadline == deadline, "the very plan, kept"


def test_a_lapsed_record_is_left_to_the_planner() -> None:
    c = Cluster(nodes=[node("n0", gpu=8)], pods=recorded_gang(NOW - 1, ["n0"]))
    engine = Engine()
    gangs = engine.reservations
    assert restore(c.snap(), gangs, engine.placer.free_of, NOW).plans == 0
    assert len(gangs) == 0


def test_a_record_that_still_fits_comes_back_with_its_members_to_nudge() -> None:
    c = Cluster(
        nodes=[node(f"n{i}", gpu=8) for i in range(2)], pods=recorded_gang(NOW + 30, ["n1", "n0"])
    )
    engine = Engine()
    gangs = engine.reservations
    done = restore(c.snap(), gangs, engine.placer.free_of, NOW)
    plan = gangs.get("gangplank:default/ring")
    assert plan is not None
    assert done.plans == 1 and len(done.nudge) == 2
    assert sorted(plan.assignments.values()) == ["n0", "n1"] and plan.deadline == NOW + 30


def test_a_consolidation_plans_record_names_no_victims_so_no_restart_moves_them_again() -> None:
    members = gang_pods("ring", 2, gpu=8)
    c = Cluster(nodes=[node(f"n{i}", gpu=8) for i in range(2)], pods=members)
    engine = Engine()
    snap = c.snap()
    pods = snap.groups["gangplank:default/ring"]
    kept = {p.uid: f"n{i}" for i, p in enumerate(sorted(pods, key=lambda p: p.name))}
    for moved in (False, True):
        plan = Plan.with_victims("gangplank:default/ring", pods, kept, {"v": "n0"}, NOW + 60)
        plan.moved = moved
        engine.reservations.install(plan)
        written = [decode(w.value) for w in engine.records_to_write(snap)]
        victims = [dict(r.victims) for r in written if r is not None and r.victims]
        assert victims == ([] if moved else [{"v": "n0"}])
