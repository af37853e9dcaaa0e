"""Carrying out a bind: a Binding through the API server, or into the embedded demo view."""

from __future__ import annotations

import logging
from typing import Any, Protocol
from urllib.parse import quote

import orjson
import urllib3
from kubernetes.client.exceptions import ApiException

from extender.core.model.answers import BindRequest
from extender.core.model.snapshot import PodInfo
from extender.core.model.text import shorten

log = logging.getLogger("gangplank.bind")


class BindError(Exception):
    """The bind failed; the message is what kube-scheduler shows in the pod's events."""


class Binder(Protocol):
    def bind(self, request: BindRequest) -> None: ...


class ApiBinder:
    """POST pods/<name>/binding, with the pod's UID as precondition (as kube-scheduler does).

    Sent with the kubernetes client's own connection pool, headers and credentials (its
    `Configuration`: TLS, proxy, bearer token and its refresh), not through its generated
    `create_namespaced_pod_binding`: that call's argument validation, model objects and
    serialization cost more than the request itself (0.8 against 0.5 ms of CPU a bind, measured
    in docs/benchmarks.md), and every plain pod kube-scheduler schedules is bound here.
    """

    def __init__(self, core: Any, timeout: tuple[float, float] = (2.0, 4.0)) -> None:
        self._api = core.api_client
        config = self._api.configuration
        self._host: str = config.host
        self._safe: str = config.safe_chars_for_path_param
        self._timeout = urllib3.Timeout(connect=timeout[0], read=timeout[1])
        manager = self._api.rest_client.pool_manager
        # The API server's pool, found once (the manager would look it up on every call), and
        # the host's own path prefix; through an HTTP proxy, the manager sends each request.
        self._pool = None
        if not isinstance(manager, urllib3.ProxyManager):
            self._pool = manager.connection_from_url(self._host)
        self._prefix: str = urllib3.util.parse_url(self._host).path or ""

    def bind(self, request: BindRequest) -> None:
        path = (
            f"/api/v1/namespaces/{quote(request.namespace, safe=self._safe)}"
            f"/pods/{quote(request.name, safe=self._safe)}/binding"
        )
        metadata = {"name": request.name, "namespace": request.namespace}
        if request.uid:
            metadata["uid"] = request.uid
        target = {"kind": "Node", "apiVersion": "v1", "name": request.node}
        body = orjson.dumps(
            {"kind": "Binding", "apiVersion": "v1", "metadata": metadata, "target": target}
        )
        try:
            status, reason, answer = self._post(path, body)
        except (urllib3.exceptions.HTTPError, OSError) as err:  # kube-scheduler retries the pod
            raise BindError(
                f"binding pod {request.key} to node {request.node} failed: API server unreachable "
                f"({type(err).__name__}: {shorten(str(err), 200)})"
            ) from None
        except Exception as err:  # a fault of gangplank's, not the network's: with its traceback
            log.exception("binding pod %s to node %s", request.key, request.node)
            raise BindError(
                f"binding pod {request.key} to node {request.node} failed: gangplank internal "
                f"error ({type(err).__name__})"
            ) from None
        if status >= 300:
            raise BindError(
                f"binding pod {request.key} to node {request.node} failed: "
                f"HTTP {status}: {status_message(answer, reason)}"
            )

    def _post(self, path: str, body: bytes) -> tuple[int, str | None, bytes]:
        """(status, reason, body of an error answer)."""
        api = self._api
        # what the generated call sends: the client's default headers (its User-Agent), JSON,
        # and its credentials as they are now (a refreshed token included)
        headers: dict[str, str] = dict(api.default_headers)
        if api.cookie:
            headers["Cookie"] = api.cookie
        headers["Accept"] = headers["Content-Type"] = "application/json"
        # the generated call's one auth setting; `auth_settings()` runs the token's refresh hook
        # (its signature is the same in every client release pyproject allows, unlike
        # `ApiClient.update_params_for_auth`'s)
        token = api.configuration.auth_settings().get("BearerToken")
        if token and token.get("value"):
            headers[token["key"]] = token["value"]
        options = {"body": body, "headers": headers, "timeout": self._timeout}
        if self._pool is not None:
            response = self._pool.urlopen(
                "POST", self._prefix + path, preload_content=False, **options
            )
        else:
            response = api.rest_client.pool_manager.request(
                "POST", self._host + path, preload_content=False, **options
            )
        try:
            answer = response.read() if response.status >= 300 else b""
            response.drain_conn()  # an unread body would poison the pooled connection
        finally:
            response.release_conn()
        return response.status, response.reason, answer


class PodsByName(Protocol):
    """The demo's view of the pods (the cluster store)."""

    def pod_named(self, namespace: str, name: str) -> PodInfo | None: ...


class StoreBinder:
    """Demo mode: no API server; the binding is recorded in the embedded view only. Given the
    view, a bind the API server would refuse is refused as it would be (the pod not there, of
    another UID, or bound already), not answered done."""

    def __init__(self, store: PodsByName | None = None) -> None:
        self._store = store

    def bind(self, request: BindRequest) -> None:
        found = self._store.pod_named(request.namespace, request.name) if self._store else None
        refusal = None
        if self._store is not None and found is None:
            refusal = f'HTTP 404: pods "{request.name}" not found'
        elif found is not None and request.uid and found.uid != request.uid:
            refusal = (
                f"HTTP 409: Precondition failed: UID in precondition: {request.uid}, UID in "
                f"object meta: {found.uid}"
            )
        elif found is not None and found.node_name and found.node_name != request.node:
            refusal = (
                f'HTTP 409: pod {request.name} is already assigned to node "{found.node_name}"'
            )
        if refusal is not None:
            raise BindError(f"binding pod {request.key} to node {request.node} failed: {refusal}")
        log.info(
            "demo: bound %s to %s in the embedded cluster view (no API server)",
            request.key,
            request.node,
        )


def api_message(err: ApiException) -> str:
    """The API server's own words for a failed call (its Status message), else the HTTP reason."""
    return status_message(err.body, err.reason)


def status_message(body: bytes | str | None, reason: str | None) -> str:
    """The message of a Status body the API server answered with, else the HTTP reason."""
    try:
        status = orjson.loads(body or b"")
        if isinstance(status, dict) and isinstance(status.get("message"), str):
            return str(status["message"])
    except orjson.JSONDecodeError:
        pass
    return str(reason or "no reason given")
