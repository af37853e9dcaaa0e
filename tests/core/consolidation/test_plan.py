import pytest

from extender.core.consolidation.plan import plan_moves

SCATTERED = {"n1": 2, "n2": 2, "n3": 2, "n4": 2, "n5": 4, "n6": 4}
EIGHT = {"n1": 6, "n2": 6, "n3": 0, "n4": 0}


def test_two_movable_jobs_are_moved_so_an_eight_gpu_job_fits_one_node() -> None:
    movable = {"ml/a": {"a0": ("n1", 2)}, "ml/b": {"b0": ("n1", 2)}}
    free = {"n1": 4, "n2": 2, "n3": 2}
    plan = plan_moves(free, [("big", 8)], movable, limit=2)
    assert plan is not None
    assert plan.assignments == {"big": "n1"}
    assert plan.gpus_moved == 4
    assert {key for key, _ in plan.moves} == {"ml/a", "ml/b"}
    assert all(to != "n1" for _, pods in plan.moves for _, to in pods.values())


@pytest.mark.parametrize(
    ("free", "movable", "limit"),
    [
        ({"n1": 4, "n2": 0}, {"ml/a": {"a0": ("n1", 4)}}, 2),
        ({"n1": 4, "n2": 2}, {}, 2),
        ({"n1": 4, "n2": 2, "n3": 2}, {"ml/a": {"a0": ("n1", 2)}, "ml/b": {"b0": ("n1", 2)}}, 1),
    ],
    ids=[
        "nothing moves when the moved job would have no place",
        "nothing moves when no candidate is movable",
        "nothing moves beyond the move limit",
    ],
)
def test_no_plan(free, movable, limit) -> None:  # type: ignore[no-untyped-def]
    assert plan_moves(free, [("big", 8)], movable, limit) is None


def test_a_job_that_fits_now_needs_no_move() -> None:
    plan = plan_moves({"n1": 8}, [("big", 8)], {}, limit=2)
    assert plan is not None and plan.moves == () and plan.assignments == {"big": "n1"}
