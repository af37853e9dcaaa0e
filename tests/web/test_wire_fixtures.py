"""Every request body a real kube-scheduler sent gets an answer it accepts."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest
from flask.testing import FlaskClient

from extender.cache.handlers import handlers_for
from extender.kube.binder import StoreBinder
from extender.observe.metrics import Metrics
from extender.service.runtime import Runtime
from extender.web.app import create_app
from tests.builders import fixture
from tests.conftest import fixture_store
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


def victim_pods(request: dict[str, Any], opt_out: str = "") -> list[dict[str, Any]]:
    """The victims kube-scheduler proposed, as running pods of the cache (the full pods of
    preempt.victims.json, with the UIDs of `request`)."""
    full = fixture("preempt.victims.json")["NodeNameToVictims"]
    meta = request.get("NodeNameToMetaVictims") or {
        n: {"Pods": [{"UID": p["metadata"]["uid"]} for p in v["Pods"]]}
        for n, v in request["NodeNameToVictims"].items()
    }
    out = []
    for node_name, victims in full.items():
        raw = copy.deepcopy(victims["Pods"][0])
        raw["metadata"]["uid"] = meta[node_name]["Pods"][0]["UID"]
        raw["status"] = {"phase": "Running", "startTime": "2026-01-01T00:00:00Z"}
        if raw["metadata"]["name"] == opt_out:
            raw["metadata"]["labels"]["gangplank.io/preemptible"] = "false"
        out.append(raw)
    return out


def preempt_client(request: dict[str, Any], opt_out: str = "") -> FlaskClient:
    store = fixture_store()
    handlers_for(store)["pods"].replace(victim_pods(request, opt_out))
    return create_app(Runtime(store, StoreBinder(), Metrics(), preloaded=True)).test_client()


@pytest.mark.parametrize(
    "name",
    ["preempt.victims.json", "preempt.metavictims.json"],
    ids=["preempt with full victim pods", "preempt with victim UIDs"],
)
def test_preempt_fixture_keeps_kube_schedulers_candidates_the_rules_allow(name: str) -> None:
    request = fixture(name)
    status, answer = post(preempt_client(request), "preempt", request)
    kept = check_preempt_answer(request, status, answer)
    assert set(kept) == {"n1", "n2", "n3"}, "lower-priority pods alone: all allowed"
    status, answer = post(preempt_client(request, opt_out="low-2"), "preempt", request)
    assert set(check_preempt_answer(request, status, answer)) == {"n1", "n3"}, (
        "a pod that opted out is no victim, and its node no candidate"
    )


def test_victims_gangplank_has_not_seen_are_not_proposed(client: FlaskClient) -> None:
    request = fixture("preempt.metavictims.json")
    status, answer = post(client, "preempt", request)
    assert check_preempt_answer(request, status, answer) == {}


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


def test_scores_are_exact_json_for_every_node_scored_and_leave_out_those_scored_0() -> None:
    # kube-scheduler adds nothing for a node missing from the list: the same as a 0
    from extender.core.model.answers import NodeScores
    from extender.web.wire import prioritize_answer

    names = ["n1", "n2", "gpu-a.rack-1", "n4"]
    answer = orjson.loads(prioritize_answer(names, NodeScores(3, {"n2": 10, "n4": 0})))
    assert sorted((e["Host"], e["Score"]) for e in answer) == [
        ("gpu-a.rack-1", 3),
        ("n1", 3),
        ("n2", 10),
    ]
    planned = NodeScores(0, {"n2": 10, "elsewhere": 10})  # a planned node that was not sent
    assert orjson.loads(prioritize_answer(names, planned)) == [{"Host": "n2", "Score": 10}]
    assert orjson.loads(prioritize_answer(names, NodeScores())) == []
    assert orjson.loads(prioritize_answer([], NodeScores())) == []


def test_scores_listed_per_node_are_exact_json_in_the_order_sent() -> None:
    from extender.core.model.answers import NodeScores
    from extender.web.wire import prioritize_answer

    names = ["n1", "n2", "gpu-a.rack-1", "n4"]
    scores = NodeScores(0, names=names, listed=[10, 0, 7, 10])
    answer = orjson.loads(prioritize_answer(names, scores))
    assert [(e["Host"], e["Score"]) for e in answer] == [
        ("n1", 10),
        ("gpu-a.rack-1", 7),
        ("n4", 10),
    ]
    assert scores.of("gpu-a.rack-1") == 7 and scores.of("elsewhere") == 0
    assert scores.table(["n2", "n4", "elsewhere"]) == {"n2": 0, "n4": 10, "elsewhere": 0}
