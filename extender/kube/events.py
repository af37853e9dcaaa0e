"""Kubernetes Events on pods (and workloads), for the person running `kubectl describe`.

`post_pod_event` writes one Event (core/v1, as kube-scheduler's own FailedScheduling ones;
`post_event` on any object, such as a Job gangplank suspended);
`tell` picks the pods a notice of the core is told on (its job's, waiting ones first), and
`ApiEventRecorder` turns the notice into Events on them — the first few waiting members of a
gang, not thousands — rate-limited (a token bucket) so that a storm of state
changes cannot flood the API server; what the limit drops is counted and logged, never retried.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Protocol

from extender.core.model.notices import Notice
from extender.core.model.snapshot import PodInfo, Snapshot
from extender.core.model.text import shorten

log = logging.getLogger("gangplank.events")
PODS_PER_NOTICE = 8


def post_pod_event(
    core: Any,
    namespace: str,
    name: str,
    uid: str,
    reason: str,
    message: str,
    *,
    warning: bool = False,
    timeout: tuple[float, float] = (2.0, 4.0),
) -> bool:
    involved = {"apiVersion": "v1", "kind": "Pod", "name": name, "namespace": namespace}
    if uid:
        involved["uid"] = uid
    return post_event(core, involved, reason, message, warning=warning, timeout=timeout)


def post_event(
    core: Any,
    involved: Mapping[str, str],
    reason: str,
    message: str,
    *,
    warning: bool = False,
    timeout: tuple[float, float] = (2.0, 4.0),
) -> bool:
    """One Event on the object `involved` names (apiVersion, kind, namespace, name, uid if
    known): a pod, or a workload such as a Job (`kubectl describe job` shows it)."""
    now = datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")
    name, namespace = involved["name"], involved["namespace"]
    body = {
        "metadata": {"generateName": f"{name}.", "namespace": namespace},
        "involvedObject": dict(involved),
        "reason": reason,
        "message": shorten(message, 1024),  # the API refuses a longer one
        "type": "Warning" if warning else "Normal",
        "source": {"component": "gangplank"},
        "reportingComponent": "gangplank",
        "reportingInstance": os.environ.get("POD_NAME", "gangplank"),
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
    }
    try:
        response = core.create_namespaced_event(
            namespace, body, _preload_content=False, _request_timeout=timeout
        )
        response.drain_conn()
        response.release_conn()
        return True
    except Exception as err:  # an Event lost is no reason to stop
        log.warning("event on %s %s/%s not recorded: %s", involved["kind"], namespace, name, err)
        return False


class EventRecorder(Protocol):
    def record(self, notice: Notice, pods: Sequence[PodInfo]) -> int:
        """Tell `pods` of `notice`; returns how many Events were written."""
        ...


class LogEventRecorder:
    """No API server (a cluster file): the notices are logged."""

    def record(self, notice: Notice, pods: Sequence[PodInfo]) -> int:
        log.info("%s: %s", notice.reason, notice.message)
        return 0


class ApiEventRecorder:
    def __init__(
        self,
        core: Any,
        per_second: float = 5.0,
        burst: int = 50,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._core = core
        self._rate, self._burst, self._clock = per_second, burst, clock
        self._tokens = float(burst)
        self._last = clock()
        self.dropped = 0

    def _take(self) -> bool:
        now = self._clock()
        self._tokens = min(self._burst, self._tokens + (now - self._last) * self._rate)
        self._last = now
        if self._tokens >= 1:
            self._tokens -= 1
            return True
        self.dropped += 1
        return False

    def record(self, notice: Notice, pods: Sequence[PodInfo]) -> int:
        written = 0
        for pod in pods[:PODS_PER_NOTICE]:
            if not self._take():
                log.info("event rate limit: %s on %s not recorded", notice.reason, pod.key)
                continue
            written += post_pod_event(
                self._core,
                pod.namespace,
                pod.name,
                pod.uid,
                notice.reason,
                notice.message,
                warning=notice.warning,
            )
        return written


def tell(
    events: EventRecorder,
    notices: Iterable[Notice],
    snapshot: Snapshot,
    written: Callable[[int], None],
) -> None:
    """Events on the pods of each job a notice is about: its waiting pods first. `written` is
    told how many Events each notice gave."""
    for notice in notices:
        if notice.pod is not None:
            pods = [notice.pod]
        else:
            pods = [p for p in snapshot.groups.get(notice.job, ()) if p.active]
            pods.sort(key=lambda p: (p.node_name is not None, p.created, p.name))
        written(events.record(notice, pods))
