"""Gangs that did not fit, remembered with the state they were tried on
(`core/gangs/no_room.py`): the same state gives the same "no" without planning again; any other
state plans again."""

from __future__ import annotations

from extender.core.gangs.no_room import NoRoom, alike, avoid_state, shrunk
from extender.kube.convert import pod_from_api
from tests.builders import gang_pods, pod_info


def test_a_gang_s_no_is_known_only_on_the_very_state_it_was_tried_on() -> None:
    memory = NoRoom()
    memory.remember("gangplank:ml/g", ("gen", 1), "gang ml/g: only 3 of 4 fit")
    assert memory.reason("gangplank:ml/g", ("gen", 1)) == "gang ml/g: only 3 of 4 fit"
    assert memory.reason("gangplank:ml/g", ("gen", 2)) is None, "the cluster changed"
    assert memory.reason("gangplank:ml/other", ("gen", 1)) is None


def test_a_state_that_cannot_be_told_is_never_remembered() -> None:
    memory = NoRoom()
    memory.remember("gangplank:ml/g", None, "no room")
    assert len(memory) == 0
    assert memory.reason("gangplank:ml/g", None) is None


def test_members_alike_in_requests_and_constraints_are_interchangeable_to_a_plan() -> None:
    members = [pod_from_api(p) for p in gang_pods("g", 3, gpu=8)]
    assert alike(members)
    other = pod_info(name="x", gpu=8, node_selector={"zone": "a"})
    assert not alike([*members, other]), "a constraint of its own"
    assert not alike([*members, pod_info(name="y", gpu=4)]), "another request"
    assert not alike([])


def test_only_a_reservation_that_shrank_or_went_gives_capacity_back() -> None:
    before = {"n1": {"gangplank:ml/g": {"nvidia.com/gpu": 8}}}
    assert shrunk(before, {})
    assert shrunk(before, {"n1": {"gangplank:ml/g": {"nvidia.com/gpu": 4}}})
    assert not shrunk(before, before)
    grown = {"n1": {"gangplank:ml/g": {"nvidia.com/gpu": 8}, "gangplank:ml/h": {"cpu": 1}}}
    assert not shrunk(before, grown), "a new reservation takes, it gives nothing back"


def test_where_members_must_not_go_is_a_state_whatever_the_order_it_was_learnt_in() -> None:
    assert avoid_state({"u2": {"n2", "n1"}, "u1": {"n3"}}) == avoid_state(
        {"u1": {"n3"}, "u2": {"n1", "n2"}}
    )
    assert avoid_state(None) == avoid_state({}) == ()
