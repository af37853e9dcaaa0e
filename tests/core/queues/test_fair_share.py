"""Fair order over time: the decision core driven through simulated days of saturated queues."""

from __future__ import annotations

import random

from extender.core.queues.fair_order import fair_order
from extender.core.queues.policy_parse import parse_policy
from tests.builders import gpus, node, policy_doc, queue
from tests.core_sim import CoreSim


def gpu_nodes(count: int, gpu: int = 8) -> list[dict[str, object]]:
    return [node(f"n{i}", gpu=gpu, cpu="64") for i in range(count)]


def test_three_saturated_queues_with_weights_1_1_2_get_gpu_time_within_10_percent() -> None:
    rng = random.Random(7)
    policy = parse_policy(
        policy_doc(queue("a", weight=1), queue("b", weight=1), queue("c", weight=2))
    )
    sim = CoreSim(gpu_nodes(8), policy)
    counter = iter(range(1_000_000))

    def refill(s: CoreSim) -> None:
        for q in ("a", "b", "c"):
            while s.waiting(q) < 6:
                s.submit(f"{q}{next(counter)}", q, gpu=4, duration=rng.uniform(60, 300))

    refill(sim)
    sim.advance(40_000, refill=refill, measure_from=4_000)
    total = sum(sim.gpu_seconds.values())
    shares = {q: sim.gpu_seconds.get(q, 0.0) / total for q in "abc"}
    assert abs(shares["a"] - 0.25) <= 0.025, shares
    assert abs(shares["b"] - 0.25) <= 0.025, shares
    assert abs(shares["c"] - 0.50) <= 0.05, shares
    assert total >= 0.9 * 64 * 36_000, "the pool stays busy while queues are fair"


def test_fair_order_gives_the_lower_share_against_weight_the_next_place() -> None:
    policy = parse_policy(policy_doc(queue("a"), queue("b", weight=2)))
    sim = CoreSim(gpu_nodes(1), policy)
    for i in range(3):
        sim.submit(f"a{i}", "a", gpu=8, duration=100)
        sim.submit(f"b{i}", "b", gpu=8, duration=100)
    book = sim.co.book_for(sim.cluster.snap())
    line = [job.key.split("/")[1] for job in fair_order(book)]
    assert line == ["a0", "b0", "b1", "a1", "b2", "a2"]


def test_backfill_admits_a_small_job_that_fits_and_holds_one_that_would_delay_the_head() -> None:
    policy = parse_policy(policy_doc(queue("big"), queue("small")))
    sim = CoreSim(gpu_nodes(2), policy)
    sim.submit("long", "small", gpu=6, duration=10_000)
    sim.submit("short", "small", gpu=8, duration=100)
    sim.advance(1)  # long on n0 (2 GPUs free there), short fills n1
    head = sim.submit("head", "big", gpu=8, duration=100, members=2)
    sim.advance(2)
    assert head.started is None, "16 GPUs needed, 2 free"
    hold = sim.co.holder.current
    assert hold is not None and hold.key == "gangplank:default/head"
    tiny = sim.submit("tiny", "small", gpu=1, duration=50)
    sim.advance(3)
    assert tiny.started is not None, "fits in what was free when the head began to wait: backfill"
    late = sim.submit("late", "small", gpu=4, duration=50)
    sim.advance(150)  # short finishes at 101: its 8 GPUs are held for the head
    assert late.started is None, "it would take GPUs that freed up for the head"
    snap = sim.cluster.snap()
    reason = sim.co.waiting.reason_of("pod:default/late")
    assert "reserved for gang default/head" in reason, reason
    assert snap.nodes["n1"].requested.get("nvidia.com/gpu", 0) == 0, "n1 is kept for the head"


def test_no_queue_below_its_guarantee_waits_behind_borrowed_gpus_longer_than_one_job() -> None:
    rng = random.Random(11)
    policy = parse_policy(
        policy_doc(queue("owner", guarantee=gpus(32)), queue("borrower", guarantee=gpus(0)))
    )
    sim = CoreSim(gpu_nodes(8), policy)
    runtime = 400.0
    counter = iter(range(1_000_000))

    def refill(s: CoreSim) -> None:
        while s.waiting("borrower") < 8:
            s.submit(f"b{next(counter)}", "borrower", gpu=4, duration=rng.uniform(100, runtime))

    refill(sim)
    sim.advance(2_000, refill=refill)
    book = sim.co.book_for(sim.cluster.snap())
    assert book.state["borrower"].used["nvidia.com/gpu"] == 64, "it borrows the idle pool"
    owner_jobs = [sim.submit(f"o{i}", "owner", gpu=4, duration=10_000) for i in range(8)]
    submitted = sim.now
    sim.advance(submitted + runtime, refill=refill)
    waits = [j.started - submitted for j in owner_jobs if j.started is not None]
    assert len(waits) == 8, "all of the owner's guarantee back within one job's runtime"
    assert max(waits) <= runtime
    # Seeded (Random(11)): reclaim evicts exactly 4 borrowed jobs; the rest of the room comes
    # from borrowed jobs that end on their own within the runtime.
    assert len(sim.evicted) == 4, "reclaim took borrowed jobs back, no more than needed"
    book = sim.co.book_for(sim.cluster.snap())
    assert book.state["owner"].used["nvidia.com/gpu"] == 32
