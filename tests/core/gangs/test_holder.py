"""The holder (`core/gangs/holder.py`): one hold at a time, given to the first job in line that
lacks room, for at most `hold_seconds`; a hold that lapses cools its job down for as long."""

from __future__ import annotations

from collections.abc import Collection

from extender.core.gangs.holder import HoldKeeper, Rank, RankOf, rank
from extender.core.model.notices import Outbox
from extender.core.model.snapshot import NodeInfo, PodInfo, Snapshot
from tests.builders import gang_pods, node
from tests.cluster import Cluster

HOLD_SECONDS = 120.0
A = "gangplank:default/a"
B = "gangplank:default/b"


def free_of(node: NodeInfo, only: Collection[str] | None = None) -> dict[str, int]:
    return {name: node.free(name) for name in (only if only is not None else node.allocatable)}


def setting() -> tuple[Snapshot, dict[str, list[PodInfo]]]:
    """Two 8-GPU nodes; gangs a and b, two 8-GPU members each, pending."""
    a, b = gang_pods("a", 2, gpu=8), gang_pods("b", 2, gpu=8)
    snapshot = Cluster(nodes=[node("n0"), node("n1")], pods=[*a, *b]).snap()
    return snapshot, {key: list(snapshot.groups[key]) for key in (A, B)}


def keeper() -> tuple[HoldKeeper, Outbox]:
    outbox = Outbox()
    return HoldKeeper(HOLD_SECONDS, outbox), outbox


def ranks(table: dict[str, Rank]) -> RankOf:
    """The line as `table` ranks it (a job not in it waits no more)."""
    return lambda snapshot, key: table.get(key)


def claim(
    holder: HoldKeeper,
    snapshot: Snapshot,
    key: str,
    mine: Rank,
    pending: list[PodInfo],
    now: float,
    table: dict[str, Rank] | None = None,
) -> None:
    holder.claim(snapshot, key, mine, pending, now, free_of, (), ranks(table or {}))


def test_the_first_job_to_lack_room_takes_the_hold_and_is_told_so_once() -> None:
    snapshot, pending = setting()
    holder, outbox = keeper()
    claim(holder, snapshot, A, (1, 0, 0.0, A), pending[A], now=10.0)
    assert holder.holds(A) and holder.state() == (A, 10.0 + HOLD_SECONDS)
    assert holder.next_due() == 10.0 + HOLD_SECONDS
    assert [(n.job, n.reason) for n in outbox.take()] == [(A, "GangHolding")]
    claim(holder, snapshot, A, (1, 0, 0.0, A), pending[A], now=11.0)
    assert outbox.take() == [], "it holds already: not told again"


def test_a_job_ranked_after_the_holder_does_not_take_the_hold() -> None:
    snapshot, pending = setting()
    holder, _ = keeper()
    table = {A: (1, 0, 0.0, A), B: (1, 0, 5.0, B)}
    claim(holder, snapshot, A, table[A], pending[A], 10.0, table)
    claim(holder, snapshot, B, table[B], pending[B], 11.0, table)
    assert holder.holds(A)


def test_a_job_ranked_before_the_holder_takes_the_hold_from_it() -> None:
    snapshot, pending = setting()
    holder, outbox = keeper()
    table = {A: (1, 0, 0.0, A), B: (1, -100, 5.0, B)}  # b: priority 100
    claim(holder, snapshot, A, table[A], pending[A], 10.0, table)
    claim(holder, snapshot, B, table[B], pending[B], 11.0, table)
    assert holder.holds(B) and not holder.holds(A)
    assert [n.job for n in outbox.take()] == [A, B]


def test_a_holder_that_waits_no_more_loses_the_hold_to_any_claimant() -> None:
    snapshot, pending = setting()
    holder, _ = keeper()
    claim(holder, snapshot, A, (1, 0, 0.0, A), pending[A], 10.0, {})
    claim(holder, snapshot, B, (1, 0, 5.0, B), pending[B], 11.0, {})
    assert holder.holds(B), "the holder's rank is None: it no longer waits"


def test_a_hold_lapses_after_its_deadline_and_its_job_may_not_hold_again_for_as_long() -> None:
    snapshot, pending = setting()
    holder, _ = keeper()
    claim(holder, snapshot, A, (1, 0, 0.0, A), pending[A], 0.0)
    version = holder.version
    holder.sync(HOLD_SECONDS, planned=())
    assert holder.holds(A), "not past its deadline yet"
    holder.sync(HOLD_SECONDS + 1, planned=())
    assert holder.current is None and holder.version == version + 1
    assert holder.cooling_until(A) == 2 * HOLD_SECONDS + 1
    claim(holder, snapshot, A, (1, 0, 0.0, A), pending[A], 2 * HOLD_SECONDS)
    assert holder.current is None, "still cooling down"
    holder.sync(2 * HOLD_SECONDS + 2, planned=())
    assert holder.cooling_until(A) is None
    claim(holder, snapshot, A, (1, 0, 0.0, A), pending[A], 2 * HOLD_SECONDS + 2)
    assert holder.holds(A)


def test_a_hold_ends_without_cooldown_once_its_job_has_a_plan() -> None:
    snapshot, pending = setting()
    holder, _ = keeper()
    claim(holder, snapshot, A, (1, 0, 0.0, A), pending[A], 0.0)
    holder.sync(1.0, planned={A})
    assert holder.current is None and holder.cooling_until(A) is None


def test_give_hands_the_hold_to_the_head_of_the_fair_line_unless_planned_or_cooling() -> None:
    snapshot, pending = setting()
    holder, _ = keeper()
    assert not holder.give(snapshot, A, pending[A], 0.0, free_of, (), planned=True)
    assert holder.current is None
    assert holder.give(snapshot, A, pending[A], 0.0, free_of, (), planned=False)
    assert holder.give(snapshot, A, pending[A], 1.0, free_of, (), planned=True), "holds already"
    assert holder.give(snapshot, B, pending[B], 2.0, free_of, (), planned=False)
    assert holder.holds(B), "given, not claimed: no ranking"
    holder.sync(2.0 + HOLD_SECONDS + 1, planned=())
    assert not holder.give(snapshot, B, pending[B], 2.0 + HOLD_SECONDS + 2, free_of, (), False)


def test_nothing_pending_starts_no_hold() -> None:
    snapshot, _ = setting()
    holder, outbox = keeper()
    assert holder.give(snapshot, A, [], 0.0, free_of, (), planned=False)
    assert holder.current is None and outbox.take() == []


def test_release_ends_the_hold_of_the_job_named_only() -> None:
    snapshot, pending = setting()
    holder, _ = keeper()
    claim(holder, snapshot, A, (1, 0, 0.0, A), pending[A], 0.0)
    holder.release(B)
    assert holder.holds(A)
    holder.release(A)
    assert holder.current is None and holder.next_due() == float("inf")
    claim(holder, snapshot, A, (1, 0, 0.0, A), pending[A], 0.0)
    holder.release()
    assert holder.current is None and holder.cooling_until(A) is None


def test_the_line_ranks_partly_bound_gangs_first_then_priority_then_age() -> None:
    bound = gang_pods("bound", 2, gpu=8)
    bound[0]["spec"]["nodeName"] = "n0"
    bound[0]["status"]["phase"] = "Running"
    snapshot = Cluster(nodes=[node("n0")], pods=bound).snap()
    partly = rank(snapshot, "gangplank:default/bound", 0, 50.0)
    high = rank(snapshot, A, 10, 40.0)
    old = rank(snapshot, B, 0, 10.0)
    young = rank(snapshot, "gangplank:default/c", 0, 20.0)
    assert sorted([young, old, high, partly]) == [partly, high, old, young]
