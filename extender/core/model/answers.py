"""What the core answers kube-scheduler, one type per verb: filter (`FilterResult`), prioritize
(`NodeScores`), preempt (`Victims`) and bind (`BindRequest`, `BindDecision`). The decisions are
the engine's (`core/engine.py`); these are the shapes the web layer turns into JSON."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import filterfalse


@dataclass(slots=True)
class FilterResult:
    """The answer for one pod: nodes kept, and the reason for every node dropped.

    `failed`: preemption on that node might help. `unresolvable`: it will not.
    """

    passed: list[str]
    failed: dict[str, str] = field(default_factory=dict)
    unresolvable: dict[str, str] = field(default_factory=dict)


def refuse(result: FilterResult, refused: Mapping[str, str]) -> FilterResult:
    """`result` with the `refused` nodes it passed failed for good (with their reasons); refused
    nodes that were not sent are left out. The nodes passed, thousands of them, are filtered in
    C."""
    passed = result.passed
    result.passed = list(filterfalse(refused.__contains__, passed))
    if len(passed) - len(result.passed) != len(refused):  # some refused nodes were not sent
        sent = set(passed)
        refused = {name: why for name, why in refused.items() if name in sent}
    result.unresolvable.update(refused)
    return result


MIN_SCORE = 0
MAX_SCORE = 10
NEUTRAL_SCORE = 0


def clamp_score(score: float) -> int:
    """An integer in [0, 10]: kube-scheduler rejects the whole answer for anything else."""
    return max(MIN_SCORE, min(MAX_SCORE, round(score)))


@dataclass(frozen=True, slots=True)
class NodeScores:
    """A score for every node: `by_node` where it differs from `default`.

    Most nodes share a score (all of them, for a pod with no placement preference), so the answer
    for 5,000 nodes is built without touching each node in Python. Or, for scores worked out for
    every node kube-scheduler sent: `listed`, a score for each of `names`, in order.
    """

    default: int = NEUTRAL_SCORE
    by_node: Mapping[str, int] = field(default_factory=dict)
    names: Sequence[str] = ()
    listed: Sequence[int] = ()

    def of(self, node: str) -> int:
        for name, score in zip(self.names, self.listed, strict=True):
            if name == node:
                return score
        return self.by_node.get(node, self.default)

    def table(self, names: Sequence[str]) -> dict[str, int]:
        """The score of each of `names`."""
        known = dict(zip(self.names, self.listed, strict=True)) if self.listed else self.by_node
        return {name: known.get(name, self.default) for name in names}


@dataclass(frozen=True, slots=True)
class Victims:
    """Pods (by UID) to evict on one node, and how many PodDisruptionBudgets that violates."""

    uids: tuple[str, ...]
    pdb_violations: int = 0


@dataclass(frozen=True, slots=True)
class BindRequest:
    namespace: str
    name: str
    uid: str
    node: str

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class BindDecision:
    allowed: bool
    reason: str = ""
