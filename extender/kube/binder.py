"""Carrying out a bind: a Binding through the API server, or into the embedded demo view."""

from __future__ import annotations

import logging
from typing import Any, Protocol

import orjson
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from extender.core.model.answers import BindRequest
from extender.core.model.text import shorten

log = logging.getLogger("gangplank.bind")


class BindError(Exception):
    """The bind failed; the message is what kube-scheduler shows in the pod's events."""


class Binder(Protocol):
    def bind(self, request: BindRequest) -> None: ...


class ApiBinder:
    """POST pods/<name>/binding, with the pod's UID as precondition (as kube-scheduler does)."""

    def __init__(self, core: Any, timeout: tuple[float, float] = (2.0, 4.0)) -> None:
        self._core = core
        self._timeout = timeout

    def bind(self, request: BindRequest) -> None:
        body = client.V1Binding(
            metadata=client.V1ObjectMeta(
                name=request.name, namespace=request.namespace, uid=request.uid or None
            ),
            target=client.V1ObjectReference(kind="Node", api_version="v1", name=request.node),
        )
        try:
            response = self._core.create_namespaced_pod_binding(
                request.name,
                request.namespace,
                body,
                _preload_content=False,
                _request_timeout=self._timeout,
            )
            response.drain_conn()  # an unread body would poison the pooled connection
            response.release_conn()
        except ApiException as err:
            raise BindError(
                f"binding pod {request.key} to node {request.node} failed: "
                f"HTTP {err.status}: {api_message(err)}"
            ) from None
        except Exception as err:  # network faults: kube-scheduler will retry the pod
            raise BindError(
                f"binding pod {request.key} to node {request.node} failed: API server unreachable "
                f"({type(err).__name__}: {shorten(str(err), 200)})"
            ) from None


class StoreBinder:
    """Demo mode: no API server; the binding is recorded in the embedded view only."""

    def bind(self, request: BindRequest) -> None:
        log.info(
            "demo: bound %s to %s in the embedded cluster view (no API server)",
            request.key,
            request.node,
        )


def api_message(err: ApiException) -> str:
    """The API server's own words for a failed call (its Status message), else the HTTP reason."""
    try:
        body = orjson.loads(err.body or b"")
        if isinstance(body, dict) and isinstance(body.get("message"), str):
            return str(body["message"])
    except orjson.JSONDecodeError:
        pass
    return str(err.reason or "no reason given")
