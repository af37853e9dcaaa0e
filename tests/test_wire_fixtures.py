"""Every request body a real kube-scheduler sent gets an answer it accepts."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from flask.testing import FlaskClient

from tests.builders import fixture
from tests.kube_scheduler import (
    check_bind_answer,
    check_filter_answer,
    check_preempt_answer,
    check_prioritize_answer,
)

FILTER_FIXTURES = [
    "filter.nodenames.json",
    "filter.nodes.json",
    "filter.nominated.nodenames.json",
    "filter.nominated.nodes.json",
]


def post(client: FlaskClient, verb: str, body: Any) -> tuple[int, Any]:
    response = client.post(
        f"/scheduler/{verb}", data=orjson.dumps(body), content_type="application/json"
    )
    return response.status_code, orjson.loads(response.data)


def lower_keys(body: dict[str, Any]) -> dict[str, Any]:
    return {key.lower(): value for key, value in body.items()}


@pytest.mark.parametrize(
    "name",
    FILTER_FIXTURES,
    ids=[
        "filter with node names keeps every node",
        "filter with full nodes keeps every node",
        "filter of the nominated node after preemption (names)",
        "filter of the nominated node after preemption (nodes)",
    ],
)
def test_filter_fixture_is_answered_in_the_form_asked(client: FlaskClient, name: str) -> None:
    request = fixture(name)
    status, answer = post(client, "filter", request)
    kept = check_filter_answer(request, status, answer)
    assert sorted(kept) == sorted(
        request["NodeNames"]
        if request["NodeNames"] is not None
        else [n["metadata"]["name"] for n in request["Nodes"]["items"]]
    )
    if request["NodeNames"] is None:
        assert answer["NodeNames"] is None
        assert answer["Nodes"]["items"] == request["Nodes"]["items"], "node objects echoed as sent"
    else:
        assert answer["Nodes"] is None


@pytest.mark.parametrize(
    "name",
    ["prioritize.nodenames.json", "prioritize.nodes.json"],
    ids=["prioritize with node names", "prioritize with full nodes"],
)
def test_prioritize_fixture_gets_integer_scores_for_every_node(
    client: FlaskClient, name: str
) -> None:
    request = fixture(name)
    status, answer = post(client, "prioritize", request)
    scores = check_prioritize_answer(request, status, answer)
    assert set(scores) == {"n1", "n2", "n3"}
    assert len(set(scores.values())) == 1, "no policy yet: the same score everywhere"


@pytest.mark.parametrize(
    "name",
    ["preempt.victims.json", "preempt.metavictims.json"],
    ids=["preempt with full victim pods", "preempt with victim UIDs"],
)
def test_preempt_fixture_keeps_kube_schedulers_candidates_as_meta_victims(
    client: FlaskClient, name: str
) -> None:
    request = fixture(name)
    status, answer = post(client, "preempt", request)
    kept = check_preempt_answer(request, status, answer)
    assert set(kept) == {"n1", "n2", "n3"}


def test_bind_fixture_is_bound_without_error(client: FlaskClient) -> None:
    status, answer = post(client, "bind", fixture("bind.json"))
    check_bind_answer(status, answer)


@pytest.mark.parametrize(
    "verb,name",
    [
        ("filter", "filter.nodenames.json"),
        ("prioritize", "prioritize.nodenames.json"),
        ("preempt", "preempt.metavictims.json"),
        ("bind", "bind.json"),
    ],
    ids=["filter", "prioritize", "preempt", "bind"],
)
def test_keys_are_read_case_insensitively_as_go_does(
    client: FlaskClient, verb: str, name: str
) -> None:
    request = fixture(name)
    status, answer = post(client, verb, lower_keys(request))
    assert status == 200, answer
    _upper_status, upper_answer = post(client, verb, request)
    assert answer == upper_answer or verb == "bind"


def test_answers_use_pascal_case_keys(client: FlaskClient) -> None:
    _, answer = post(client, "filter", fixture("filter.nodenames.json"))
    assert set(answer) == {
        "Nodes",
        "NodeNames",
        "FailedNodes",
        "FailedAndUnresolvableNodes",
        "Error",
    }


def test_scores_built_per_score_group_are_exact_json_for_every_node() -> None:
    from extender.core.prioritize import NodeScores
    from extender.web.wire import prioritize_answer

    names = ["n1", "n2", "gpu-a.rack-1", "n4"]
    answer = orjson.loads(prioritize_answer(names, NodeScores(3, {"n2": 10, "n4": 0})))
    assert sorted((e["Host"], e["Score"]) for e in answer) == [
        ("gpu-a.rack-1", 3),
        ("n1", 3),
        ("n2", 10),
        ("n4", 0),
    ]
    assert orjson.loads(prioritize_answer([], NodeScores())) == []
