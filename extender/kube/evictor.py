"""Carrying out evictions: the Eviction API (PodDisruptionBudgets hold), and Events for people.

A victim job is evicted whole or not at all: every pod of it is first evicted as a dry run; if the
API server refuses any of them (a PodDisruptionBudget: HTTP 429), none is evicted for real and the
job keeps running. Each evicted pod gets an Event naming the preemptor and the rule, and the
preemptor gets one naming its victims (not a job evicted for itself, by a lifecycle rule or
because it fits nowhere: its "preemptor" is one of its own pods, told once already). The Event's
reason is the rule's (`EVICTED`: `NotReadyRequeued`, `StaleGangEvicted`, `MaxRuntimeExceeded`,
`IdleGpuEvicted`), `Preempted` for preemption, reclaim and recovery.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Protocol

from kubernetes.client.exceptions import ApiException

from extender.core.lifecycle.events import EVICTED
from extender.core.preemption.evictions import Eviction
from extender.core.preemption.shrinks import Shrink
from extender.kube.binder import api_message
from extender.kube.events import post_pod_event
from extender.kube.shrinker import shrink

log = logging.getLogger("gangplank.evict")


class Evictor(Protocol):
    def evict(self, job: Sequence[Eviction]) -> str:
        """Evict one victim job's pods (or, where they carry a shrink, lower their workload's
        size: shrunk); the outcome: evicted, blocked (a disruption budget refused), gone
        (already deleted) or failed."""
        ...

    def dry_run(self, pods: Sequence[tuple[str, str, str]], grace: int | None = None) -> str:
        """Every pod (namespace, name, uid) evicted as a dry run: "" when each may go, else
        blocked or failed."""
        ...

    def resize(self, change: Shrink, why: str) -> str:
        """Give a workload made smaller a member back (`regrow.py`): grown, gone or failed."""
        ...


class ApiEvictor:
    def __init__(
        self, core: Any, timeout: tuple[float, float] = (2.0, 4.0), custom: Any = None
    ) -> None:
        """`custom`: a CustomObjectsApi, to lower an elastic workload's size (None: its extras
        are evicted)."""
        self._core = core
        self._custom = custom
        self._timeout = timeout
        self._told: set[tuple[str, str, str]] = set()  # preemptor events sent (bounded below)

    def _eviction(
        self, namespace: str, name: str, uid: str, grace: int | None, dry_run: bool
    ) -> int:
        body: dict[str, Any] = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": namespace},
            "deleteOptions": {"preconditions": {"uid": uid}},
        }
        if grace is not None:
            body["deleteOptions"]["gracePeriodSeconds"] = grace
        kwargs: dict[str, Any] = {"_preload_content": False, "_request_timeout": self._timeout}
        if dry_run:
            kwargs["dry_run"] = "All"
        try:
            response = self._core.create_namespaced_pod_eviction(name, namespace, body, **kwargs)
            response.drain_conn()
            response.release_conn()
            return 201
        except ApiException as err:
            if err.status not in (404, 409):
                log.warning(
                    "eviction of pod %s/%s%s: HTTP %s: %s",
                    namespace,
                    name,
                    " (dry run)" if dry_run else "",
                    err.status,
                    api_message(err),
                )
            return int(err.status or 500)
        except Exception as err:
            log.warning("eviction of pod %s/%s: %s", namespace, name, err)
            return 503

    def dry_run(self, pods: Sequence[tuple[str, str, str]], grace: int | None = None) -> str:
        """Every pod evicted as a dry run: "" when each may go (or is gone already), "blocked"
        when a PodDisruptionBudget protects one (logged), "failed" on any other answer."""
        checks = [self._eviction(ns, name, uid, grace, dry_run=True) for ns, name, uid in pods]
        if any(code == 429 for code in checks):
            blocked = [p[1] for p, code in zip(pods, checks, strict=True) if code == 429]
            log.info(
                "not evicting %s: a PodDisruptionBudget protects %s; its job keeps running whole",
                ", ".join(p[1] for p in pods),
                ", ".join(blocked),
            )
            return "blocked"
        return "failed" if any(code not in (201, 404) for code in checks) else ""

    def evict(self, job: Sequence[Eviction]) -> str:
        grace = job[0].grace_seconds if job else None
        refused = self.dry_run([(e.namespace, e.name, e.uid) for e in job], grace)
        if refused:
            return refused
        through = job[0].shrink if job else None
        if through is not None and self._custom is not None:
            outcome = shrink(self._custom, self._core, through, job[0].message, self._timeout)
            if outcome == "shrunk":
                for e in job:
                    self._event(e.namespace, e.name, e.uid, "Preempted", e.message)
                self._tell(job[0], set())
            return outcome
        codes = [
            self._eviction(e.namespace, e.name, e.uid, e.grace_seconds, dry_run=False) for e in job
        ]
        own = {(e.namespace, e.name) for e in job}
        for e, code in zip(job, codes, strict=True):
            # 404: kube-scheduler's own preemption deleted it first, for the same plan.
            if code in (201, 404):
                self._event(e.namespace, e.name, e.uid, EVICTED.get(e.rule, "Preempted"), e.message)
                self._tell(e, own)
        if all(code == 404 for code in codes):
            return "gone"
        return "evicted" if all(code in (201, 404) for code in codes) else "failed"

    def resize(self, change: Shrink, why: str) -> str:
        if self._custom is None:
            return "failed"
        return shrink(self._custom, self._core, change, why, self._timeout)

    def _tell(self, e: Eviction, own: set[tuple[str, str]]) -> None:
        """The preemptor's Event naming its victims, once (not a job evicted for itself)."""
        key = (*e.preemptor, e.preemptor_message)
        if key not in self._told and e.preemptor not in own:
            if len(self._told) > 10_000:
                self._told.clear()
            self._told.add(key)
            self._event(e.preemptor[0], e.preemptor[1], "", "Preempting", e.preemptor_message)

    def _event(self, namespace: str, name: str, uid: str, reason: str, message: str) -> None:
        post_pod_event(
            self._core,
            namespace,
            name,
            uid,
            reason,
            message,
            warning=reason != "Preempting",
            timeout=self._timeout,
        )


class LogEvictor:
    """Demo mode: no API server; evictions are logged only."""

    def evict(self, job: Sequence[Eviction]) -> str:
        for e in job:
            log.info("demo: would evict pod %s/%s: %s", e.namespace, e.name, e.message)
        return "evicted"

    def dry_run(self, pods: Sequence[tuple[str, str, str]], grace: int | None = None) -> str:
        return ""

    def resize(self, change: Shrink, why: str) -> str:
        log.info("demo: would change %s from %d to %d", change.shown, change.current, change.to)
        return "grown"
