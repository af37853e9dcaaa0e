"""Suspending and resuming workloads (a Job, JobSet, PyTorchJob, RayJob...) for the lifecycle
rules' requeues, with an Event on the workload for `kubectl describe`.

A suspension keeps what an eviction guarantees: every pod of the job is evicted as a dry run
first (a PodDisruptionBudget that forbids one keeps the whole job running), then the workload's
suspend flag is set with a JSON merge patch (`core/lifecycle/workloads.py` says where it is for
each kind). The API server's refusal (403), a workload gone (404) or any other error is the
outcome the caller undoes the requeue for. A resume sets the flag back to false; its controller
recreates the pods at once.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

import orjson
from kubernetes.client.exceptions import ApiException

from extender.core.lifecycle.lifecycle import RESUMED
from extender.core.lifecycle.workloads import Resume, Suspension, Workload
from extender.kube.binder import api_message
from extender.kube.events import post_event
from extender.kube.evictor import ApiEvictor

log = logging.getLogger("gangplank.evict")
MERGE_PATCH = "application/merge-patch+json"


class Suspender(Protocol):
    def suspend(self, suspension: Suspension) -> str:
        """Suspend the job's workload; the outcome: suspended, blocked (a disruption budget
        protects a pod), gone (no such workload) or failed."""
        ...

    def resume(self, resume: Resume) -> str:
        """Resume it; the outcome: resumed, gone or failed."""
        ...


class ApiSuspender:
    def __init__(
        self,
        core: Any,
        custom: Any,
        evictor: ApiEvictor,
        timeout: tuple[float, float] = (2.0, 5.0),
    ) -> None:
        """`core`: a CoreV1Api (Events); `custom`: a CustomObjectsApi, whose path
        (/apis/GROUP/VERSION/namespaces/NS/PLURAL/NAME) serves batch/v1 Jobs as well."""
        self._core = core
        self._custom = custom
        self._evictor = evictor
        self._timeout = timeout

    def suspend(self, suspension: Suspension) -> str:
        refused = self._evictor.dry_run(suspension.pods)
        if refused:
            return refused
        outcome, uid = self._patch(suspension.workload, True)
        if outcome != "done":
            return outcome
        self._event(suspension.workload, uid, suspension.reason, suspension.message, True)
        return "suspended"

    def resume(self, resume: Resume) -> str:
        outcome, uid = self._patch(resume.workload, False)
        if outcome != "done":
            return outcome
        self._event(resume.workload, uid, RESUMED, resume.message, False)
        return "resumed"

    def _patch(self, workload: Workload, suspend: bool) -> tuple[str, str]:
        """(done, gone or failed; the workload's uid when done)."""
        doing = "suspending" if suspend else "resuming"
        try:
            response = self._custom.patch_namespaced_custom_object(
                workload.group,
                workload.version,
                workload.namespace,
                workload.plural,
                workload.name,
                workload.patch(suspend),
                _preload_content=False,
                _request_timeout=self._timeout,
                _content_type=MERGE_PATCH,
            )
        except ApiException as err:
            log.warning("%s %s: HTTP %s: %s", doing, workload.shown, err.status, api_message(err))
            return ("gone" if err.status == 404 else "failed"), ""
        except Exception as err:  # connection refused or reset, timed out
            log.warning("%s %s: %s", doing, workload.shown, err)
            return "failed", ""
        try:
            obj = orjson.loads(response.data)
        except orjson.JSONDecodeError:
            obj = {}
        finally:
            response.release_conn()
        metadata = obj.get("metadata") if isinstance(obj, dict) else None
        uid = metadata.get("uid") if isinstance(metadata, dict) else None
        return "done", uid if isinstance(uid, str) else ""

    def _event(
        self, workload: Workload, uid: str, reason: str, message: str, warning: bool
    ) -> None:
        involved = {
            "apiVersion": workload.api_version,
            "kind": workload.kind,
            "namespace": workload.namespace,
            "name": workload.name,
            **({"uid": uid} if uid else {}),
        }
        post_event(self._core, involved, reason, message, warning=warning, timeout=self._timeout)


class LogSuspender:
    """Demo mode: no API server; suspensions and resumes are logged only."""

    def suspend(self, suspension: Suspension) -> str:
        log.info("demo: would suspend %s: %s", suspension.workload.shown, suspension.message)
        return "suspended"

    def resume(self, resume: Resume) -> str:
        log.info("demo: would resume %s: %s", resume.workload.shown, resume.message)
        return "resumed"
