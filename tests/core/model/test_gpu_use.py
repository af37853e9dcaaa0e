"""Measured GPU use (`core/model/gpu_use.py`): what the adapter read, per pod, and whether it
could read at all."""

from __future__ import annotations

import dataclasses

import pytest

from extender.core.model.gpu_use import GpuUse


def test_a_read_is_ok_unless_it_says_why_not() -> None:
    use = GpuUse({("ml", "train-0"): 3.0}, window=1800.0)
    assert (use.ok, use.problem, use.window) == (True, "", 1800.0)
    failed = GpuUse({}, ok=False, problem="connection refused")
    assert not failed.ok and failed.busiest == {} and failed.problem == "connection refused"


def test_a_pod_without_data_is_absent_and_a_read_cannot_be_changed() -> None:
    use = GpuUse({("ml", "train-0"): 3.0})
    assert ("ml", "train-1") not in use.busiest
    with pytest.raises(dataclasses.FrozenInstanceError):
        use.ok = False  # type: ignore[misc]
