"""Bad input gets a clear 4xx with the reason, never a 500, and the server keeps serving."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest
from flask.testing import FlaskClient

from extender.core.queues.policy_parse import parse_policy
from extender.kube.binder import StoreBinder
from extender.observe.metrics import Metrics
from extender.service.runtime import Runtime
from extender.service.settings import Settings
from extender.web.app import create_app
from tests.builders import fixture, policy_doc, queue
from tests.conftest import fixture_store


def with_pod_field(path: list[Any], value: Any) -> dict[str, Any]:
    body = copy.deepcopy(fixture("filter.nodenames.json"))
    target = body["Pod"]
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return body


CPU = ["spec", "containers", 0, "resources", "requests", "cpu"]

BAD_BODIES: list[tuple[str, str, bytes, str]] = [
    ("malformed JSON", "filter", b'{"Pod": ', "not valid JSON"),
    ("an empty body", "filter", b"", "empty request body"),
    ("a JSON array instead of an object", "filter", b"[1, 2]", "must be a JSON object"),
    ("no Pod at all", "filter", b'{"NodeNames": ["n1"]}', "missing Pod"),
    (
        "Pod as a string",
        "prioritize",
        b'{"Pod": "gpu-one", "NodeNames": ["n1"]}',
        "Pod must be a JSON object",
    ),
    (
        "NodeNames as a string",
        "filter",
        orjson.dumps({**fixture("filter.nodenames.json"), "NodeNames": "n1"}),
        "NodeNames must be",
    ),
    (
        "neither NodeNames nor Nodes",
        "filter",
        orjson.dumps({**fixture("filter.nodenames.json"), "NodeNames": None}),
        "neither NodeNames",
    ),
    (
        "a node without a name",
        "filter",
        orjson.dumps({**fixture("filter.nodes.json"), "Nodes": {"items": [{"metadata": {}}]}}),
        "has no metadata.name",
    ),
    (
        "an absurd cpu quantity",
        "filter",
        orjson.dumps(with_pod_field(CPU, "1e999")),
        "larger than any real quantity",
    ),
    ("a negative cpu quantity", "filter", orjson.dumps(with_pod_field(CPU, "-2")), "negative"),
    (
        "a cpu quantity that is text",
        "filter",
        orjson.dumps(with_pod_field(CPU, "lots")),
        "is not a quantity",
    ),
    (
        "labels that are not strings",
        "filter",
        orjson.dumps(with_pod_field(["metadata", "labels"], {"app": 7})),
        "must be a string",
    ),
    (
        "containers that are not a list",
        "filter",
        orjson.dumps(with_pod_field(["spec", "containers"], {"c": 1})),
        "must be a list",
    ),
    (
        "priority that is text",
        "filter",
        orjson.dumps(with_pod_field(["spec", "priority"], "high")),
        "must be an integer",
    ),
    (
        "victims without UIDs",
        "preempt",
        orjson.dumps(
            {
                **fixture("preempt.metavictims.json"),
                "NodeNameToMetaVictims": {"n1": {"Pods": [{}], "NumPDBViolations": 0}},
            }
        ),
        "has no UID",
    ),
    (
        "no victims map",
        "preempt",
        orjson.dumps({"Pod": fixture("preempt.victims.json")["Pod"]}),
        "neither NodeNameToMetaVictims nor NodeNameToVictims",
    ),
    (
        "a pod without a name",
        "filter",
        orjson.dumps(with_pod_field(["metadata", "name"], None)),
        "Pod.metadata.name is required",
    ),
    (
        "a node sent with uid null",
        "filter",
        orjson.dumps(
            {
                **fixture("filter.nodes.json"),
                "Nodes": {
                    "items": [
                        {**node, "metadata": {**node["metadata"], "uid": None}}
                        for node in fixture("filter.nodes.json")["Nodes"]["items"]
                    ]
                },
            }
        ),
        "Nodes.items[0].metadata.uid must be a string",
    ),
    (
        "bind without a node",
        "bind",
        orjson.dumps({**fixture("bind.json"), "Node": ""}),
        "Node must be a non-empty string",
    ),
    (
        "bind with a numeric pod name",
        "bind",
        orjson.dumps({**fixture("bind.json"), "PodName": 5}),
        "PodName must be",
    ),
    # node names that are not names were answered 200 and sent back (or bound to) before
    *(
        (
            f"{verb} with the node name {name!r}",
            verb,
            orjson.dumps({**fixture(f"{verb}.nodenames.json"), "NodeNames": ["n1", name]}),
            f"node name {name!r} is not a valid Kubernetes node name",
        )
        for verb in ("filter", "prioritize")
        for name in ("", "A B", "../etc", "UPPER", "-x", "x" * 254)
    ),
    (
        "a node whose metadata.name is not a name",
        "filter",
        orjson.dumps(
            {
                **fixture("filter.nodes.json"),
                "Nodes": {"items": [{"metadata": {"name": "../x"}}]},
            }
        ),
        "node name '../x' is not a valid Kubernetes node name",
    ),
    (
        "preempt on a node name that is not a name",
        "preempt",
        orjson.dumps(
            {
                **fixture("preempt.metavictims.json"),
                "NodeNameToMetaVictims": {"a/b": {"Pods": [], "NumPDBViolations": 0}},
            }
        ),
        "node name 'a/b' is not a valid Kubernetes node name",
    ),
    (
        "bind to a node name that is not a name",
        "bind",
        orjson.dumps({**fixture("bind.json"), "Node": "../x"}),
        "node name '../x' is not a valid Kubernetes node name",
    ),
]


@pytest.mark.parametrize(
    "verb,body,reason",
    [b[1:] for b in BAD_BODIES],
    ids=[f"{b[0]} is refused with the reason" for b in BAD_BODIES],
)
def test_bad_body_is_refused_with_400_and_a_reason(
    client: FlaskClient, verb: str, body: bytes, reason: str
) -> None:
    response = client.post(f"/scheduler/{verb}", data=body, content_type="application/json")
    assert response.status_code == 400, response.data
    answer = orjson.loads(response.data)
    assert reason in answer["Error"]
    # and the server keeps serving
    ok = client.post("/scheduler/filter", data=orjson.dumps(fixture("filter.nodenames.json")))
    assert ok.status_code == 200


def test_unknown_route_is_404_naming_the_routes(client: FlaskClient) -> None:
    response = client.post("/scheduler/filtre", data=b"{}")
    assert response.status_code == 404
    reason = orjson.loads(response.data)["Error"]
    assert "POST /scheduler/filter" in reason
    # every GET route (/pods was left out of a written list before)
    assert reason.endswith("GET /healthz, /metrics, /pods, /queues, /readyz, /status, /why")


def test_get_on_a_verb_is_405(client: FlaskClient) -> None:
    response = client.get("/scheduler/filter")
    assert response.status_code == 405
    assert "POST" in orjson.loads(response.data)["Error"]
    assert "POST" in response.headers["Allow"], "RFC 9110: a 405 names the allowed methods"


def test_a_body_over_the_limit_is_refused_as_too_large() -> None:
    runtime = Runtime(fixture_store(), StoreBinder(), Metrics(), preloaded=True)
    client = create_app(runtime, Settings(max_body_bytes=4096)).test_client()
    response = client.post("/scheduler/filter", data=b" " * 5000)
    assert response.status_code == 413
    assert "larger than the limit of 4096 bytes" in orjson.loads(response.data)["Error"]


def test_bad_requests_are_counted_by_status(client: FlaskClient) -> None:
    client.post("/scheduler/filter", data=b"nope")
    metrics = client.get("/metrics").data.decode()
    assert 'gangplank_requests_total{code="400",verb="filter"} 1.0' in metrics


def test_the_queue_report_answers_without_a_policy_and_refuses_bad_parameters(
    client: FlaskClient,
) -> None:
    answer = client.get("/queues")
    assert answer.status_code == 200
    assert answer.json == {
        "policy": None,
        "queues": [],
        "reason": "no policy: gangplank runs without queues",
    }
    for bad in ("-1", "x", "1e9", "100001"):
        response = client.get(f"/queues?limit={bad}")
        assert response.status_code == 400 and response.json is not None
        assert "jobs listed per queue" in response.json["Error"]


def test_the_queue_report_names_a_queue_that_does_not_exist() -> None:
    policy = parse_policy(policy_doc(queue("ml"), queue("vision", parent="ml")))
    runtime = Runtime(fixture_store(), StoreBinder(), Metrics(), preloaded=True, policy=policy)
    app = create_app(runtime).test_client()
    report = app.get("/queues?queue=ml").json
    assert report is not None
    assert [q["name"] for q in report["queues"]] == ["ml", "vision"]
    missing = app.get("/queues?queue=nope")
    assert missing.status_code == 404
    assert missing.json == {"Error": "queue 'nope' does not exist"}
