"""Whatever a request looks like, the answer is 200 or a 4xx with a reason: never a 500.

Each case takes a real kube-scheduler request body and replaces one field, anywhere in it, by a
value of another type or an impossible one (seeded, so a failure reproduces).
"""

from __future__ import annotations

import random
from typing import Any

import orjson
import pytest
from flask.testing import FlaskClient

from extender.core.queues.policy_parse import parse_policy
from extender.kube.binder import StoreBinder
from extender.observe.metrics import Metrics
from extender.service.runtime import Runtime
from extender.web.app import create_app
from tests.builders import fixture, gpus, policy_doc, queue
from tests.conftest import fixture_store

BODIES = {
    "filter": ["filter.nodenames.json", "filter.nodes.json"],
    "prioritize": ["prioritize.nodenames.json", "prioritize.nodes.json"],
    "preempt": ["preempt.victims.json", "preempt.metavictims.json"],
    "bind": ["bind.json"],
}
ODD_VALUES: list[Any] = [
    None,
    "",
    "x",
    0,
    -1,
    2**63,
    1.5,
    True,
    [],
    {},
    [1, "a"],
    {"a": None},
    "1e999",
    "-5",
    "😀",
    "\x00",
]


def gang_member_body() -> dict[str, Any]:
    """The real filter body, its pod made a member of a gang of 2 (then the gang code runs)."""
    body = fixture("filter.nodenames.json")
    body["Pod"]["metadata"]["labels"]["gangplank.io/gang"] = "g"
    body["Pod"]["metadata"]["annotations"]["gangplank.io/gang-size"] = "1"
    return body


def paths(obj: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(obj, dict):
        for key, value in obj.items():
            out += paths(value, (*prefix, key))
    elif isinstance(obj, list):
        for i, value in enumerate(obj[:3]):
            out += paths(value, (*prefix, i))
    return out


def mutated(body: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    body = orjson.loads(orjson.dumps(body))
    path = rng.choice(paths(body))
    target = body
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = rng.choice(ODD_VALUES)
    return body


def queued_client() -> FlaskClient:
    """The fixture cluster with a policy whose queues hold the fixture pod's namespace, so every
    mutated body also runs through queue admission."""
    policy = parse_policy(
        policy_doc(
            queue("team", guarantee=gpus(1), max=gpus(2), namespaces=["*"]),
            queue("other", guarantee=gpus(1), aliases=["g"]),
        )
    )
    runtime = Runtime(fixture_store(), StoreBinder(), Metrics(), preloaded=True, policy=policy)
    return create_app(runtime).test_client()


@pytest.mark.parametrize("verb", list(BODIES), ids=[f"{v} never answers 500" for v in BODIES])
@pytest.mark.parametrize("queues", [False, True], ids=["without queues", "with queues"])
def test_mutated_requests_get_an_answer_or_a_reason(
    client: FlaskClient, verb: str, queues: bool
) -> None:
    if queues:
        client = queued_client()
    rng = random.Random(f"gangplank-{verb}-{queues}")
    for i in range(300):
        name = BODIES[verb][i % len(BODIES[verb])]
        base = (
            gang_member_body()
            if verb in ("filter", "prioritize") and i % 3 == 2
            else (fixture(name))
        )
        body = mutated(base, rng)
        response = client.post(f"/scheduler/{verb}", data=orjson.dumps(body))
        assert response.status_code in (200, 400), (response.status_code, response.data, body)
        answer = orjson.loads(response.data)
        if response.status_code == 400:
            assert answer["Error"], "a 400 says why"
