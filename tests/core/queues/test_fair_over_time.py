"""Fair over days: the fair order with a usage history (the policy's `fairness:`), driven through
simulated days of saturated queues in the decision core (no sleeping: simulated time)."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from extender.core.queues.fair_order import fair_order
from extender.core.queues.policy_parse import parse_policy
from tests.builders import gpus, node, policy_doc, queue
from tests.core_sim import CoreSim

HOUR = 3600.0
DAY = 24 * HOUR
GPU = "nvidia.com/gpu"
POOL = 64  # 8 nodes of 8 GPUs


@dataclass
class Run:
    sim: CoreSim
    hourly: list[dict[str, float]]  # each hour after the first day: each queue's share of the pool
    evened: list[bool]  # each hour: whether A's decayed usage is within 10% of B's and C's

    def share(self, queue: str) -> float:
        total = sum(self.sim.gpu_seconds.values())
        return self.sim.gpu_seconds.get(queue, 0.0) / total


def saturated_run(fairness: dict[str, Any] | None, days: int = 4) -> Run:
    """Queue A runs alone the first day, then A, B and C (weights 1:1:1) are saturated: four
    jobs of 4 GPUs each waiting per queue at all times, each running half an hour to 1.5 h.
    The hold lasts two hours, so the head of the fair line gets the next GPUs that free up."""
    doc = policy_doc(queue("a"), queue("b"), queue("c"))
    if fairness is not None:
        doc["fairness"] = fairness
    nodes = [node(f"n{i}", gpu=8, cpu="64") for i in range(8)]
    sim = CoreSim(nodes, parse_policy(doc), hold_seconds=2 * HOUR)
    rng = random.Random(3)
    counter = iter(range(1_000_000))

    def refill_of(queues: str) -> Callable[[CoreSim], None]:
        def refill(s: CoreSim) -> None:
            for q in queues:
                while s.waiting(q) < 4:
                    s.submit(
                        f"{q}{next(counter)}", q, gpu=4, duration=rng.uniform(HOUR / 2, 1.5 * HOUR)
                    )

        return refill

    alone = refill_of("a")
    alone(sim)
    sim.advance(DAY, refill=alone)
    everyone = refill_of("abc")
    everyone(sim)
    run = Run(sim, [], [])
    for hour in range(1, (days - 1) * 24 + 1):
        before = dict(sim.gpu_seconds)
        sim.advance(DAY + hour * HOUR, refill=everyone)
        run.hourly.append(
            {q: (sim.gpu_seconds.get(q, 0.0) - before.get(q, 0.0)) / (POOL * HOUR) for q in "abc"}
        )
        decayed = sim.co.history.decayed(sim.now)
        a = decayed.get("a", {}).get(GPU, 0.0)
        run.evened.append(all(a <= 1.1 * decayed.get(q, {}).get(GPU, 0.0) for q in "bc"))
    return run


@pytest.fixture(scope="module")
def today() -> Run:
    return saturated_run(None)


@pytest.fixture(scope="module")
def with_history() -> Run:
    return saturated_run({"halfLife": "24h", "window": "7d"})


def test_after_a_day_alone_a_gets_less_than_a_third_until_the_decayed_usage_evens_out(
    with_history: Run, today: Run
) -> None:
    # The first hour A still runs the jobs it started alone: count from the second on.
    before = [
        h["a"]
        for h, even in zip(with_history.hourly[1:], with_history.evened[1:], strict=True)
        if not even
    ]
    assert len(before) >= 12, "A's day alone weighs for at least half a day"
    assert max(before) < 1 / 3, before
    next_two_days = with_history.hourly[:48]
    assert sum(h["a"] for h in next_two_days) / 48 < 0.25, "over the next two days"
    assert all(h["a"] > 1 / 3 for h in today.hourly[1:]), "today A keeps its share as if nothing"


def test_once_even_the_three_get_gpu_time_within_10_percent_of_their_weights(
    with_history: Run,
) -> None:
    assert with_history.evened[-1], "by the end of day 3 the decayed usage has evened out"
    decayed = with_history.sim.co.history.decayed(with_history.sim.now)
    total = sum(d[GPU] for d in decayed.values())
    for q in "abc":
        assert decayed[q][GPU] / total == pytest.approx(1 / 3, rel=0.1), decayed
    after = [h for h, even in zip(with_history.hourly, with_history.evened, strict=True) if even]
    for q in "abc":
        share = sum(h[q] for h in after) / sum(sum(h.values()) for h in after)
        assert share == pytest.approx(1 / 3, rel=0.1), (q, share)


def test_over_the_three_days_history_gives_back_part_of_what_a_took_alone(
    with_history: Run, today: Run
) -> None:
    """A decayed history forgets by design: after a day alone A is still ahead over three days,
    by about half of what it is ahead without one (docs/fairness.md says why)."""
    ahead_today, ahead = today.share("a") - 1 / 3, with_history.share("a") - 1 / 3
    assert ahead < 0.7 * ahead_today, (ahead, ahead_today)
    assert with_history.share("b") == pytest.approx(with_history.share("c"), rel=0.02)


def test_a_half_life_of_zero_is_todays_fair_order_exactly(today: Run) -> None:
    off = saturated_run({"halfLife": 0, "window": "7d"})
    assert off.sim.gpu_seconds == today.sim.gpu_seconds
    assert off.hourly == today.hourly


def test_a_queue_under_its_guarantee_goes_before_one_over_it_whatever_their_history() -> None:
    doc = policy_doc(queue("busy", guarantee=gpus(8)), queue("lender", guarantee=gpus(0)))
    policy = parse_policy({**doc, "fairness": {"halfLife": "10h"}})
    sim = CoreSim([node("n0", gpu=8, cpu="64"), node("n1", gpu=8, cpu="64")], policy)
    for i in range(4):
        sim.submit(f"busy{i}", "busy", gpu=4, duration=20 * HOUR)
    for hour in range(1, 21):  # busy runs 16 GPUs for 20 h (two half-lives); lender nothing
        sim.advance(hour * HOUR)
    sim.submit("l0", "lender", gpu=8, duration=100 * HOUR)
    sim.advance(20 * HOUR + 60)
    sim.submit("busy-next", "busy", gpu=4, duration=HOUR)
    sim.submit("lender-next", "lender", gpu=4, duration=HOUR)
    book = sim.co.book_for(sim.cluster.snap())
    assert book.share("busy") > book.share("lender"), "busy's past outweighs lender's borrowing"
    line = [job.key.split("/")[1] for job in fair_order(book)]
    assert line == ["busy-next", "lender-next"], "busy is under its guarantee, lender borrows"
