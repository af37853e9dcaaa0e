"""The in-flight ledger: what a queue has admitted that the cache does not count yet.

Between filter and bind an admitted pod is in nobody's usage: a single pod counts against its
queue for `IN_FLIGHT_SECONDS` (or until it binds or is asked about again), a gang's plan for as
long as it reserves (by the plan's queue). The ledger also keeps the admitted pods by uid, so a
bind can hand the pod to the cache before the watch delivers it (kube-scheduler is often faster
than the watch), and counts each job's admission once (for metrics).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from extender.core.model.keys import is_single, job_key
from extender.core.model.snapshot import PodInfo

IN_FLIGHT_SECONDS = 30.0  # an admitted pod counts against its queue this long before it binds
FORGET_SECONDS = 600.0  # admissions and admitted pods not bound are forgotten after this


@dataclass
class QueueOutcomes:
    """Counted since the adapter last looked (for metrics); drained by `take_outcomes`."""

    admitted: Counter[str] = field(default_factory=Counter)  # by queue
    refused: Counter[tuple[str, str]] = field(default_factory=Counter)  # by (queue, rule)
    waits: list[tuple[str, float]] = field(default_factory=list)  # (queue, seconds) on admission


class Ledger:
    def __init__(self) -> None:
        self._in_flight: dict[str, tuple[str, PodInfo, float]] = {}  # uid -> queue, pod, until
        self._plan_queues: dict[str, str] = {}  # job with a plan -> its queue
        self._pods: dict[str, tuple[PodInfo, float]] = {}  # admitted, not bound: uid -> pod
        self._admitted: dict[str, float] = {}  # job -> when (an admission counts once)
        self.outcomes = QueueOutcomes()

    def asked_again(self, uid: str) -> None:
        """The pod is filtered again: its last admission did not bind."""
        self._in_flight.pop(uid, None)

    def admit(self, key: str, pod: PodInfo, queue: str | None, now: float, planned: bool) -> None:
        """`pod` of job `key` passed: it is in flight until it binds (`queue`: None when the pod
        is planned already, its plan counts)."""
        self._pods[pod.uid] = (pod, now)
        if queue is None:
            return
        if is_single(key):
            self._in_flight[pod.uid] = (queue, pod, now + IN_FLIGHT_SECONDS)
        elif planned:
            self._plan_queues[key] = queue

    def count(self, key: str, queue: str, created: float, now: float) -> None:
        """Count job `key`'s admission, once, with how long it waited."""
        if key not in self._admitted:
            self._admitted[key] = now
            self.outcomes.admitted[queue] += 1
            self.outcomes.waits.append((queue, max(0.0, now - created)))

    def plan_queue(self, key: str, queue: str) -> None:
        """Job `key`'s plan counts against `queue`."""
        self._plan_queues[key] = queue

    def refused(self, queue: str, rule: str) -> None:
        self.outcomes.refused[(queue, rule)] += 1

    def bound(self, uid: str) -> PodInfo | None:
        """A pod was bound: no longer in flight; returns it if it was admitted here."""
        self._in_flight.pop(uid, None)
        found = self._pods.pop(uid, None)
        return found[0] if found is not None else None

    def reserved(
        self, plans: Mapping[str, Mapping[str, int]]
    ) -> tuple[dict[str, dict[str, int]], set[str]]:
        """(what is admitted and not bound, by queue: `plans`' amounts by their queue and the
        single pods in flight; the jobs that have such pods)."""
        reserved: dict[str, dict[str, int]] = {}
        for gang, amounts in plans.items():
            queue = self._plan_queues.get(gang)
            if queue is not None:
                _add(reserved.setdefault(queue, {}), amounts)
        busy = set(plans)
        for queue, pod, _ in self._in_flight.values():
            _add(reserved.setdefault(queue, {}), pod.requests)
            busy.add(job_key(pod))
        return reserved, busy

    def prune(self, now: float, plans: Collection[str]) -> None:
        for store in (self._admitted, self._pods):
            for key in [k for k, v in store.items() if _when(v) < now - FORGET_SECONDS]:
                del store[key]
        for uid in [u for u, (_, _, until) in self._in_flight.items() if until < now]:
            del self._in_flight[uid]
        for gang in [g for g in self._plan_queues if g not in plans]:
            del self._plan_queues[gang]

    def take_outcomes(self) -> QueueOutcomes:
        outcomes, self.outcomes = self.outcomes, QueueOutcomes()
        return outcomes


def _add(into: dict[str, int], amounts: Mapping[str, int]) -> None:
    for name, amount in amounts.items():
        into[name] = into.get(name, 0) + amount


def _when(value: tuple[PodInfo, float] | float) -> float:
    return float(value[1] if isinstance(value, tuple) else value)
