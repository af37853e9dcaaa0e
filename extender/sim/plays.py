"""What the driver's state (`state.py`) leaves to the plays mixed into the driver: moves
(`moves.MovePlay`), elastic jobs (`elastic.ElasticPlay`), faults (`faults.FaultPlay`)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from extender.sim.runs import Run, SimPod


class Plays(ABC):
    """The hooks the driver's bookkeeping calls."""

    @abstractmethod
    def _held_node(self, pod: SimPod) -> list[str] | None:
        """The node a move holds for `pod`, its hold released (`moves.MovePlay`)."""

    @abstractmethod
    def _consolidate(self, pod: SimPod) -> bool:
        """Whether moving running jobs made room for `pod` (`moves.MovePlay`)."""

    @abstractmethod
    def _elastic_start(self, run: Run) -> None:
        """An elastic job's minimum is bound (`elastic.ElasticPlay`)."""

    @abstractmethod
    def _extra_bound(self, run: Run, pod: SimPod) -> None:
        """An extra worker of a running elastic job is bound (`elastic.ElasticPlay`)."""

    @abstractmethod
    def _elastic_gone(self, run: Run) -> None:
        """A running elastic job is removed (`elastic.ElasticPlay`)."""

    @abstractmethod
    def _take(self, run: Run, pods: Sequence[SimPod], why: str) -> None:
        """Pods of `run` taken by preemption or reclaim (`elastic.ElasticPlay`: extras alone
        when an elastic job keeps its minimum, else the whole run)."""

    @abstractmethod
    def _faulty_start(self, run: Run) -> None:
        """A run showing its fault started (every member bound): `faults.FaultPlay` plays it out."""
