"""What `gangplank why` and `GET /queues` say when the usage history or a guarantee puts a queue
behind another."""

from __future__ import annotations

import pytest

from extender.core.queues.fair_reason import behind, resource_hours
from extender.core.queues.policy_parse import parse_policy
from tests.builders import gpus, node, policy_doc, queue
from tests.core_sim import CoreSim

HOUR = 3600.0


@pytest.mark.parametrize(
    ("resource", "seconds", "text"),
    [
        ("nvidia.com/gpu", 410 * HOUR, "410 GPU-hours"),
        ("nvidia.com/gpu", 1.5 * HOUR, "1.5 GPU-hours"),
        ("cpu", 12_000 * HOUR, "12 core-hours"),
        ("memory", 2**31 * HOUR, "2.0 GiB-hours"),
        ("example.com/fpga", 20 * HOUR, "20 example.com/fpga-hours"),
    ],
    ids=["GPUs", "a little", "cpu in cores", "memory in GiB", "any other resource by its name"],
)
def test_decayed_usage_reads_in_resource_hours(resource: str, seconds: float, text: str) -> None:
    assert resource_hours(resource, seconds) == text


def ran(first: dict[str, object], second: dict[str, object], fairness: str = "24h") -> CoreSim:
    """`first` ran 16 GPUs for 10 hours, `second` nothing; then a job of each waits."""
    doc = policy_doc(first, second)
    if fairness:
        doc["fairness"] = {"halfLife": fairness}
    sim = CoreSim([node("n0", gpu=8, cpu="64"), node("n1", gpu=8, cpu="64")], parse_policy(doc))
    for i in range(2):
        sim.submit(f"run{i}", str(first["name"]), gpu=8, duration=10 * HOUR)
    for hour in range(1, 11):
        sim.advance(hour * HOUR)
    sim.advance(10 * HOUR + 1)
    for q in (first, second):
        sim.submit(f"{q['name']}-next", str(q["name"]), gpu=8, duration=HOUR)
    return sim


def test_a_queue_behind_because_of_its_history_is_told_the_figures_and_weights() -> None:
    sim = ran(queue("research"), queue("vision", weight=2))
    book = sim.co.book_for(sim.cluster.snap())
    said = behind(book, sim.co.history.decayed(sim.now), "research")
    assert said.startswith("queue research is behind queue vision: 1"), said
    assert said.endswith(
        " GPU-hours used recently (half-life 24h) against 0.0 GPU-hours, weights 1:2"
    )
    assert behind(book, sim.co.history.decayed(sim.now), "vision") == "", "first in line"


def test_a_queue_behind_one_under_its_guarantee_is_told_so() -> None:
    sim = ran(queue("research", guarantee=gpus(0)), queue("vision", guarantee=gpus(8)))
    book = sim.co.book_for(sim.cluster.snap())
    said = behind(book, sim.co.history.decayed(sim.now), "research")
    assert said == "queue research is behind queue vision: vision is under its guarantee"


def test_without_history_nothing_is_said() -> None:
    sim = ran(queue("research"), queue("vision"), fairness="")
    book = sim.co.book_for(sim.cluster.snap())
    assert behind(book, sim.co.history.decayed(sim.now), "research") == ""
