"""docs/openapi.yaml describes every endpoint as it answers, and no request, however hostile, gets
a 500, a hang or an answer outside the description.

Three ways: the description's paths and methods equal the app's routes; hypothesis throws random
and adversarial bodies (wrong types, deep nesting, duplicate keys, NaN, unicode, absurd
quantities, huge arrays, bytes that are not JSON) at every verb in-process and checks each answer
against the description; schemathesis drives a live `gangplank serve` (real gunicorn) from the
description alone. All three are bounded and seeded, so a failure reproduces.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema_rs
import orjson
import pytest
import yaml
from flask.testing import FlaskClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from extender.core.queues.policy_parse import parse_policy
from extender.kube.binder import StoreBinder
from extender.observe.metrics import Metrics
from extender.service.runtime import Runtime
from extender.web.app import create_app
from extender.web.verbs import VERBS
from tests.builders import fixture, gpus, node, pod, policy_doc, queue
from tests.cluster import Cluster
from tests.conftest import fixture_store
from tests.serving import Served

ROOT = Path(__file__).resolve().parents[2]
SPEC_PATH = ROOT / "docs" / "openapi.yaml"
DEMO_CLUSTER = ROOT / "extender" / "data" / "demo-cluster.yaml"
BODIES = {
    "filter": ["filter.nodenames.json", "filter.nodes.json"],
    "prioritize": ["prioritize.nodenames.json", "prioritize.nodes.json"],
    "preempt": ["preempt.victims.json", "preempt.metavictims.json"],
    "bind": ["bind.json"],
}
EXAMPLES = settings(
    max_examples=120,
    deadline=None,
    derandomize=True,  # the same cases every run: a failure in CI reproduces here
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@cache
def spec() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(SPEC_PATH.read_text())
    return loaded


@cache
def validator(path: str, status: str) -> Any:
    """A JSON Schema validator for the answer `spec()` gives `path` with `status`."""
    operation = next(iter(spec()["paths"][path].values()))
    response = operation["responses"][status]
    if "$ref" in response:
        response = spec()["components"]["responses"][response["$ref"].rsplit("/", 1)[1]]
    schema = response["content"]["application/json"]["schema"]
    root = {"$schema": "https://json-schema.org/draft/2020-12/schema"}
    return jsonschema_rs.validator_for({**root, **schema, "components": spec()["components"]})


def queued_client() -> FlaskClient:
    policy = parse_policy(
        policy_doc(queue("team-a", guarantee=gpus(8)), queue("team-b", guarantee=gpus(0)))
    )
    runtime = Runtime(fixture_store(), StoreBinder(), Metrics(), preloaded=True, policy=policy)
    return create_app(runtime).test_client()


def test_the_description_names_every_route_and_no_other(client: FlaskClient) -> None:
    described = {
        (method.upper(), path) for path, item in spec()["paths"].items() for method in item
    }
    served = {
        (method, rule.rule)
        for rule in client.application.url_map.iter_rules()
        if rule.endpoint != "static"
        for method in rule.methods or ()
        if method not in ("HEAD", "OPTIONS")
    }
    assert described == served
    assert {p for p in spec()["paths"] if p.startswith("/scheduler/")} == {
        f"/scheduler/{verb}" for verb in VERBS
    }


# ---- hostile bodies, in-process ------------------------------------------------------------

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=30),
    st.sampled_from(["1e400", "-1", "9" * 40, "1Ei", "NaN", "0.0001m", "\u0000", "\ud7ff" * 3]),
)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=6), st.dictionaries(st.text(max_size=12), inner, max_size=6)
    ),
    max_leaves=25,
)


def paths_of(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a JSON value: dict keys and list indices, outermost first."""
    found = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, item in value.items():
            found += paths_of(item, (*prefix, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found += paths_of(item, (*prefix, i))
    return found


@st.composite
def mutated_body(draw: st.DrawFn, verb: str) -> bytes:
    """A real kube-scheduler body of `verb` with one place replaced by any JSON value."""
    body = copy.deepcopy(fixture(draw(st.sampled_from(BODIES[verb]))))
    where = draw(st.sampled_from(paths_of(body)))
    target = body
    for key in where[:-1]:
        target = target[key]
    target[where[-1]] = draw(JSON)
    return json.dumps(body).encode()  # the standard encoder writes integers of any size


def _hostile(verb: str) -> list[bytes]:
    real = orjson.dumps(fixture(BODIES[verb][0])).decode()
    gpu = '"nvidia.com/gpu":"1"'
    return [
        ("[" * 100_000 + "]" * 100_000).encode(),  # nesting deeper than any parser's stack
        ('{"Pod":' * 5_000 + "{}" + "}" * 5_000).encode(),
        (real[:-1] + ',"Pod":{"metadata":{"name":"twin"}}}').encode(),  # the same key twice
        real.replace('"Pod"', '"pOd"', 1).encode(),  # keys without regard to case
        b'{"Pod": NaN, "NodeNames": [Infinity]}',
        ('{"NodeNames": ["' + '","'.join(f"n{i}" for i in range(50_000)) + '"]}').encode(),
        real.replace(gpu, '"nvidia.com/gpu":"1e999999"').encode(),  # absurd quantities
        real.replace(gpu, '"nvidia.com/gpu":"-9223372036854775809"').encode(),
        real.replace(gpu, '"nvidia.com/gpu":1e308').encode(),
        real.replace('"n1"', r'"n\u0000\ud800"').encode(),  # a NUL and a lone surrogate
    ]


def hostile_bytes(verb: str) -> st.SearchStrategy[bytes]:
    """Bodies no JSON encoder would write: built by hand, drawn by index (short to print)."""
    cases = _hostile(verb)
    return st.one_of(
        st.binary(max_size=64),  # not JSON, not even UTF-8
        st.integers(0, len(cases) - 1).map(lambda i: cases[i]),
        JSON.map(lambda v: json.dumps(v).encode()),  # any JSON at all, integers of any size
    )


def check_answer(verb: str, status: int, data: bytes, content_type: str | None) -> None:
    assert status in (200, 400, 413), (status, data[:300])
    assert content_type == "application/json"
    answer = orjson.loads(data)
    validator(f"/scheduler/{verb}", str(status)).validate(answer)


@pytest.mark.parametrize("verb", VERBS)
def test_hostile_bodies_get_a_described_answer_or_a_reason(client: FlaskClient, verb: str) -> None:
    queued = queued_client()

    @EXAMPLES
    @given(body=st.one_of(mutated_body(verb), hostile_bytes(verb)), queues=st.booleans())
    def one(body: bytes, queues: bool) -> None:
        response = (queued if queues else client).post(f"/scheduler/{verb}", data=body)
        check_answer(verb, response.status_code, response.data, response.mimetype)

    one()


# ---- what the read-only endpoints reveal ----------------------------------------------------


def test_read_only_endpoints_reveal_nothing_kubectl_get_pods_would_not() -> None:
    """Names, phases, nodes, gangs and queues are what `kubectl get pods` shows; environment
    variables, arguments, annotations' values and images stay in the pod."""
    secret = "hunter2-do-not-show"
    waiting = pod("trainer", gpu=64)
    container = waiting["spec"]["containers"][0]
    container["env"] = [{"name": "PASSWORD", "value": secret}]
    container["args"] = [f"--token={secret}"]
    container["image"] = f"registry.example/{secret}:1"
    waiting["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] = secret
    cluster = Cluster(nodes=[node("n1", gpu=8)], pods=[waiting])
    runtime = Runtime(cluster.store, StoreBinder(), Metrics(), preloaded=True)
    client = create_app(runtime).test_client()
    client.post("/scheduler/filter", json={"Pod": waiting, "NodeNames": ["n1"]})
    for url in ("/why?pod=default/trainer", "/status", "/queues", "/pods", "/metrics", "/readyz"):
        response = client.get(url)
        assert response.status_code == 200, url
        assert secret not in response.get_data(as_text=True), url
    assert "trainer" in client.get("/why?pod=default/trainer").get_data(as_text=True)


# ---- schemathesis against a live server ----------------------------------------------------


@pytest.mark.slow
def test_schemathesis_finds_no_failure_against_a_live_server(tmp_path: Path) -> None:
    """Every operation of the description, positive and negative cases: never a 500, every
    status, content type and body as described, every answer within 5 s (`Allow` on a 405)."""
    # Its bad requests are logged at info: more than a pipe holds (64 KiB), which Served reads
    # only at the end, and a server blocked on its log answers nothing.
    with Served("--cluster-file", str(DEMO_CLUSTER), "--log-level", "warning") as served:
        run = subprocess.run(
            [
                str(Path(sys.executable).with_name("schemathesis")),
                "run",
                str(SPEC_PATH),
                "--url",
                served.base,
                "--checks",
                "not_a_server_error,status_code_conformance,content_type_conformance,"
                "response_schema_conformance,unsupported_method",
                "--max-response-time",
                "5",
                "--request-timeout",
                "10",
                "--max-examples",
                "40",
                "--seed",
                "20261203",
                "--no-color",
            ],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=300,
        )
    tail = run.stdout[-4000:] + run.stderr[-2000:]
    assert run.returncode == 0, tail
    assert "passed" in run.stdout, tail
