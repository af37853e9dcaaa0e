"""Prioritize: a score from 0 to 10 for each node that passed the filter.

kube-scheduler multiplies the score by the extender's weight and adds it to its own. Until
placement policy exists every node gets the same score, which changes no ranking.
"""

from __future__ import annotations

from collections.abc import Sequence

from extender.core.model import PodInfo, Snapshot

MIN_SCORE = 0
MAX_SCORE = 10
NEUTRAL_SCORE = 0


def clamp_score(score: float) -> int:
    """An integer in [0, 10]: kube-scheduler rejects the whole answer for anything else."""
    return max(MIN_SCORE, min(MAX_SCORE, round(score)))


def decide_scores(
    snapshot: Snapshot, pod: PodInfo, node_names: Sequence[str]
) -> list[tuple[str, int]]:
    return [(name, NEUTRAL_SCORE) for name in node_names]
