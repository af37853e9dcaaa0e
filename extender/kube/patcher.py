"""Patching pods' annotations: the one write the kicker (`service/kicker.py`, a nudge so that
kube-scheduler retries a parked pod) and the plan recorder (`kube/plan_recorder.py`, a plan's
record) make on pods. `ApiPatcher` patches through the API server; `LogPatcher` is the demo's,
which has none to patch.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any, Protocol

from kubernetes.client.exceptions import ApiException

log = logging.getLogger("gangplank.kick")

RETRY_ANNOTATION = "gangplank.io/retry-at"


class Patcher(Protocol):
    def kick(self, namespace: str, name: str) -> None: ...

    def annotate(self, namespace: str, name: str, key: str, value: str) -> bool:
        """Set one annotation; False when the pod is gone; raises when the API server refuses
        or cannot be reached."""
        ...


class ApiPatcher:
    def __init__(self, core: Any) -> None:
        self._core = core

    def kick(self, namespace: str, name: str) -> None:
        stamp = datetime.now(UTC).isoformat(timespec="milliseconds")
        body = {"metadata": {"annotations": {RETRY_ANNOTATION: stamp}}}
        try:
            response = self._core.patch_namespaced_pod(
                name, namespace, body, _preload_content=False, _request_timeout=(2, 3)
            )
            response.drain_conn()  # an unread body would poison the pooled connection
            response.release_conn()
        except ApiException as err:
            if err.status != 404:  # a pod deleted meanwhile needs no retry
                log.warning("cannot nudge pod %s/%s: HTTP %s", namespace, name, err.status)
        except Exception as err:
            log.warning("cannot nudge pod %s/%s: %s", namespace, name, err)

    def annotate(self, namespace: str, name: str, key: str, value: str) -> bool:
        body = {"metadata": {"annotations": {key: value}}}
        try:
            response = self._core.patch_namespaced_pod(
                name, namespace, body, _preload_content=False, _request_timeout=(2, 3)
            )
            response.drain_conn()
            response.release_conn()
        except ApiException as err:
            if err.status == 404:
                return False
            raise
        return True


class LogPatcher:
    """Demo mode: no API server to patch."""

    def annotate(self, namespace: str, name: str, key: str, value: str) -> bool:
        return True  # the embedded view outlives nothing: there is no restart to record for

    def kick(self, namespace: str, name: str) -> None:
        log.info("demo: would nudge pod %s/%s to be retried", namespace, name)
