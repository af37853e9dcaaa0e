"""The move planner (`core/consolidation/plan.py`): the fewest whole jobs moved, each to a place
free now, so that a waiting job fits; no plan, and nothing moves, when that cannot be done."""

from __future__ import annotations

import pytest

from extender.core.consolidation.plan import Movable, MovePlan, plan_moves


def jobs(**pods: list[tuple[str, int]]) -> dict[str, dict[str, tuple[str, int]]]:
    """Movable jobs by name: `a=[("n1", 2)]` is job ml/a with one 2-GPU pod a0 on n1."""
    return {f"ml/{name}": {f"{name}{i}": p for i, p in enumerate(ps)} for name, ps in pods.items()}


def moved(plan: MovePlan) -> dict[str, dict[str, tuple[str, str]]]:
    return dict(plan.moves)


def test_two_movable_2_gpu_jobs_move_off_one_node_so_an_8_gpu_pod_fits_there() -> None:
    free = {"n1": 4, "n2": 2, "n3": 2}  # 8 free GPUs, no node with 8
    plan = plan_moves(free, [("big", 8)], jobs(a=[("n1", 2)], b=[("n1", 2)]), limit=2)
    assert plan is not None
    assert plan.assignments == {"big": "n1"}
    assert moved(plan) == {"ml/a": {"a0": ("n1", "n2")}, "ml/b": {"b0": ("n1", "n3")}}
    assert plan.gpus_moved == 4


def test_the_node_needing_the_fewest_moves_is_chosen_then_the_fewest_gpus_moved() -> None:
    free = {"n1": 4, "n2": 6, "n3": 2, "n4": 4}
    movable = jobs(
        a=[("n1", 1)],
        b=[("n1", 1)],
        c=[("n1", 1)],
        d=[("n1", 1)],  # n1: four moves
        e=[("n2", 2)],  # n2: one move of 2 GPUs
        f=[("n3", 6)],  # n3: one move of 6 GPUs
    )
    plan = plan_moves(free, [("big", 8)], movable, limit=4)
    assert plan is not None and plan.assignments == {"big": "n2"}
    assert list(moved(plan)) == ["ml/e"] and plan.gpus_moved == 2


def test_of_the_jobs_on_a_node_the_smallest_that_still_covers_the_gap_is_moved() -> None:
    free = {"n1": 5, "n2": 4}  # n1 lacks 3 for an 8-GPU pod
    movable = jobs(a=[("n1", 4)], b=[("n1", 3)], c=[("n1", 1)])
    plan = plan_moves(free, [("big", 8)], movable, limit=3)
    # one move either way: the 3-GPU job b, not the 4-GPU job a, nor b and c
    assert plan is not None and moved(plan) == {"ml/b": {"b0": ("n1", "n2")}}
    assert plan.gpus_moved == 3


def test_every_pod_of_a_moved_gang_gets_a_new_node_and_the_gang_moves_whole() -> None:
    free = {"n1": 4, "n2": 2, "n3": 2, "n4": 1}
    gang = jobs(g=[("n1", 2), ("n4", 1)])  # a gang with a member on n1 and one on n4
    plan = plan_moves(free, [("big", 6)], gang, limit=1)
    assert plan is not None and plan.assignments == {"big": "n1"}
    new = moved(plan)["ml/g"]
    assert set(new) == {"g0", "g1"} and new["g0"][1] in {"n2", "n3"} and new["g1"][1] != "n4"


def test_two_moves_are_planned_where_every_one_move_room_has_no_place_for_its_job() -> None:
    """n2 and n3 each need one move, of a 6-GPU job that fits nowhere else; n1 needs two."""
    free = {"n1": 4, "n2": 2, "n3": 2}
    movable = jobs(a=[("n1", 2)], b=[("n1", 2)], x2=[("n2", 6)], x3=[("n3", 6)])
    plan = plan_moves(free, [("big", 8)], movable, limit=2)
    assert plan is not None and plan.assignments == {"big": "n1"}
    assert sorted(moved(plan)) == ["ml/a", "ml/b"]


def test_each_pod_of_a_waiting_gang_gets_its_own_emptied_node() -> None:
    free = {"n1": 6, "n2": 6, "n3": 4, "n4": 4}
    plan = plan_moves(free, [("w0", 8), ("w1", 8)], jobs(a=[("n1", 2)], b=[("n2", 2)]), limit=2)
    assert plan is not None
    assert sorted(plan.assignments.values()) == ["n1", "n2"]
    assert {to for pods in moved(plan).values() for _, to in pods.values()} <= {"n3", "n4"}


@pytest.mark.parametrize(
    ("free", "movable", "limit"),
    [
        ({"n1": 4, "n2": 0}, jobs(a=[("n1", 4)]), 2),
        ({"n1": 4, "n2": 2}, {}, 2),
        ({"n1": 4, "n2": 2, "n3": 2}, jobs(a=[("n1", 2)], b=[("n1", 2)]), 1),
        ({"n1": 4, "n2": 2}, jobs(a=[("n1", 2)]), 2),
        ({"n1": 4, "n2": 4}, jobs(a=[("n1", 2)], b=[("n2", 2)]), 2),
    ],
    ids=[
        "nothing moves when the moved job would have no place",
        "nothing moves when no candidate is movable",
        "nothing moves beyond the move limit",
        "nothing moves when the waiting job would not fit after the moves",
        "a moved job does not count on the room another move would free",
    ],
)
def test_no_plan_when(free: dict[str, int], movable: Movable, limit: int) -> None:
    assert plan_moves(free, [("big", 8)], movable, limit) is None


def test_a_pod_that_fits_now_needs_no_move() -> None:
    plan = plan_moves({"n1": 8, "n2": 2}, [("big", 8)], jobs(a=[("n2", 2)]), limit=2)
    assert plan is not None and plan.moves == () and plan.assignments == {"big": "n1"}
    assert plan.gpus_moved == 0
