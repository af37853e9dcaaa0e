"""Prioritize: a score from 0 to 10 for each node that passed the filter.

kube-scheduler multiplies the score by the extender's weight and adds it to its own. Until
placement policy exists every node gets the same score, which changes no ranking.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from extender.core.model import PodInfo, Snapshot

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


def decide_scores(snapshot: Snapshot, pod: PodInfo, node_names: Sequence[str]) -> NodeScores:
    return NodeScores(default=NEUTRAL_SCORE)
