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


def test_a_plan_gangplank_binds_itself_is_recorded_once_naming_every_members_node() -> None:
    """`--bind-planned-members`: one write for the plan, on the asking member, not one each."""
    members = gang_pods("ring", 4, gpu=8)
    c = Cluster(nodes=[node(f"n{i}", gpu=8) for i in range(4)], pods=members)
    engine = Engine()
    snap = c.snap()
    pods = sorted(snap.groups["gangplank:default/ring"], key=lambda p: p.name)
    kept = {p.uid: f"n{i}" for i, p in enumerate(pods)}
    plan = Plan.with_victims("gangplank:default/ring", pods, kept, {}, NOW + 60)
    plan.record_on, plan.record_members = pods[0].uid, dict(kept)
    engine.reservations.install(plan)
    [written] = engine.records_to_write(snap, uid=pods[2].uid)
    record = decode(written.value)
    assert written.name == "ring-0" and record is not None
    assert (record.node, dict(record.members)) == ("n0", kept)
    del plan.assignments[pods[1].uid]  # a member bound: the record to write is the same one
    assert [w.value for w in engine.records_to_write(snap)] == [written.value]


def test_a_plan_recorded_once_comes_back_for_every_member_still_to_bind() -> None:
    """A kill mid-wave: two members bound, the record on the first names all four nodes."""
    members = gang_pods("ring", 4, gpu=8)
    kept = {m["metadata"]["uid"]: f"n{i}" for i, m in enumerate(members)}
    members[0]["metadata"]["annotations"] = {PLAN_ANNOTATION: encode("n0", NOW + 30, None, kept)}
    for i in (0, 1):
        members[i]["spec"]["nodeName"] = f"n{i}"
        members[i]["status"] = {"phase": "Running"}
    c = Cluster(nodes=[node(f"n{i}", gpu=8) for i in range(4)], pods=members)
    engine = Engine()
    done = restore(c.snap(), engine.reservations, engine.placer.free_of, NOW)
    plan = engine.reservations.get("gangplank:default/ring")
    assert done.plans == 1 and plan is not None
    assert plan.assignments == {members[i]["metadata"]["uid"]: f"n{i}" for i in (2, 3)}
