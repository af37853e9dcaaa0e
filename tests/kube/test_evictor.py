"""The Events of an eviction: one on each pod evicted; the preemptor told once, and only when it
is another job's pod (a job evicted for itself, by a lifecycle rule, has no preemptor)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from extender.kube.evictor import ApiEvictor
from tests.builders import eviction


class _Answer:
    def drain_conn(self) -> None:
        pass

    def release_conn(self) -> None:
        pass


class _Core:
    """The two calls the evictor makes, always answered 201; the Events kept."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []  # (pod, reason)

    def create_namespaced_pod_eviction(self, *args: Any, **kwargs: Any) -> _Answer:
        return _Answer()

    def create_namespaced_event(self, namespace: str, body: Any, **kwargs: Any) -> _Answer:
        self.events.append((body["involvedObject"]["name"], body["reason"]))
        return _Answer()


def test_a_victim_job_is_told_on_each_pod_and_its_preemptor_once() -> None:
    core = _Core()
    job = [replace(eviction(f"low-{i}"), job="gangplank:default/low") for i in range(2)]
    assert ApiEvictor(core).evict(job) == "evicted"
    assert core.events == [
        ("low-0", "Preempted"),
        ("urgent", "Preempting"),
        ("low-1", "Preempted"),
    ]


def test_a_job_evicted_for_itself_gets_no_preempting_event_on_its_own_pod() -> None:
    core = _Core()
    job = [
        replace(
            eviction(f"train-{i}"),
            job="gangplank:default/train",
            rule="max-runtime",
            preemptor=("default", "train-0"),
        )
        for i in range(2)
    ]
    assert ApiEvictor(core).evict(job) == "evicted"
    assert core.events == [("train-0", "MaxRuntimeExceeded"), ("train-1", "MaxRuntimeExceeded")]


@pytest.mark.parametrize(
    ("rule", "reason"),
    [
        ("not-ready", "NotReadyRequeued"),
        ("stale-gang", "StaleGangEvicted"),
        ("max-runtime", "MaxRuntimeExceeded"),
        ("idle", "IdleGpuEvicted"),
        ("priority", "Preempted"),
        ("reclaim", "Preempted"),
        ("recovery", "Preempted"),
    ],
    ids=[
        "a job not ready in time",
        "a gang that lost members",
        "a job past its maxRuntime",
        "a job whose GPUs stayed idle",
        "preemption by priority keeps Kubernetes' own reason",
        "reclaim keeps it too",
        "so does finishing a preemption after a restart",
    ],
)
def test_each_rule_gives_its_evictions_an_event_reason_of_its_own(rule: str, reason: str) -> None:
    core = _Core()
    job = [replace(eviction("train-0"), job="gangplank:default/train", rule=rule)]
    assert ApiEvictor(core).evict(job) == "evicted"
    assert core.events[0] == ("train-0", reason)
