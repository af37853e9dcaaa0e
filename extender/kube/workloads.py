"""Suspending and resuming workloads (a Job, JobSet, PyTorchJob, RayJob...) for the lifecycle
rules' requeues, with an Event on the workload for `kubectl describe`.

A suspension keeps what an eviction guarantees: every pod of the job is evicted as a dry run
first (a PodDisruptionBudget that forbids one keeps the whole job running), then the workload's
suspend flag is set with a JSON merge patch (`core/lifecycle/workloads.py` says where it is for
each kind). The API server's refusal (403), a workload gone (404) or any other error is the
outcome the caller undoes the requeue for, and so is a patch the API server answered without
keeping the flag (a version of the kind that has no such field prunes it). The suspension also
annotates the workload `gangplank.io/suspended-for: <job>`: a resume reads the workload first and
clears the flag (and the annotation) only if gangplank's annotation is still there, at the
resourceVersion it read — a workload a person suspended, or one recreated under the same name,
is left as it is. Its controller recreates the pods at once.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Protocol

import orjson
from kubernetes.client.exceptions import ApiException

from extender.core.lifecycle.events import RESUMED
from extender.core.lifecycle.workloads import Resume, Suspension, Workload
from extender.kube.binder import api_message
from extender.kube.events import post_event
from extender.kube.evictor import ApiEvictor

log = logging.getLogger("gangplank.evict")
MERGE_PATCH = "application/merge-patch+json"
WARN_EVERY = 60.0  # seconds between warnings about one workload
SUSPENDED_FOR = "gangplank.io/suspended-for"  # on a workload gangplank suspended: its job key


class Suspender(Protocol):
    def suspend(self, suspension: Suspension) -> str:
        """Suspend the job's workload; the outcome: suspended, blocked (a disruption budget
        protects a pod), gone (no such workload) or failed."""
        ...

    def resume(self, resume: Resume) -> str:
        """Resume it; the outcome: resumed, gone, left (not suspended by gangplank: a person
        suspended it, or it was recreated) or failed."""
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
        self._warned: dict[Workload, float] = {}  # when each workload's last warning was logged

    def suspend(self, suspension: Suspension) -> str:
        refused = self._evictor.dry_run(suspension.pods)
        if refused:
            return refused
        workload = suspension.workload
        body = {
            **workload.patch(True),
            "metadata": {"annotations": {SUSPENDED_FOR: suspension.job}},
        }
        outcome, obj = self._patch(workload, "suspending", body, True)
        if outcome != "done":
            return outcome
        self._event(workload, _uid(obj), suspension.reason, suspension.message, True)
        return "suspended"

    def resume(self, resume: Resume) -> str:
        workload = resume.workload
        try:
            obj = self._read(workload)
        except ApiException as err:
            self._warn(
                workload, "resuming %s: HTTP %s: %s", workload.shown, err.status, api_message(err)
            )
            return "gone" if err.status == 404 else "failed"
        except Exception as err:  # connection refused or reset, timed out
            self._warn(workload, "resuming %s: %s", workload.shown, err)
            return "failed"
        found = obj.get("metadata")
        metadata: dict[str, Any] = found if isinstance(found, dict) else {}
        annotations = metadata.get("annotations") or {}
        if not isinstance(annotations, dict) or annotations.get(SUSPENDED_FOR) != resume.job:
            log.info(
                "not resuming %s: it does not carry gangplank's %s: %s (a person suspended "
                "it, or it was recreated); left as it is",
                workload.shown,
                SUSPENDED_FOR,
                resume.job.split(":", 1)[1],
            )
            return "left"
        body = {
            **workload.patch(False),
            "metadata": {
                "resourceVersion": metadata.get("resourceVersion"),
                "annotations": {SUSPENDED_FOR: None},
            },
        }
        outcome, obj = self._patch(workload, "resuming", body, False)
        if outcome != "done":
            return outcome
        self._event(workload, _uid(obj), RESUMED, resume.message, False)
        return "resumed"

    def _read(self, workload: Workload) -> dict[str, Any]:
        response = self._custom.get_namespaced_custom_object(
            workload.group,
            workload.version,
            workload.namespace,
            workload.plural,
            workload.name,
            _preload_content=False,
            _request_timeout=self._timeout,
        )
        try:
            obj = orjson.loads(response.data)
        finally:
            response.release_conn()
        return obj if isinstance(obj, dict) else {}

    def _patch(
        self, workload: Workload, doing: str, body: dict[str, Any], flag: bool
    ) -> tuple[str, dict[str, Any]]:
        """(done, gone or failed; the workload as the API server answered when done). A patch
        answered without the flag set as asked (a version of the kind without the field prunes
        it) failed: nothing was suspended or resumed."""
        try:
            response = self._custom.patch_namespaced_custom_object(
                workload.group,
                workload.version,
                workload.namespace,
                workload.plural,
                workload.name,
                body,
                _preload_content=False,
                _request_timeout=self._timeout,
                _content_type=MERGE_PATCH,
            )
        except ApiException as err:
            self._warn(
                workload, "%s %s: HTTP %s: %s", doing, workload.shown, err.status, api_message(err)
            )
            return ("gone" if err.status == 404 else "failed"), {}
        except Exception as err:  # connection refused or reset, timed out
            self._warn(workload, "%s %s: %s", doing, workload.shown, err)
            return "failed", {}
        try:
            obj = orjson.loads(response.data)
        except orjson.JSONDecodeError:
            obj = {}
        finally:
            response.release_conn()
        if not isinstance(obj, dict):
            obj = {}
        kept = workload.flag_in(obj)
        if kept is not flag:
            self._warn(
                workload,
                "%s %s: the API server did not keep %s: %s (this version of %s may have no "
                "such field); the job runs on",
                doing,
                workload.shown,
                ".".join(workload.field),
                kept,
                workload.kind,
            )
            return "failed", obj
        return "done", obj

    def _warn(self, workload: Workload, message: str, *args: object) -> None:
        """A warning, at most once a minute for one workload (a resume that keeps failing is
        tried every 5 s; its outcome is counted in gangplank_lifecycle_suspensions_total)."""
        now = time.monotonic()
        if now - self._warned.get(workload, -WARN_EVERY) < WARN_EVERY:
            return
        if len(self._warned) > 10_000:
            self._warned.clear()
        self._warned[workload] = now
        log.warning(message, *args)

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


def _uid(obj: dict[str, Any]) -> str:
    metadata = obj.get("metadata")
    uid = metadata.get("uid") if isinstance(metadata, dict) else None
    return uid if isinstance(uid, str) else ""


class LogSuspender:
    """Demo mode: no API server; suspensions and resumes are logged only."""

    def suspend(self, suspension: Suspension) -> str:
        log.info("demo: would suspend %s: %s", suspension.workload.shown, suspension.message)
        return "suspended"

    def resume(self, resume: Resume) -> str:
        log.info("demo: would resume %s: %s", resume.workload.shown, resume.message)
        return "resumed"
