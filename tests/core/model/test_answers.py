"""The shapes of the core's answers (`core/model/answers.py`): nodes refused for good, scores
clamped to what kube-scheduler takes, scores by node or listed in the order sent."""

from __future__ import annotations

from extender.core.model.answers import BindRequest, FilterResult, NodeScores, clamp_score, refuse


def test_refused_nodes_fail_for_good_with_their_reasons_and_unsent_ones_are_left_out() -> None:
    result = FilterResult(passed=["n1", "n2", "n3"], failed={"n4": "no room"})
    refused = refuse(result, {"n2": "reserved for gang default/g", "n9": "not sent"})
    assert refused.passed == ["n1", "n3"]
    assert refused.unresolvable == {"n2": "reserved for gang default/g"}
    assert refused.failed == {"n4": "no room"}, "what preemption might help stays so"


def test_scores_are_integers_from_0_to_10() -> None:
    assert [clamp_score(s) for s in (-3, 4.6, 99)] == [0, 5, 10]


def test_a_node_scored_apart_differs_from_the_default_and_the_rest_score_the_default() -> None:
    scores = NodeScores(default=3, by_node={"n1": 10})
    assert scores.of("n1") == 10 and scores.of("n2") == 3
    assert scores.table(["n1", "n2"]) == {"n1": 10, "n2": 3}


def test_scores_listed_for_the_nodes_sent_are_read_by_name() -> None:
    scores = NodeScores(names=["a", "b"], listed=[4, 7])
    assert scores.of("b") == 7 and scores.of("z") == 0
    assert scores.table(["b", "a", "z"]) == {"b": 7, "a": 4, "z": 0}


def test_a_bind_request_is_keyed_by_namespace_and_name() -> None:
    assert BindRequest("ml", "w-0", "uid-1", "n1").key == "ml/w-0"
