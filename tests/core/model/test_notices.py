"""What people read on their pods (`core/model/notices.py`): one notice per change of a job's
state, worded for `kubectl describe pod`, and never more than the outbox holds."""

from __future__ import annotations

from extender.core.model.notices import OUTBOX_LIMIT, Notice, Outbox
from tests.builders import pod_info


def test_a_planned_gang_names_at_most_8_nodes_and_counts_the_rest() -> None:
    outbox = Outbox()
    outbox.planned("gangplank:ml/g", [f"n{i}" for i in range(10)] + ["n0"], 11)
    (notice,) = outbox.take()
    assert notice == Notice(
        "gangplank:ml/g",
        "GangPlanned",
        "gang ml/g: 11 members planned whole on n0, n1, n2, n3, n4, n5, n6, n7 and 2 more",
    )


def test_an_expired_plan_is_a_warning_and_a_hold_says_how_long() -> None:
    outbox = Outbox()
    outbox.expired("gangplank:ml/g")
    outbox.holding("gangplank:ml/h", 120.0)
    expired, holding = outbox.take()
    assert (expired.reason, expired.warning) == ("GangPlanExpired", True)
    assert (holding.reason, holding.warning) == ("GangHolding", False)
    assert holding.message.endswith("kept for it for up to 120 s")


def test_a_queue_hold_names_the_pod_only_for_a_job_of_one_pod() -> None:
    outbox = Outbox()
    single = pod_info(name="p")
    outbox.queue_held("pod:default/p", "queue team is at its max", single)
    outbox.queue_held("gangplank:default/g", "queue team is at its max", single)
    alone, gang = outbox.take()
    assert alone.pod is single and gang.pod is None
    assert alone.message == "queue team is at its max"


def test_notices_are_taken_once_and_the_outbox_is_bounded() -> None:
    outbox = Outbox()
    for i in range(OUTBOX_LIMIT + 5):
        outbox.expired(f"gangplank:ml/g{i}")
    assert len(outbox.take()) == OUTBOX_LIMIT
    assert outbox.take() == []
