"""Fruitless searches (`core/preemption/tried.py`): remembered on the state they were made on, for
`NO_VICTIMS_SECONDS`, with the reason they gave; forgotten once a plan is made."""

from __future__ import annotations

from extender.core.preemption.tried import NO_VICTIMS_SECONDS, Tried

JOB = "gangplank:default/g"


def test_a_fruitless_search_is_known_on_the_same_state_with_its_reason() -> None:
    tried = Tried()
    tried.remember(JOB, ("state", 1), 0.0, "no job may go")
    assert tried.known(JOB, ("state", 1), 1.0) == "no job may go"
    assert tried.known(JOB, ("state", 2), 1.0) is None, "another state: search again"
    assert tried.known("gangplank:default/other", ("state", 1), 1.0) is None


def test_a_fruitless_search_is_tried_again_once_it_lapses() -> None:
    tried = Tried()
    tried.remember(JOB, "s", 0.0)
    assert tried.known(JOB, "s", NO_VICTIMS_SECONDS - 0.1) == ""
    assert tried.known(JOB, "s", NO_VICTIMS_SECONDS) is None, "victims become eligible with time"


def test_a_state_that_cannot_be_told_is_never_known() -> None:
    tried = Tried()
    tried.remember(JOB, None, 0.0)
    assert tried.known(JOB, None, 1.0) is None


def test_a_plan_found_forgets_the_fruitless_search() -> None:
    tried = Tried()
    tried.remember(JOB, "s", 0.0)
    assert JOB in tried
    tried.found(JOB)
    assert JOB not in tried and tried.known(JOB, "s", 1.0) is None
    tried.found(JOB)  # nothing to forget: no harm


def test_remembering_drops_what_lapsed_once_the_memory_has_doubled() -> None:
    tried = Tried()
    for i in range(256):
        tried.remember(f"old-{i}", "s", 0.0)
    assert len(tried) == 256
    tried.remember("new", "s", NO_VICTIMS_SECONDS + 1)
    assert len(tried) == 1 and "new" in tried, "the 256 lapsed searches are gone"
    for i in range(300):
        tried.remember(f"live-{i}", "s", NO_VICTIMS_SECONDS + 2)
    assert len(tried) == 301, "nothing lapsed: nothing dropped"
