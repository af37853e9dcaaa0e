"""Resource lists (`core/model/resources.py`): summed and compared resource by resource."""

from __future__ import annotations

from extender.core.model.resources import GPU, maximum, total


def test_resource_lists_add_up_per_resource() -> None:
    assert total([{"cpu": 1000, GPU: 2}, {"cpu": 500, "memory": 7}, {}]) == {
        "cpu": 1500,
        GPU: 2,
        "memory": 7,
    }
    assert total([]) == {}


def test_the_maximum_of_two_lists_is_taken_per_resource() -> None:
    assert maximum({"cpu": 1000, GPU: 1}, {"cpu": 500, GPU: 4, "memory": 3}) == {
        "cpu": 1000,
        GPU: 4,
        "memory": 3,
    }
