"""Carrying out consolidation's plans (`service/moves.py`): each plan whole, a dry run of every
pod first, a refusal drops the rest; what each move came to is counted."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from extender.core.lifecycle.workloads import Resume, Suspension
from extender.core.preemption.evictions import Eviction
from extender.kube.patcher import LogPatcher
from extender.kube.plan_recorder import PlanRecorder
from extender.observe.metrics import Metrics
from extender.service.decision_lock import DecisionLock
from extender.service.moves import Moves
from tests.core.consolidation.test_consolidation import engine, one_pass, replica, scattered


class Evictor:
    """Answers `dry` to every dry run and `outcome` to every eviction; remembers the pods."""

    def __init__(self, dry: str = "", outcome: str = "evicted") -> None:
        self.dry, self.outcome = dry, outcome
        self.checked: list[str] = []
        self.evicted: list[str] = []

    def evict(self, job: Sequence[Eviction]) -> str:
        self.evicted += [e.name for e in job]
        return self.outcome

    def resize(self, change: Any, why: str) -> str:
        return "failed"

    def dry_run(self, pods: Sequence[tuple[str, str, str]], grace: int | None = None) -> str:
        self.checked += [name for _, name, _ in pods]
        return self.dry


class Suspender:
    def suspend(self, suspension: Suspension) -> str:
        return "suspended"

    def resume(self, resume: Resume) -> str:
        return "resumed"


def carry(evictor: Evictor) -> tuple[Metrics, str]:
    """One plan moving a-x1 and b-x1 (ReplicaSet pods), carried out with `evictor`: the metrics
    and whether the plan still stands."""
    c = scattered(replica("a", "n1", movable="true"), replica("b", "n1", movable="true"))
    co = engine()
    [move] = one_pass(co, c)
    metrics = Metrics()
    moves = Moves(
        evictor,
        Suspender(),
        PlanRecorder(LogPatcher()),
        scheduler=co,
        store=c.store,
        lock=DecisionLock(),
        metrics=metrics,
        on_error=lambda step: None,
    )
    moves.carry_out([move])
    return metrics, "stands" if co.consolidation.moving(move.key) else "dropped"


def count(metrics: Metrics, way: str, outcome: str) -> float:
    value = metrics.registry.get_sample_value(
        "gangplank_consolidation_moves_total", {"way": way, "outcome": outcome}
    )
    return value or 0.0


def test_every_pod_is_checked_by_a_dry_run_before_any_moves_and_each_job_is_counted() -> None:
    evictor = Evictor()
    metrics, plan = carry(evictor)
    assert sorted(evictor.checked) == ["a-x1", "b-x1"]
    assert sorted(evictor.evicted) == ["a-x1", "b-x1"]
    assert count(metrics, "evict", "moved") == 2 and plan == "stands"


def test_a_dry_run_refused_for_one_pod_drops_the_plan_and_nothing_moves() -> None:
    evictor = Evictor(dry="blocked")
    metrics, plan = carry(evictor)
    assert evictor.evicted == [] and plan == "dropped"
    assert count(metrics, "evict", "blocked") == 1 and count(metrics, "evict", "dropped") == 1


def test_a_move_refused_on_the_way_drops_the_rest_of_the_plan() -> None:
    evictor = Evictor(outcome="failed")
    metrics, plan = carry(evictor)
    assert len(evictor.evicted) == 1, "the second job is not moved"
    assert plan == "dropped"
    assert count(metrics, "evict", "failed") == 1 and count(metrics, "evict", "dropped") == 1
