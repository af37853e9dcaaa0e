"""The kube-scheduler model: which pod is tried when, and what a cycle does.

It behaves as tests/data/kube-scheduler/NOTES.md describes kube-scheduler v1.36:
- one pod at a time, highest priority then oldest first: its own resource and nodeSelector
  filter, then the extender's filter on the nodes left (`NodeNames`), prioritize when more than
  one node passes (the highest score wins, ties at random), then the extender's bind;
- the extender is not called when its own filter leaves no node;
- a pod rejected everywhere is parked and retried only on a cluster event (a pod created, a pod
  deleted, a node added) or when the pod itself is updated (gangplank's nudge); parked pods are
  flushed back after 5 minutes; every retry waits out its backoff (1 s doubling to 10 s);
- preemption after a failed cycle: on the nodes not failed as unresolvable, lower-priority pods
  whose removal makes room are candidates, the extender's preempt narrows them, the victims on
  the best node kept are deleted;
- a cycle takes `Options.cycle_seconds` of simulated time: a backlog drains at a pace, as on a
  real kube-scheduler, and a backlog of thousands is not tried again every 10 s.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Sequence

from extender.sim.fit import PODS
from extender.sim.runs import SimPod
from extender.sim.state import DriverState

BACKOFF_INITIAL = 1.0
BACKOFF_MAX = 10.0
# after the first try, the second, ...: doubling up to the most (then the most)
BACKOFF = tuple(
    itertools.takewhile(lambda d: d < BACKOFF_MAX, (BACKOFF_INITIAL * 2.0**i for i in range(64)))
)
MIN_CANDIDATES = 100  # kube-scheduler's minCandidateNodesAbsolute


class KubeSchedulerModel(DriverState):
    """The scheduling queue (active, backoff, parked) and the cycle, over the driver's state."""

    def _activate(self, pod: SimPod) -> None:
        """A parked pod moves on: to the active queue, or the backoff queue until its backoff
        has passed."""
        if self.parked.pop(pod.uid, None) is None:
            return
        pod.parked_at = None
        ready = self._backoff_until(pod)
        if ready > self.now:
            pod.in_backoff = True
            heapq.heappush(self._backoff, (ready, next(self._seq), pod))
        else:
            self._enqueue(pod)

    def _backoff_until(self, pod: SimPod) -> float:
        if pod.attempts == 0:
            return self.now
        if pod.attempts > len(BACKOFF):
            return pod.last_try + BACKOFF_MAX
        return pod.last_try + BACKOFF[pod.attempts - 1]

    def _requeue_parked(self) -> None:
        for pod in list(self.parked.values()):
            self._activate(pod)

    def _park(self, pod: SimPod, reason: str) -> None:
        pod.parked_at = self.now
        self.parked[pod.uid] = pod
        if reason:
            self.reasons[pod.run.record.spec.name] = reason

    def _schedule(self) -> None:
        while self._backoff and self._backoff[0][0] <= self.now:
            _, _, pod = heapq.heappop(self._backoff)
            pod.in_backoff = False
            if pod.uid in self.pending and pod.uid not in self.parked:
                self._enqueue(pod)
        seen: set[str] = set()
        cycle = self.options.cycle_seconds
        while self._active:
            if self._free_at > self.now:
                # the next cycle starts later: go on here while nothing else happens before it
                # (the event loop would come back to this very point), else return to the loop
                t = self._free_at
                if t >= self._next_wake() or self._ends_before(t):
                    return
                self.now = t
            _, _, _, pod = heapq.heappop(self._active)
            if pod.uid not in self.pending or pod.uid in seen or pod.uid in self.parked:
                continue
            if not cycle:
                seen.add(pod.uid)  # with cycles taking no time, once each at one instant
            self._cycle(pod)
            self._free_at = self.now + cycle  # the next pod's cycle starts then

    def _cycle(self, pod: SimPod) -> None:
        self.cycles += 1
        pod.attempts += 1
        pod.last_try = self.now
        held = self._held_node(pod)  # a move placed it: that node alone
        feasible = held if held is not None else self.fit.nodes_for(pod.info)
        if not feasible:
            # its queue refusing it too, more room alone would not start it: that is the cause
            cause = "quota" if self.extender.queue_refuses(pod) else "room"
            self._waits(pod, cause)
            if cause == "room" and self._moved_for(pod):
                return  # consolidation comes before preemption
            if not self._preempt(pod, None):
                self._park(pod, "")
            return
        self.extender_calls["filter"] += 1
        filtered = self.extender.filter(pod, feasible, self.now)
        if not filtered.passed:
            cause = self._cause(pod, filtered.kind, feasible)
            self._waits(pod, cause)
            if cause == "room" and self._moved_for(pod):
                return
            resolvable = [n for n in feasible if n not in filtered.unresolvable]
            if not (resolvable and self._preempt(pod, resolvable)):
                self._park(pod, filtered.reason())
            return
        node = filtered.passed[0]
        if len(filtered.passed) > 1:
            self.extender_calls["prioritize"] += 1
            scores = self.extender.prioritize(pod, filtered.passed, self.now)
            best = max(scores.get(n, 0) for n in filtered.passed)
            top = [n for n in filtered.passed if scores.get(n, 0) == best]
            node = top[0] if len(top) == 1 else self.rng.choice(top)
        self.extender_calls["bind"] += 1
        error = self.extender.bind(pod, node, self.now)
        if error:
            self.reasons[pod.run.record.spec.name] = error
            ready = self._backoff_until(pod)
            pod.in_backoff = True
            heapq.heappush(self._backoff, (ready, next(self._seq), pod))
            return
        self._bound(pod, node)

    def _moved_for(self, pod: SimPod) -> bool:
        """Whether jobs moved to make room for `pod` (`moves.py`): it is tried again after its
        backoff, and so are the parked pods (pods were deleted and created)."""
        if not self._consolidate(pod):
            return False
        self._park(pod, "")
        self._requeue_parked()
        return True

    def _waits(self, pod: SimPod, cause: str) -> None:
        if cause == "room" and self.allocated_at_first_no_room is None:
            self.allocated_at_first_no_room = round(self._allocated / (self.capacity_gpus or 1), 3)
        run = pod.run
        if run.bound and run.started is None:
            cause = "gang"  # some members hold their nodes: the job waits for the others
        run.record.note(cause, self.now)

    def _cause(self, pod: SimPod, kind: str, feasible: Sequence[str]) -> str:
        """What a pod the extender refused waits for: its kind of refusal; for capacity held for
        others, "hold" only when the job's pods not bound yet would fit in what is free."""
        if kind in ("quota", "gang"):
            return kind
        if kind != "held":
            return "room"
        want = {r: a for r, a in pod.requests.items() if a > 0}
        needed = sum(1 for p in pod.run.pods if p.node is None)
        room = 0
        for name in feasible:
            free = self.free[name]
            room += min(free.get(PODS, 0), *(free.get(r, 0) // a for r, a in want.items()))
            if room >= needed:
                return "hold"
        return "room"

    def _preempt(self, pod: SimPod, names: Sequence[str] | None) -> bool:
        priority = pod.info.priority
        if not self._bound_priorities or min(self._bound_priorities) >= priority:
            return False
        want = {r: a for r, a in pod.requests.items() if a > 0}
        selector = pod.info.node_selector
        limit = max(MIN_CANDIDATES, len(self.nodes) // 10)
        candidates: dict[str, list[SimPod]] = {}
        for name in names if names is not None else self.nodes:
            node = self.nodes[name]
            if selector and any(node.labels.get(k) != v for k, v in selector.items()):
                continue
            lower = sorted(
                (p for p in self.on_node[name].values() if p.info.priority < priority),
                key=lambda p: (p.info.priority, -p.info.created),
            )
            if not lower:
                continue
            free = dict(self.free[name])
            victims = []
            for victim in lower:
                if all(free.get(r, 0) >= a for r, a in want.items()) and free.get(PODS, 0) >= 1:
                    break
                victims.append(victim)
                for r, a in victim.requests.items():
                    free[r] = free.get(r, 0) + a
                free[PODS] = free.get(PODS, 0) + 1
            if all(free.get(r, 0) >= a for r, a in want.items()):
                candidates[name] = victims
                if len(candidates) >= limit:
                    break
        if not candidates:
            return False
        self.extender_calls["preempt"] += 1
        kept = self.extender.preempt(pod, candidates, self.now)
        if not kept:
            return False
        by_uid = {p.uid: p for victims in candidates.values() for p in victims}
        chosen = min(
            kept,
            key=lambda n: (
                max((by_uid[u].info.priority for u in kept[n] if u in by_uid), default=-(2**31)),
                len(kept[n]),
                n,
            ),
        )
        by_run: dict[int, list[SimPod]] = {}
        for uid in kept[chosen]:
            found = by_uid.get(uid)
            if found is not None:
                by_run.setdefault(id(found.run), []).append(found)
        for pods in by_run.values():
            self._take(pods[0].run, pods, f"preempted for {pod.run.record.spec.name}")
        self._requeue_parked()
        self._enqueue(pod)
        return True
