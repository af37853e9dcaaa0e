"""gangplank over HTTP with its real runtime, for the kube-scheduler stand-in
(`extender/sim/standin.py`: `KubeScheduler`, re-exported here) to drive the way kube-scheduler
v1.36 does.

gangplank runs with its real runtime: reflectors over the fake API server, ApiBinder, the kicker.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from collections.abc import Callable
from typing import Any

from kubernetes import client
from werkzeug.serving import WSGIRequestHandler, make_server

from extender.cache.store import ClusterStore
from extender.core.gangs.placer import GangConfig
from extender.core.queues.policy import Policy
from extender.kube.binder import ApiBinder
from extender.kube.events import ApiEventRecorder
from extender.kube.evictor import ApiEvictor
from extender.kube.leader import AlwaysLeader, LeaseLeadership
from extender.kube.patcher import ApiPatcher
from extender.kube.requeue_store import RequeueStore
from extender.kube.workloads import ApiSuspender
from extender.observe.metrics import Metrics
from extender.service.runtime import Runtime
from extender.service.watches import build_reflectors
from extender.sim import standin
from extender.sim.standin import Verbs
from extender.web.app import create_app
from tests.fakeapi import FakeApiServer

__all__ = ["REQUEUE_CONFIGMAP", "Extender", "KubeScheduler"]

REQUEUE_CONFIGMAP = ("gangplank", "gangplank-requeues")
HISTORY_CONFIGMAP = ("gangplank", "gangplank-usage-history")


class _QuietHandler(WSGIRequestHandler):
    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        pass


class Extender:
    """gangplank over HTTP on loopback, fed by `api`."""

    def __init__(
        self,
        api: FakeApiServer,
        config: GangConfig | None = None,
        *,
        policy: Policy | None = None,
        policy_path: str | None = None,
        stale_after: float = 30.0,
        identity: str | None = None,
        requeue_configmap: tuple[str, str] = REQUEUE_CONFIGMAP,
        clock: Callable[[], float] = time.time,
        bind_planned: bool = True,
    ) -> None:
        """`identity`: this replica's name beside its kube-scheduler; it leads while the
        scheduler's Lease (kube-system/gangplank-scheduler) is held by `<identity>_...`.
        None: always the leader. `requeue_configmap`: (namespace, name) of the ConfigMap that
        keeps requeue records (`--requeue-configmap`); the usage history is kept in
        gangplank/gangplank-usage-history. `clock`: the runtime's (a test moves it on).
        `bind_planned`: `--bind-planned-members`."""
        api_client = client.ApiClient(client.Configuration(host=api.url))
        bind_client = client.ApiClient(client.Configuration(host=api.url))
        self.store = ClusterStore()
        metrics = Metrics()
        evictor = ApiEvictor(
            client.CoreV1Api(bind_client), custom=client.CustomObjectsApi(bind_client)
        )
        self.runtime = Runtime(
            self.store,
            ApiBinder(client.CoreV1Api(bind_client)),
            metrics,
            build_reflectors(self.store, api_client, metrics),
            config=config,
            patcher=ApiPatcher(client.CoreV1Api(bind_client)),
            leadership=AlwaysLeader()
            if identity is None
            else LeaseLeadership(
                client.CoordinationV1Api(bind_client),
                "kube-system",
                "gangplank-scheduler",
                identity,
                cache_seconds=0.1,
            ),
            kick_interval=0.1,
            policy=policy,
            policy_path=policy_path,
            evictor=evictor,
            suspender=ApiSuspender(
                client.CoreV1Api(bind_client), client.CustomObjectsApi(bind_client), evictor
            ),
            events=ApiEventRecorder(client.CoreV1Api(bind_client)),
            stale_after=stale_after,
            requeue_store=RequeueStore(client.CoreV1Api(bind_client), *requeue_configmap),
            history_store=RequeueStore(
                client.CoreV1Api(bind_client),
                *HISTORY_CONFIGMAP,
                what="usage history",
                flag="--usage-history-configmap",
            ),
            clock=clock,
            bind_planned=bind_planned,
        )
        self.server = make_server(
            "127.0.0.1", 0, create_app(self.runtime), threaded=True, request_handler=_QuietHandler
        )
        self.port = self.server.server_port
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Extender:
        self.runtime.start()
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self.runtime.ready()[0]:
            assert time.monotonic() < deadline, self.runtime.ready()[1]
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.runtime.stop()

    def post(self, verb: str, body: dict[str, Any]) -> tuple[int, Any]:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            connection.request(
                "POST",
                f"/scheduler/{verb}",
                body=json.dumps(body),
                headers={"Content-Type": "application/json"},
            )
            response = connection.getresponse()
            return response.status, json.loads(response.read())
        finally:
            connection.close()

    def get(self, path: str) -> Any:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            connection.request("GET", path)
            return json.loads(connection.getresponse().read())
        finally:
            connection.close()

    def metrics(self) -> str:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        connection.request("GET", "/metrics")
        text = connection.getresponse().read().decode()
        connection.close()
        return text


class KubeScheduler(standin.KubeScheduler):
    """The stand-in over the tests' fake API server (which can also drop every connection)."""

    api: FakeApiServer

    def __init__(
        self, api: FakeApiServer, extender: Verbs, scheduler_name: str = "gangplank"
    ) -> None:
        super().__init__(api, extender, scheduler_name)
