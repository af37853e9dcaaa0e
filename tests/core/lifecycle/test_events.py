"""The Event reasons the lifecycle's evictions carry (`core/lifecycle/events.py`): each rule has
its own, so `kubectl get events --field-selector reason=...` finds the pods one rule evicted."""

from __future__ import annotations

import pytest

from extender.core.lifecycle.events import EVICTED, TOLD

CASES = [
    ("a job not ready in time is evicted as NotReadyRequeued", "not-ready", "NotReadyRequeued"),
    ("a gang that lost members is evicted as StaleGangEvicted", "stale-gang", "StaleGangEvicted"),
    (
        "a job past its maxRuntime is evicted as MaxRuntimeExceeded",
        "max-runtime",
        "MaxRuntimeExceeded",
    ),
    ("a job whose GPUs stayed idle is evicted as IdleGpuEvicted", "idle", "IdleGpuEvicted"),
]


@pytest.mark.parametrize(("rule", "reason"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_each_lifecycle_rule_evicts_with_an_event_reason_of_its_own_and_says_what_the_job_did(
    rule: str, reason: str
) -> None:
    assert EVICTED[rule] == reason
    assert TOLD[rule]


def test_a_pod_moved_to_make_room_is_evicted_as_consolidation_move() -> None:
    assert EVICTED["consolidation"] == "ConsolidationMove"
