"""Garbage-collection pauses are timed and a long one is logged (extender/observe/gc_pauses.py)."""

from __future__ import annotations

import gc
import logging
from collections.abc import Iterator

import pytest

from extender.observe.gc_pauses import GcPauses
from extender.service.runtime import Runtime
from extender.web.app import create_app
from tests.exported import observed


class Pauses:
    def __init__(self) -> None:
        self.seen: list[tuple[int, float]] = []

    def __call__(self, generation: int, seconds: float) -> None:
        self.seen.append((generation, seconds))


class Steps:
    """A clock that moves `step` seconds each time it is read."""

    def __init__(self, step: float) -> None:
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


@pytest.fixture
def installed() -> Iterator[tuple[GcPauses, Pauses]]:
    pauses = Pauses()
    timer = GcPauses(pauses, slow=10.0, clock=Steps(0.25))
    timer.install()
    try:
        yield timer, pauses
    finally:
        timer.remove()


def test_each_collection_is_observed_with_its_generation(
    installed: tuple[GcPauses, Pauses],
) -> None:
    _, pauses = installed
    gc.collect(2)
    assert pauses.seen[-1] == (2, 0.25), "the clock read at its start and at its end"


def test_a_pause_past_the_slow_bound_is_logged_with_its_generation_and_length(
    caplog: pytest.LogCaptureFixture,
) -> None:
    timer = GcPauses(Pauses(), slow=0.1, clock=Steps(0.25))
    timer.install()
    caplog.set_level(logging.WARNING, logger="gangplank")
    try:
        gc.collect(1)
    finally:
        timer.remove()
    assert "garbage collection (generation 1) paused the worker 250 ms" in caplog.text


def test_removing_the_timer_stops_the_observations(installed: tuple[GcPauses, Pauses]) -> None:
    timer, pauses = installed
    timer.remove()
    seen = len(pauses.seen)
    gc.collect()
    assert len(pauses.seen) == seen


def test_a_started_runtime_shows_its_pauses_in_metrics(runtime: Runtime) -> None:
    runtime.start()
    try:
        gc.collect(2)
    finally:
        runtime.stop()
    text = create_app(runtime).test_client().get("/metrics").data.decode()
    counts = observed(text, "gangplank_gc_pause_seconds", "generation")
    assert counts["2"] >= 1
