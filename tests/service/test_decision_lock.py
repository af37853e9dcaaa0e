"""The decision lock says who holds it, for how long, and who waited
(extender/service/decision_lock.py)."""

from __future__ import annotations

import logging
import threading
import time

import pytest

from extender.observe.logs import begin_call, end_call, note_pod
from extender.service.decision_lock import DecisionLock
from extender.service.runtime import Runtime
from extender.web.app import create_app
from tests.builders import fixture
from tests.exported import observed


class Holds:
    def __init__(self) -> None:
        self.seen: list[tuple[str, float, float]] = []

    def __call__(self, holder: str, waited: float, held: float) -> None:
        self.seen.append((holder, waited, held))


def test_each_hold_is_observed_with_its_holder_the_time_it_waited_and_the_time_it_held() -> None:
    holds = Holds()
    lock = DecisionLock(holds, slow=10.0)
    inside = threading.Event()

    def hold_a_while() -> None:
        with lock.by("periodic pass"):
            inside.set()
            time.sleep(0.2)

    thread = threading.Thread(target=hold_a_while)
    thread.start()
    inside.wait(5)
    begin_call("filter")
    try:
        with lock:
            pass
    finally:
        end_call()
    thread.join()
    first, second = holds.seen
    assert first[0] == "periodic pass" and first[2] >= 0.19
    assert second[0] == "filter", "a call's hold is named by its verb"
    assert second[1] >= 0.1, "the call waited for the pass"


def test_a_hold_past_the_slow_bound_is_logged_with_its_holder_and_pod(
    caplog: pytest.LogCaptureFixture,
) -> None:
    lock = DecisionLock(slow=0.05)
    caplog.set_level(logging.WARNING, logger="gangplank")
    begin_call("preempt")
    note_pod("research", "trainer-0")
    try:
        with lock:
            time.sleep(0.06)
        with lock:
            pass  # quick: not logged
    finally:
        end_call()
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1
    assert "decision lock held" in lines[0] and "by preempt for pod research/trainer-0" in lines[0]


def test_the_watchdog_logs_where_a_long_holder_is_while_it_still_holds(
    caplog: pytest.LogCaptureFixture,
) -> None:
    lock = DecisionLock(slow=10.0, stack_after=0.1)
    caplog.set_level(logging.WARNING, logger="gangplank")
    lock.start_watchdog(every=0.02)
    told = threading.Event()

    def a_slow_decision() -> None:
        with lock.by("periodic pass"):
            told.wait(5)  # until the watchdog has spoken

    thread = threading.Thread(target=a_slow_decision)
    thread.start()
    try:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not caplog.records:
            time.sleep(0.02)
    finally:
        told.set()
        thread.join()
        lock.stop_watchdog()
    (record,) = caplog.records  # once per hold, not every tick
    message = record.getMessage()
    assert "held" in message and "so far by periodic pass" in message
    assert "in a_slow_decision" in message, "the holder's stack, as it was while holding"


def test_metrics_show_the_holds_of_each_verb(runtime: Runtime) -> None:
    client = create_app(runtime).test_client()
    body = fixture("filter.nodenames.json")
    client.post("/scheduler/filter", json=body)
    client.post("/scheduler/prioritize", json=body)
    text = client.get("/metrics").data.decode()
    counts = observed(text, "gangplank_decision_lock_held_seconds", "holder")
    assert counts["filter"] == 1 and counts["prioritize"] == 1
