"""gangplank in the simulator: its cache and decision core called directly, in simulated time.

What the HTTP routes and the runtime's periodic pass do, minus HTTP and threads: the same
`ClusterStore` (fed by the driver, as the watch would), the same `Engine` and its verbs,
the periodic pass (`kick_candidates`, evictions, the mix placement learns every minute).
With a policy whose lifecycle rules measure idle GPUs, the pass is given what dcgm-exporter
would report of the simulated pods (`GpuUse`: each pod's busiest GPU over its queue's window).
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
from extender.core.model.gpu_use import GpuUse
from extender.core.model.keys import job_key
from extender.core.model.rejection import Rejection
from extender.core.model.snapshot import PodInfo
from extender.core.placement.scoring import mix_of
from extender.core.queues.gate import queue_of
from extender.core.queues.policy import Policy
from extender.kube.convert import node_from_api
from extender.sim.calls import Filtered, Tick
from extender.sim.runs import SimPod
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
        self.policy = policy
        # Running jobs are looked at each pass (the driver asks every pass) when the policy
        # has lifecycle rules anywhere.
        self.watches_running = policy is not None and any(
            policy.lifecycle_of(q) is not None for q in (None, *policy.queues)
        )
        # The engine samples queues' use into its usage history each pass (`fairness:`).
        self.samples_usage = policy is not None and policy.fairness.on
        # GPU use goes to an engine that takes it (`kick_candidates(..., use=)`).
        self._bound: dict[str, tuple[SimPod, PodInfo, float]] = {}  # uid -> pod, info, window

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
            self._bound.pop(pod.uid, None)

    def updated(self, pods: Sequence[SimPod], now: float) -> None:
        for pod in pods:
            found = self._bound.get(pod.uid)
            if found is None:
                continue
            info = dataclasses.replace(
                found[1],
                phase=pod.phase,
                ready=pod.ready,
                waiting_reason=pod.waiting_reason,
                restarts=pod.restarts,
            )
            self._bound[pod.uid] = (pod, info, found[2])
            self.store.upsert_pod(info)

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
        bound = dataclasses.replace(
            info,
            node_name=node,
            phase=pod.phase,
            started=at,
            ready=pod.ready,
            waiting_reason=pod.waiting_reason,
        )
        self._bound[pod.uid] = (pod, bound, self._idle_window(bound))
        self.store.upsert_pod(bound)
        return ""

    def _idle_window(self, pod: PodInfo) -> float:
        """The window of the idle-GPU rule of the pod's queue (0: no such rule)."""
        if not self.watches_running:
            return 0.0
        assert self.policy is not None
        rules = self.policy.lifecycle_of(queue_of(self.policy, pod)[0])
        return rules.idle_gpu.window if rules is not None and rules.idle_gpu is not None else 0.0

    def gpu_use(self, now: float) -> GpuUse | None:
        """What dcgm-exporter would show of the bound pods that an idle-GPU rule watches: each
        pod's busiest GPU over its queue's window, for those whose data covers all of it (None:
        no pod is watched). `window` is the longest of those windows."""
        busiest: dict[tuple[str, str], float] = {}
        longest = 0.0
        for pod, info, window in self._bound.values():
            if window:
                longest = max(longest, window)
                found = pod.run.busiest(pod, now - window)
                if found is not None:
                    busiest[(info.namespace, info.name)] = found
        return GpuUse(busiest, window=longest) if longest else None

    def _kick(self, at: float, now: float) -> list[tuple[str, str]]:
        snapshot = self.store.snapshot()
        use = self.gpu_use(now) if self.watches_running else None
        return self.engine.kick_candidates(snapshot, at, use=use)

    def tick(self, now: float) -> Tick:
        at = self._at(now)
        if at - self._learned_at >= LEARN_SECONDS:
            self._learned_at = at
            mix = mix_of(self.store.snapshot())
            if mix is not None:
                self.engine.scorer.learn(mix)
        refs = self._kick(at, now)
        evictions = self.engine.preemption.take_evictions()
        for notice in self.engine.take_notices():
            self.notices[notice.reason] += 1
        # drained as the runtime's publish does (they would grow otherwise)
        self.engine.take_outcomes()
        self.engine.ledger.take_outcomes()
        self.engine.preemption.take_outcomes()
        nudged = [u for ref in refs if (u := self._uids.get(ref)) is not None]
        return Tick(nudged, [e.uid for e in evictions], {e.uid: e.rule for e in evictions})
