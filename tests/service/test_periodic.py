"""The periodic pass carries on past a step that raises: logged, counted by step, next step run."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import pytest
from prometheus_client import generate_latest

from extender.cache.store import ClusterStore
from extender.core.preemption.evictions import Eviction
from extender.kube.binder import StoreBinder
from extender.observe.metrics import Metrics
from extender.service.runtime import Runtime
from tests.builders import eviction


class _BrokenFor:
    """An evictor with a bug for one victim: it raises instead of answering an outcome."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.evicted: list[str] = []

    def resize(self, change: Any, why: str) -> str:
        return "failed"

    def dry_run(self, pods: Sequence[tuple[str, str, str]], grace: int | None = None) -> str:
        return ""

    def evict(self, job: Sequence[Eviction]) -> str:
        if any(e.name == self.name for e in job):
            raise KeyError("a bug in carrying out the eviction")
        self.evicted.extend(e.name for e in job)
        return "evicted"


def test_a_step_of_the_runtimes_periodic_pass_that_raises_is_logged_counted_and_the_next_runs(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The eviction of one victim job raises; the next victim's eviction is still carried out,
    the failure is logged with its traceback and counted in
    gangplank_periodic_errors_total{step}, and the pass goes on to its end."""
    evictor = _BrokenFor("broken")
    metrics = Metrics()
    runtime = Runtime(ClusterStore(), StoreBinder(), metrics, preloaded=True, evictor=evictor)
    runtime.scheduler.preemption.evictions.pending += [eviction("broken"), eviction("fine")]
    with caplog.at_level(logging.ERROR, logger="gangplank.kick"):
        runtime.kicker.run_once()
    assert evictor.evicted == ["fine"], "the next step ran"
    text = generate_latest(metrics.registry).decode()
    errors = [
        line for line in text.splitlines() if line.startswith("gangplank_periodic_errors_total")
    ]
    assert errors == ['gangplank_periodic_errors_total{step="evict"} 1.0'], "that step, once"
    evicted = 'gangplank_preemption_evictions_total{outcome="evicted",queue="",rule="priority"}'
    assert f"{evicted} 1.0" in text, "the next step counted its outcome"
    (failed,) = [r for r in caplog.records if "periodic pass: step" in r.getMessage()]
    assert "'evict' failed; the pass goes on" in failed.getMessage()
    assert failed.exc_info is not None and failed.exc_info[0] is KeyError, "with the traceback"
