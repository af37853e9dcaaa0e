"""Scores of every node, kept up to date node by node (`core/placement/every_node.py`): the ten
cheapest costs score 10 down to 1, and a change of one node's state costs a lookup of that node."""

from __future__ import annotations

from collections.abc import Sequence

from extender.core.model.snapshot import Snapshot
from extender.core.placement.every_node import NO_FIT, EveryNode, every_node_sent, node_costs, rank


def cost_is_state(sids: Sequence[int]) -> list[float]:
    """A state's cost is its id; id 0 is a state where the pod does not fit."""
    return [float(s) if s else NO_FIT for s in sids]


def test_the_cheapest_cost_scores_10_and_a_node_where_the_pod_does_not_fit_0() -> None:
    assert rank([3.0, 1.0, NO_FIT, 1.0]) == {1.0: 10, 3.0: 9}
    assert len(rank([float(c) for c in range(15)])) == 10, "an 11th cost scores 0"


def test_only_the_nodes_the_cache_knows_each_once_are_every_node() -> None:
    known = {"a": 1, "b": 2, "c": 1}
    assert every_node_sent(["c", "a", "b"], known)
    assert not every_node_sent(["a", "b"], known)
    assert not every_node_sent(["a", "b", "b"], known), "as many names, one missing"
    assert not every_node_sent(["a", "b", "x"], known)


def test_each_distinct_state_is_costed_once() -> None:
    asked: list[list[int]] = []

    def costs(sids: Sequence[int]) -> list[float]:
        asked.append(sorted(sids))
        return cost_is_state(sids)

    assert node_costs([2, 1, 2, 2], costs) == [2.0, 1.0, 2.0, 2.0]
    assert asked == [[1, 2]]


def test_scores_follow_a_node_s_change_from_the_store_s_log() -> None:
    before = Snapshot(nodes={}, node_states={"a": 1, "b": 2, "c": 0}, states_version=5)
    scores = EveryNode(before, cost_is_state)
    assert list(scores.scores.listed) == [10, 9, 0]
    after = Snapshot(
        nodes={},
        node_states={"a": 3, "b": 2, "c": 0},
        states_version=6,
        state_changes=((6, "a"),),
    )
    assert scores.catch_up(after, cost_is_state)
    assert list(scores.scores.names) == ["a", "b", "c"]
    assert list(scores.scores.listed) == [9, 10, 0]


def test_a_gap_in_the_log_means_starting_over() -> None:
    before = Snapshot(nodes={}, node_states={"a": 1, "b": 2}, states_version=5)
    scores = EveryNode(before, cost_is_state)
    gone = Snapshot(
        nodes={}, node_states={"a": 1, "b": 2}, states_version=7, state_changes=((7, "a"),)
    )
    assert not scores.catch_up(gone, cost_is_state), (
        "version 6 is not in the log: a node came or went"
    )
    older = Snapshot(nodes={}, node_states={"a": 1, "b": 2}, states_version=4)
    assert not scores.catch_up(older, cost_is_state)
