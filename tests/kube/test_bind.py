"""Bind creates the Binding through the API server and reports failures in Error."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import orjson
import pytest
from flask.testing import FlaskClient
from kubernetes import client

from extender.cache.handlers import handlers_for
from extender.cache.store import ClusterStore
from extender.core.model.answers import BindRequest
from extender.kube.binder import ApiBinder, BindError
from extender.observe.metrics import Metrics
from extender.service.runtime import Runtime
from extender.web.app import create_app
from tests.builders import node, pod
from tests.fakeapi import FakeApiServer


def app_on(api: FakeApiServer) -> tuple[FlaskClient, ClusterStore]:
    store = ClusterStore()
    handlers = handlers_for(store)
    handlers["nodes"].replace([node("n1")])
    handlers["pods"].replace([o for o in api.state.objects["pods"].values()])
    core = client.CoreV1Api(client.ApiClient(client.Configuration(host=api.url)))
    runtime = Runtime(store, ApiBinder(core), Metrics(), preloaded=True)
    return create_app(runtime).test_client(), store


def bind(test_client: FlaskClient, name: str, uid: str, node_name: str = "n1") -> dict[str, str]:
    body = {"PodName": name, "PodNamespace": "default", "PodUID": uid, "Node": node_name}
    response = test_client.post("/scheduler/bind", data=orjson.dumps(body))
    assert response.status_code == 200
    answer: dict[str, str] = orjson.loads(response.data)
    return answer


def test_a_bind_posts_a_binding_with_the_pod_uid_and_counts_the_pod(
    fake_api: FakeApiServer,
) -> None:
    created = fake_api.put("pods", pod("w-0", gpu=2))
    test_client, store = app_on(fake_api)
    answer = bind(test_client, "w-0", created["metadata"]["uid"])
    assert answer == {"Error": ""}
    binding = fake_api.state.bindings[0]
    assert binding["target"] == {"apiVersion": "v1", "kind": "Node", "name": "n1"}
    assert binding["metadata"]["uid"] == created["metadata"]["uid"]
    assert fake_api.state.objects["pods"]["default/w-0"]["spec"]["nodeName"] == "n1"
    assert store.snapshot().nodes["n1"].requested["nvidia.com/gpu"] == 2


def test_a_bind_the_api_server_refuses_reports_why_in_error(fake_api: FakeApiServer) -> None:
    created = fake_api.put("pods", pod("w-0", node="n2"))
    test_client, _store = app_on(fake_api)
    answer = bind(test_client, "w-0", created["metadata"]["uid"])
    assert "binding pod default/w-0 to node n1 failed: HTTP 409" in answer["Error"]
    assert "already assigned" in answer["Error"]


def test_a_bind_to_the_node_a_pod_is_bound_to_already_is_answered_done_without_a_binding(
    fake_api: FakeApiServer,
) -> None:
    # gangplank bound it with its gang's other members while kube-scheduler still filtered its
    # older copy: its filter passed that node, and its bind is then no error
    created = fake_api.put("pods", pod("w-0", node="n1"))
    test_client, _store = app_on(fake_api)
    assert bind(test_client, "w-0", created["metadata"]["uid"]) == {"Error": ""}
    assert fake_api.state.bindings == []
    metrics = test_client.get("/metrics").get_data(as_text=True)
    assert 'gangplank_binds_total{outcome="already-bound"} 1.0' in metrics
    assert 'gangplank_binds_total{outcome="bound"}' not in metrics


def test_a_bind_for_a_pod_that_is_gone_reports_not_found(fake_api: FakeApiServer) -> None:
    test_client, _ = app_on(fake_api)
    answer = bind(test_client, "ghost", "u-ghost")
    assert "HTTP 404" in answer["Error"] and "not found" in answer["Error"]


def test_a_bind_with_a_stale_uid_is_refused(fake_api: FakeApiServer) -> None:
    fake_api.put("pods", pod("w-0"))
    test_client, _ = app_on(fake_api)
    answer = bind(test_client, "w-0", "uid-of-an-older-pod-with-that-name")
    assert "HTTP 409" in answer["Error"] and "precondition" in answer["Error"]


def test_an_unreachable_api_server_is_a_bind_error_not_a_500() -> None:
    core = client.CoreV1Api(client.ApiClient(client.Configuration(host="http://127.0.0.1:9")))
    runtime = Runtime(
        ClusterStore(), ApiBinder(core, timeout=(0.2, 0.2)), Metrics(), preloaded=True
    )
    test_client = create_app(runtime).test_client()
    answer = bind(test_client, "w-0", "u1")
    assert "API server unreachable" in answer["Error"]
    metrics = test_client.get("/metrics").data.decode()
    assert 'gangplank_binds_total{outcome="failed"} 1.0' in metrics


def test_a_gang_member_is_bound_only_to_its_planned_node() -> None:
    from extender.kube.binder import StoreBinder
    from tests.builders import gang_pods

    members = gang_pods("t", 1, gpu=8)
    store = ClusterStore()
    handlers = handlers_for(store)
    handlers["nodes"].replace([node("n1"), node("n2")])
    handlers["pods"].replace(members)
    test_client = create_app(Runtime(store, StoreBinder(), Metrics(), preloaded=True)).test_client()
    answer = orjson.loads(
        test_client.post(
            "/scheduler/filter",
            data=orjson.dumps({"Pod": members[0], "NodeNames": ["n1", "n2"], "Nodes": None}),
        ).data
    )
    (planned,) = answer["NodeNames"]
    other = "n2" if planned == "n1" else "n1"
    uid = members[0]["metadata"]["uid"]
    refused = bind(test_client, "t-0", uid, other)
    assert refused["Error"] == f"pod default/t-0 is planned on node {planned}, not {other}"
    assert bind(test_client, "t-0", uid, planned) == {"Error": ""}


def test_the_demos_binder_refuses_what_the_api_server_would_not_bind() -> None:
    # `serve --cluster-file`: answered done (and counted bound) for any pod before
    from extender.kube.binder import StoreBinder

    store = ClusterStore()
    handlers = handlers_for(store)
    handlers["nodes"].replace([node("n1"), node("n2")])
    waiting, placed = pod("w-0"), pod("w-1", node="n2")
    handlers["pods"].replace([waiting, placed])
    app = create_app(Runtime(store, StoreBinder(store), Metrics(), preloaded=True))
    test_client = app.test_client()
    gone = bind(test_client, "ghost", "u-ghost")
    assert (
        gone["Error"]
        == 'binding pod default/ghost to node n1 failed: HTTP 404: pods "ghost" not found'
    )
    other = bind(test_client, "w-0", "uid-of-another-w-0")
    assert (
        "HTTP 409: Precondition failed: UID in precondition: uid-of-another-w-0" in other["Error"]
    )
    taken = bind(test_client, "w-1", placed["metadata"]["uid"], "n1")
    assert 'HTTP 409: pod w-1 is already assigned to node "n2"' in taken["Error"]
    assert bind(test_client, "w-0", waiting["metadata"]["uid"]) == {"Error": ""}
    assert store.bound_node(waiting["metadata"]["uid"]) == "n1"
    metrics = test_client.get("/metrics").get_data(as_text=True)
    assert 'gangplank_binds_total{outcome="failed"} 3.0' in metrics


def test_binds_over_one_kept_alive_connection_take_milliseconds_not_a_delayed_ack_each(
    fake_api: FakeApiServer,
) -> None:
    # kube-apiserver answers with TCP_NODELAY (Go's default); an API server that wrote its
    # answer's body behind Nagle's algorithm would hold each call for the client's delayed ACK
    # (40 ms on Linux): a load test's binds would measure that, not gangplank.
    uids = [fake_api.put("pods", pod(f"w-{i}"))["metadata"]["uid"] for i in range(30)]
    binder = ApiBinder(client.CoreV1Api(client.ApiClient(client.Configuration(host=fake_api.url))))
    start = time.perf_counter()
    for i, uid in enumerate(uids):
        binder.bind(BindRequest("default", f"w-{i}", uid, "n1"))
    assert time.perf_counter() - start < 0.6  # 30 delayed ACKs would be 1.2 s


class _Capture(BaseHTTPRequestHandler):
    """Answers every POST 201 and keeps its path, headers and body."""

    seen: ClassVar[list[tuple[str, dict[str, str], bytes]]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.seen.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
        self.send_response(201)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


def test_a_binding_carries_the_clients_credentials_user_agent_and_host_path() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Capture)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        port = server.server_address[1]
        configuration = client.Configuration(host=f"http://127.0.0.1:{port}/k8s/clusters/c-1")
        configuration.api_key = {"authorization": "token-1"}
        configuration.api_key_prefix = {"authorization": "Bearer"}
        # the in-cluster loader rotates the token this way
        refreshed = iter(["token-2", "token-3"])
        configuration.refresh_api_key_hook = lambda c: c.api_key.update(  # type: ignore[assignment]
            authorization=next(refreshed)
        )
        binder = ApiBinder(client.CoreV1Api(client.ApiClient(configuration)))
        binder.bind(BindRequest("team-a", "w-0", "u-0", "n1"))
        binder.bind(BindRequest("team-a", "w-1", "", "n2"))
    finally:
        server.shutdown()
    (path, headers, body), (_, later, unconditional) = _Capture.seen[-2:]
    assert path == "/k8s/clusters/c-1/api/v1/namespaces/team-a/pods/w-0/binding"
    assert headers["authorization"] == "Bearer token-2"
    assert later["authorization"] == "Bearer token-3"
    assert headers["user-agent"].startswith("OpenAPI-Generator/")
    assert headers["content-type"] == "application/json"
    assert orjson.loads(body) == {
        "kind": "Binding",
        "apiVersion": "v1",
        "metadata": {"name": "w-0", "namespace": "team-a", "uid": "u-0"},
        "target": {"kind": "Node", "apiVersion": "v1", "name": "n1"},
    }
    assert "uid" not in orjson.loads(unconditional)["metadata"]


def test_a_fault_of_gangplanks_own_in_a_bind_is_not_reported_as_the_network(
    fake_api: FakeApiServer,
) -> None:
    configuration = client.Configuration(host=fake_api.url)
    configuration.api_key = {"authorization": "token-1"}

    def broken(_: object) -> None:
        raise RuntimeError("the token file could not be read")

    configuration.refresh_api_key_hook = broken  # type: ignore[assignment]
    binder = ApiBinder(client.CoreV1Api(client.ApiClient(configuration)))
    with pytest.raises(BindError) as raised:
        binder.bind(BindRequest("default", "w-0", "u-0", "n1"))
    assert "gangplank internal error (RuntimeError)" in str(raised.value)
    assert "unreachable" not in str(raised.value)
