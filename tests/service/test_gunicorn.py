"""The real thing: `gangplank serve` under gunicorn on loopback, fed by a fake API server."""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from extender.service.gevent_worker import Worker
from extender.service.settings import WORKER_CLASSES
from tests.builders import fixture, node, pod
from tests.certs import make_certs
from tests.fakeapi import FakeApiServer
from tests.kube_scheduler import (
    check_bind_answer,
    check_filter_answer,
    check_preempt_answer,
    check_prioritize_answer,
)
from tests.serving import Served, free_port, write_kubeconfig

REPLAY = [
    ("filter", "filter.nodenames.json"),
    ("filter", "filter.nodes.json"),
    ("filter", "filter.nominated.nodenames.json"),
    ("filter", "filter.nominated.nodes.json"),
    ("prioritize", "prioritize.nodenames.json"),
    ("prioritize", "prioritize.nodes.json"),
    ("preempt", "preempt.victims.json"),
    ("preempt", "preempt.metavictims.json"),
]


def get(url: str) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


@pytest.fixture
def cluster(fake_api: FakeApiServer) -> FakeApiServer:
    for item in fixture("filter.nodes.json")["Nodes"]["items"]:
        fake_api.put("nodes", item)
    return fake_api


@pytest.mark.parametrize("worker_class", WORKER_CLASSES)
def test_every_fixture_is_answered_over_one_keep_alive_connection(
    cluster: FakeApiServer, tmp_path: Path, worker_class: str
) -> None:
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", cluster.url)
    with Served("--kubeconfig", str(kubeconfig), "--worker-class", worker_class) as served:
        deadline = time.monotonic() + 10
        while get(f"{served.base}/readyz")[0] != 200 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert get(f"{served.base}/readyz")[0] == 200
        connection = http.client.HTTPConnection("127.0.0.1", served.port, timeout=5)
        for verb, name in REPLAY:
            request = fixture(name)
            connection.request(
                "POST",
                f"/scheduler/{verb}",
                body=json.dumps(request),
                headers={"Content-Type": "application/json"},
            )
            response = connection.getresponse()
            answer = json.loads(response.read())
            assert response.getheader("Connection", "").lower() != "close", "keep-alive"
            check = {
                "filter": check_filter_answer,
                "prioritize": check_prioritize_answer,
                "preempt": check_preempt_answer,
            }[verb]
            check(request, response.status, answer)
        connection.request("POST", "/scheduler/filter", body=b"{broken")
        bad = connection.getresponse()
        assert bad.status == 400 and "not valid JSON" in json.loads(bad.read())["Error"]
        # the same connection and process keep serving after bad input
        connection.request("POST", "/scheduler/filter", body=json.dumps(REPLAY_BODY()))
        after = connection.getresponse()
        assert after.status == 200 and after.read()
        # an answer without a body (its headers alone, never held back) and one after it
        connection.request("HEAD", "/readyz")
        head = connection.getresponse()
        assert head.status == 200 and head.read() == b""
        connection.request("GET", "/readyz")
        assert json.loads(connection.getresponse().read())["ready"] is True
        probe = subprocess.run(
            [sys.executable, "-m", "extender", "probe", "readyz", "--url", served.base],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert probe.returncode == 0, probe.stderr
        metrics = get(f"{served.base}/metrics")[1]
        assert 'gangplank_requests_total{code="200",verb="filter"}' in metrics
        assert 'gangplank_cache_synced{kind="pods"} 1.0' in metrics
        assert 'gangplank_cache_objects{kind="nodes"} 3.0' in metrics


def test_verbs_sent_chunked_or_too_large_are_answered_and_the_server_keeps_serving(
    cluster: FakeApiServer, tmp_path: Path
) -> None:
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", cluster.url)
    with Served("--kubeconfig", str(kubeconfig), "--max-body-bytes", "100000") as served:
        deadline = time.monotonic() + 10
        while get(f"{served.base}/readyz")[0] != 200 and time.monotonic() < deadline:
            time.sleep(0.05)
        connection = http.client.HTTPConnection("127.0.0.1", served.port, timeout=5)
        body = json.dumps(REPLAY_BODY()).encode()
        chunks = iter([body[:100], body[100:]])  # no Content-Length: sent chunked
        connection.request("POST", "/scheduler/filter", body=chunks, encode_chunked=True)
        chunked = connection.getresponse()
        check_filter_answer(REPLAY_BODY(), chunked.status, json.loads(chunked.read()))
        connection.request("POST", "/scheduler/prioritize", body=b" " * 100_001)
        large = connection.getresponse()
        assert large.status == 413
        assert "larger than the limit of 100000 bytes" in json.loads(large.read())["Error"]
        # gunicorn drains an unread body only up to a bound, then closes the connection
        connection.close()
        connection.request("POST", "/scheduler/filter", body=body)
        assert connection.getresponse().status == 200
        assert get(f"{served.base}/scheduler/filter")[0] == 405


def test_no_caller_reroutes_a_call_with_a_forwarding_header(
    cluster: FakeApiServer, tmp_path: Path
) -> None:
    # gunicorn lets the peers it trusts (loopback, by default) set SCRIPT_NAME and PATH_INFO and
    # the scheme by header; no proxy stands in front of gangplank, so it trusts no one with them.
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", cluster.url)
    with Served("--kubeconfig", str(kubeconfig)) as served:
        deadline = time.monotonic() + 10
        while get(f"{served.base}/readyz")[0] != 200 and time.monotonic() < deadline:
            time.sleep(0.05)
        connection = http.client.HTTPConnection("127.0.0.1", served.port, timeout=5)
        body = json.dumps(REPLAY_BODY()).encode()
        headers = {"SCRIPT_NAME": "/scheduler", "X-Forwarded-Proto": "https"}
        connection.request("POST", "/scheduler/filter", body=body, headers=headers)
        answer = connection.getresponse()
        check_filter_answer(REPLAY_BODY(), answer.status, json.loads(answer.read()))


@pytest.mark.parametrize("worker_class", WORKER_CLASSES)
def test_a_client_that_stalls_mid_body_is_answered_408_and_holds_no_thread(
    cluster: FakeApiServer, tmp_path: Path, worker_class: str
) -> None:
    """Every one of the worker's threads taken by a client that stopped sending its body, or
    sends it a byte at a time, and yet a well-behaved call is answered: the slow ones get 408
    once --body-seconds have passed (under gevent, the stalled ones wait without blocking)."""
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", cluster.url)
    flags = ["--kubeconfig", str(kubeconfig), "--body-seconds", "1", "--threads", "2"]
    flags += ["--worker-class", worker_class]
    head = (
        b"POST /scheduler/filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
        b"\r\nContent-Length: 1000\r\n\r\n"
    )
    with Served(*flags) as served:
        stalled = socket.create_connection(("127.0.0.1", served.port), timeout=10)
        stalled.sendall(head + b'{"Pod": ')
        dribbler = socket.create_connection(("127.0.0.1", served.port), timeout=10)
        dribbler.sendall(head)
        stop = threading.Event()

        def dribble() -> None:  # a byte every 0.2 s: never silent for a whole second
            with contextlib.suppress(OSError):
                while not stop.wait(0.2):
                    dribbler.sendall(b" ")

        threading.Thread(target=dribble, daemon=True).start()
        asked = time.monotonic()
        connection = http.client.HTTPConnection("127.0.0.1", served.port, timeout=10)
        connection.request("POST", "/scheduler/filter", body=json.dumps(REPLAY_BODY()))
        assert connection.getresponse().status == 200
        assert time.monotonic() - asked < 5, "the slow clients freed their threads"
        for sock in (stalled, dribbler):
            answer = http.client.HTTPResponse(sock)
            answer.begin()
            assert answer.status == 408
            reason = json.loads(answer.read())["Error"]
            assert reason == "request body not received within 1 s (--body-seconds)"
        stop.set()
        took = time.monotonic() - asked
        assert took < 5, f"the dribbler was answered after {took:.1f} s"
        for sock in (stalled, dribbler):
            sock.close()


@pytest.mark.parametrize("worker_class", WORKER_CLASSES)
def test_a_sigterm_does_not_wait_for_kube_scheduler_s_idle_kept_alive_connections(
    cluster: FakeApiServer, tmp_path: Path, worker_class: str
) -> None:
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", cluster.url)
    served = Served("--kubeconfig", str(kubeconfig), "--worker-class", worker_class)
    with served:
        idle = http.client.HTTPConnection("127.0.0.1", served.port, timeout=10)
        idle.request("POST", "/scheduler/filter", body=json.dumps(REPLAY_BODY()))
        assert idle.getresponse().read()  # answered; the connection stays open, idle
        assert served.process is not None
        asked = time.monotonic()
        served.process.terminate()
        served.process.wait(timeout=15)
        took = time.monotonic() - asked
        assert took < 5, f"gangplank took {took:.1f} s to stop (the graceful timeout is 20 s)"
        idle.close()
        output = served.output()
        assert "Traceback" not in output and "Error handling request" not in output, output


def test_a_connection_done_after_the_stop_began_is_closed_quietly_not_answered_an_error() -> None:
    # gunicorn's gevent worker ends a kept-alive connection quietly on StopIteration; any other
    # exception from its wait (a RuntimeError, say) is written back as an error answer
    stopping = Worker.__new__(Worker)  # no gunicorn arbiter needed for this one wait
    stopping.alive = False
    with pytest.raises(StopIteration), stopping.timeout_ctx():
        pass


def REPLAY_BODY() -> dict[str, Any]:
    return fixture("filter.nodenames.json")


def bind_on_n1(served: Served, created: dict[str, Any]) -> None:
    """kube-scheduler's bind of pod `created` to n1, through the served gangplank."""
    body = {
        "PodName": created["metadata"]["name"],
        "PodNamespace": "default",
        "PodUID": created["metadata"]["uid"],
        "Node": "n1",
    }
    request = urllib.request.Request(
        f"{served.base}/scheduler/bind", data=json.dumps(body).encode()
    )
    with urllib.request.urlopen(request, timeout=5) as response:
        check_bind_answer(response.status, json.loads(response.read()))


def test_bind_through_gunicorn_creates_the_binding(cluster: FakeApiServer, tmp_path: Path) -> None:
    created = cluster.put("pods", pod("gpu-one", gpu=1))
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", cluster.url)
    served = Served("--kubeconfig", str(kubeconfig))
    with served:
        bind_on_n1(served, created)
    assert served.process is not None and served.process.returncode == 0, "graceful stop"
    assert cluster.state.objects["pods"]["default/gpu-one"]["spec"]["nodeName"] == "n1"


@pytest.mark.parametrize("worker_class", WORKER_CLASSES)
def test_an_api_server_over_https_is_watched_and_bound_through_from_a_kubeconfig(
    tmp_path: Path, worker_class: str
) -> None:
    # Every real API server is HTTPS. The kubeconfig's namespace is looked up before gunicorn
    # starts, which imports the kubernetes client (and urllib3) in the master: under the gevent
    # worker, whose patch came after that, every call failed with a RecursionError.
    certs = make_certs(tmp_path)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(str(certs["server_cert"]), str(certs["server_key"]))
    with FakeApiServer(tls=tls) as api:
        api.put("nodes", node("n1"))
        created = api.put("pods", pod("gpu-one", gpu=1))
        assert api.url.startswith("https://")
        kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", api.url, ca=certs["ca"])
        flags = ("--kubeconfig", str(kubeconfig), "--worker-class", worker_class)
        served = Served(*flags, health_url=None)
        served.health_url = f"{served.base}/readyz"  # ready: the first lists came in over TLS
        with served:
            bind_on_n1(served, created)
        assert api.state.objects["pods"]["default/gpu-one"]["spec"]["nodeName"] == "n1"
    assert served.process is not None and served.process.stdout is not None
    output = served.process.stdout.read().decode()
    assert "RecursionError" not in output and "MonkeyPatchWarning" not in output, output


def test_not_ready_until_the_first_full_list(tmp_path: Path) -> None:
    with FakeApiServer() as api:
        api.faults("nodes").gone_status = 0
        kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", api.url)
        # Node lists fail for a moment (the fake drops the connection): not ready.
        api.state.objects.pop("nodes")
        with Served("--kubeconfig", str(kubeconfig)) as served:
            status, text = get(f"{served.base}/readyz")
            assert status == 503 and "nodes" in json.loads(text)["reason"]
            api.state.objects["nodes"] = {}
            api.put("nodes", node("n1"))
            deadline = time.monotonic() + 15
            while get(f"{served.base}/readyz")[0] != 200 and time.monotonic() < deadline:
                time.sleep(0.1)
            assert get(f"{served.base}/readyz")[0] == 200


def test_mutual_tls_refuses_clients_without_a_certificate(tmp_path: Path) -> None:
    certs = make_certs(tmp_path)
    ca = certs["ca"]
    cluster_file = Path(__file__).parents[2] / "extender" / "data" / "demo-cluster.yaml"
    context = ssl.create_default_context(cafile=str(ca))
    context.load_cert_chain(str(certs["client_cert"]), str(certs["client_key"]))
    served = Served(
        "--cluster-file",
        str(cluster_file),
        "--tls-cert",
        str(certs["server_cert"]),
        "--tls-key",
        str(certs["server_key"]),
        "--tls-client-ca",
        str(ca),
    )
    served.health_url = served.base.replace("http:", "https:") + "/healthz"
    https_handler = urllib.request.HTTPSHandler(context=context)
    opener = urllib.request.build_opener(https_handler)
    urllib.request.install_opener(opener)
    try:
        with served:
            with opener.open(served.health_url, timeout=5) as response:
                assert response.status == 200
            anonymous = ssl.create_default_context(cafile=str(ca))
            with pytest.raises((ssl.SSLError, urllib.error.URLError, ConnectionError)):
                urllib.request.urlopen(served.health_url, timeout=5, context=anonymous).read()
    finally:
        urllib.request.install_opener(urllib.request.build_opener())


def test_a_home_it_cannot_write_to_leaves_the_start_clean() -> None:
    """As the Deployment runs it: uid 65532, a read-only root filesystem, no home. gunicorn
    writes nothing under $HOME (its control socket is off), so nothing is logged as an error."""
    cluster_file = Path(__file__).parents[2] / "extender" / "data" / "demo-cluster.yaml"
    home = cluster_file  # a file: no one, not even root, can make a directory in it
    port = free_port()
    env = {"HOME": str(home), "XDG_RUNTIME_DIR": ""}  # gunicorn would prefer XDG_RUNTIME_DIR
    ready = f"http://127.0.0.1:{port}/readyz"
    with Served(
        "--cluster-file", str(cluster_file), port=port, env=env, health_url=ready
    ) as served:
        assert get(ready)[0] == 200
    output = served.output()
    assert "ERROR" not in output and "Control server error" not in output, output


def test_bad_settings_stop_the_start_with_a_clear_message(tmp_path: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "extender",
            "serve",
            "--tls-cert",
            str(tmp_path / "missing.crt"),
            "--tls-key",
            str(tmp_path / "missing.key"),
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 2
    assert "--tls-cert" in result.stderr and "no such file" in result.stderr


@pytest.mark.parametrize(
    "flags,reason",
    [
        (["--cluster-file", "{tmp}/broken.yaml"], "cannot read cluster file"),
        (["--kubeconfig", "{tmp}/empty-kubeconfig"], "cannot start"),
    ],
    ids=["an unreadable cluster file", "a kubeconfig without a cluster"],
)
def test_a_view_that_cannot_be_loaded_stops_with_the_reason(
    tmp_path: Path, flags: list[str], reason: str
) -> None:
    (tmp_path / "broken.yaml").write_text("items: [unclosed")
    (tmp_path / "empty-kubeconfig").write_text("apiVersion: v1\nkind: Config\n")
    args = [f.format(tmp=tmp_path) for f in flags]
    result = subprocess.run(
        [sys.executable, "-m", "extender", "serve", "--bind", "127.0.0.1:0", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert reason in result.stderr
    assert "Traceback" not in result.stderr


def test_under_gunicorn_parked_gang_members_are_nudged_when_the_gang_completes(
    cluster: FakeApiServer, tmp_path: Path
) -> None:
    from tests.builders import gang_pods

    first, second = gang_pods("pair", 2, gpu=1)
    cluster.put("pods", first)
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", cluster.url)
    with Served("--kubeconfig", str(kubeconfig)) as served:
        deadline = time.monotonic() + 10
        while get(f"{served.base}/readyz")[0] != 200 and time.monotonic() < deadline:
            time.sleep(0.05)
        body = json.dumps({"Pod": first, "NodeNames": ["n1", "n2", "n3"], "Nodes": None})
        request = urllib.request.Request(f"{served.base}/scheduler/filter", data=body.encode())
        with urllib.request.urlopen(request, timeout=5) as response:
            answer = json.loads(response.read())
        assert answer["NodeNames"] == []
        assert "gang default/pair: 1 of 2 pods exist" in answer["FailedAndUnresolvableNodes"]["n1"]
        cluster.put("pods", second)
        deadline = time.monotonic() + 10
        while not cluster.state.patches and time.monotonic() < deadline:
            time.sleep(0.05)
    assert [(ns, name) for ns, name, _ in cluster.state.patches] == [("default", "pair-0")]
