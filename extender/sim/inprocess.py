"""gangplank in the simulator: its cache and decision core called directly, in simulated time.

What the HTTP routes and the runtime's periodic pass do, minus HTTP and threads: the same
`ClusterStore` (fed by the driver, as the watch would), the same `Engine` and its verbs,
the periodic pass (`kick_candidates`, evictions, the mix placement learns every minute).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Sequence
from typing import Any

from extender.cache.store import ClusterStore
from extender.core.engine import Engine
from extender.core.gangs.placer import GangConfig
from extender.core.model.answers import BindRequest, Victims
from extender.core.model.keys import job_key
from extender.core.model.rejection import Rejection
from extender.core.placement.scoring import mix_of
from extender.core.queues.policy import Policy
from extender.kube.convert import node_from_api
from extender.sim.driver import Filtered, SimPod, Tick
from extender.sim.workload import EPOCH

LEARN_SECONDS = 60.0


class InProcess:
    name = "gangplank"

    def __init__(self, policy: Policy | None, config: GangConfig | None = None) -> None:
        self.now = EPOCH
        self.store = ClusterStore(clock=lambda: self.now)
        self.engine = Engine(config or GangConfig(), policy)
        self.notices: Counter[str] = Counter()
        self._uids: dict[tuple[str, str], str] = {}
        self._learned_at = float("-inf")

    def _at(self, now: float) -> float:
        self.now = EPOCH + now
        return self.now

    def start(self, nodes: Sequence[dict[str, Any]]) -> None:
        self.store.replace_nodes(node_from_api(n) for n in nodes)

    def stop(self) -> None:
        pass

    def created(self, pods: Sequence[SimPod], now: float) -> None:
        for pod in pods:
            self.store.upsert_pod(pod.info)
            self._uids[(pod.info.namespace, pod.info.name)] = pod.uid

    def deleted(self, pods: Sequence[SimPod], now: float) -> None:
        for pod in pods:
            self.store.delete_pod(pod.info)
            self._uids.pop((pod.info.namespace, pod.info.name), None)

    def filter(self, pod: SimPod, names: list[str], now: float) -> Filtered:
        result = self.engine.filter(self.store.snapshot(), pod.info, names, self._at(now))
        kind = "" if result.passed else self._refusal(pod)
        return Filtered(result.passed, result.failed, result.unresolvable, kind)

    def queue_refuses(self, pod: SimPod) -> bool:
        return self.engine.waiting.is_refused(job_key(pod.info))

    def _refusal(self, pod: SimPod) -> str:
        """What the core refused the pod for (see `Filtered.kind`), from its own records: the
        job refused by its queue, the gang's rejection kind, capacity held for other jobs."""
        if self.queue_refuses(pod):
            return "quota"
        key = job_key(pod.info)
        engine = self.engine
        if engine.waiting.parked_kind(key, pod.uid) in (Rejection.INCOMPLETE, Rejection.INVALID):
            return "gang"
        hold = engine.holder.current
        if (hold is not None and hold.key != key) or any(
            k != key for k in engine.reservations.jobs()
        ):
            return "held"
        return ""

    def prioritize(self, pod: SimPod, names: list[str], now: float) -> dict[str, int]:
        scores = self.engine.scores(self.store.snapshot(), pod.info, names)
        return scores.table(names)

    def preempt(
        self, pod: SimPod, candidates: dict[str, list[SimPod]], now: float
    ) -> dict[str, list[str]]:
        asked = {n: Victims(tuple(p.uid for p in pods)) for n, pods in candidates.items()}
        kept = self.engine.preempt(self.store.snapshot(), pod.info, asked, self._at(now))
        return {n: list(v.uids) for n, v in kept.items()}

    def bind(self, pod: SimPod, node: str, now: float) -> str:
        info = pod.info
        request = BindRequest(info.namespace, info.name, info.uid, node)
        decision = self.engine.check_bind(request)
        if not decision.allowed:
            return decision.reason
        self.engine.bound(request)
        at = self._at(now)
        self.store.upsert_pod(
            dataclasses.replace(info, node_name=node, phase="Running", started=at)
        )
        return ""

    def tick(self, now: float) -> Tick:
        at = self._at(now)
        if at - self._learned_at >= LEARN_SECONDS:
            self._learned_at = at
            mix = mix_of(self.store.snapshot())
            if mix is not None:
                self.engine.scorer.learn(mix)
        refs = self.engine.kick_candidates(self.store.snapshot(), at)
        evictions = self.engine.preemption.take_evictions()
        for notice in self.engine.take_notices():
            self.notices[notice.reason] += 1
        # drained as the runtime's publish does (they would grow otherwise)
        self.engine.take_outcomes()
        self.engine.ledger.take_outcomes()
        self.engine.preemption.take_outcomes()
        nudged = [u for ref in refs if (u := self._uids.get(ref)) is not None]
        return Tick(nudged, [e.uid for e in evictions])
