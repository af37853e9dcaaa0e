"""A small kube-scheduler that drives an extender over HTTP the way kube-scheduler v1.36 does,
against the fake API server (`apiserver.py`): the tests' stand-in (tests/scheduler_sim.py runs it
against gangplank with its real runtime) and `loadtest/gang_start.py`'s, against `gangplank serve`.

Modelled on what was observed of the real one (tests/data/kube-scheduler/NOTES.md):
- one pod at a time: its own resource and nodeSelector filter, then the extender's filter with
  `NodeNames` (nodeCacheCapable), prioritize when more than one node is left, then bind;
- the extender is not called when its own filter leaves no node;
- a pod rejected on every node is parked and retried only on a cluster event (a pod created, a
  pod deleted, a node added) or when the parked pod itself is updated — never on a timer;
- a failed filter or bind is retried after a short backoff;
- preemption (PostFilter) after a failed cycle: on the nodes its own filters rejected and those the
  extender failed as resolvable (never `FailedAndUnresolvableNodes`), the lower-priority pods whose
  removal makes room are candidates; the extender's preempt verb narrows them; the victims on the
  first node kept are deleted and the pod waits for the deletion event, nominated to that node:
  until it binds, pods of lower or equal priority are filtered as if it ran there.
(`kube_scheduler.py` is the simulator's model of the same, in simulated time.)
"""

from __future__ import annotations

import collections
import contextlib
import time
from collections.abc import Callable
from typing import Any, Protocol

from extender.kube.convert import pod_requests, resource_list
from extender.sim.apiserver import FakeApiServer


class Verbs(Protocol):
    """The extender as kube-scheduler calls it: a verb and its body, the status and answer."""

    def post(self, verb: str, body: dict[str, Any]) -> tuple[int, Any]: ...


def _key(pod: dict[str, Any]) -> str:
    return f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"


class KubeScheduler:
    def __init__(
        self, api: FakeApiServer, extender: Verbs, scheduler_name: str = "gangplank"
    ) -> None:
        self.api = api
        self.extender = extender
        self.scheduler_name = scheduler_name
        self.queue: collections.deque[str] = collections.deque()
        self.parked: dict[str, str] = {}  # pod key -> last reason
        self.backoff: dict[str, float] = {}
        self._seen = {"pods": 0, "nodes": 0}
        self._annotations: dict[str, Any] = {}
        self.reasons: dict[str, str] = {}
        self.cycles = 0
        self.preemptions: list[tuple[str, str, list[str]]] = []  # pod, node, victims
        # pods that preempted: key -> (nominated node, priority, requests), until they bind
        self.nominated: dict[str, tuple[str, int, dict[str, int]]] = {}

    # ---- events ----------------------------------
    def _observe(self) -> bool:
        with self.api.cond:
            pods = self.api.state.events["pods"][self._seen["pods"] :]
            nodes = self.api.state.events["nodes"][self._seen["nodes"] :]
            self._seen["pods"] += len(pods)
            self._seen["nodes"] += len(nodes)
        cluster_event = any(e.type == "ADDED" for e in nodes)
        for event in pods:
            key = _key(event.obj)
            ours = event.obj["spec"].get("schedulerName") == self.scheduler_name
            if event.type == "ADDED":
                cluster_event = True
                if ours and not event.obj["spec"].get("nodeName"):
                    self.queue.append(key)
            elif event.type == "DELETED":
                cluster_event = True
                self.parked.pop(key, None)
            elif key in self.parked:
                annotations = event.obj["metadata"].get("annotations") or {}
                if annotations != self._annotations.get(key):
                    self._annotations[key] = annotations
                    del self.parked[key]
                    self.queue.append(key)  # the parked pod itself was updated
        if cluster_event and self.parked:
            self.queue.extend(self.parked)
            self.parked.clear()
        return bool(pods or nodes)

    # ---- one scheduling cycle ----------------------------------
    def _fits(self, pod: dict[str, Any]) -> list[str]:
        with self.api.cond:
            nodes = list(self.api.state.objects["nodes"].values())
            pods = list(self.api.state.objects["pods"].values())
        used: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
        waiting = set()
        for other in pods:
            node_name = other["spec"].get("nodeName")
            if node_name and other["status"].get("phase") not in ("Succeeded", "Failed"):
                used[node_name].update(pod_requests(other["spec"]))
            elif not node_name:
                waiting.add(_key(other))
        # A pod that preempted holds its nominated node against pods of lower or equal
        # priority until it binds (kube-scheduler's filters run with the nominated pods added).
        priority = pod["spec"].get("priority") or 0
        for key, (node_name, at, requests) in self.nominated.items():
            if key != _key(pod) and key in waiting and at >= priority:
                used[node_name].update(requests)
        want = pod_requests(pod["spec"])
        selector = pod["spec"].get("nodeSelector") or {}
        feasible = []
        for node in nodes:
            name = node["metadata"]["name"]
            labels = node["metadata"].get("labels") or {}
            if any(labels.get(k) != v for k, v in selector.items()):
                continue
            allocatable = resource_list(node["status"]["allocatable"], "allocatable")
            if all(used[name][r] + a <= allocatable.get(r, 0) for r, a in want.items() if a):
                feasible.append(name)
        return sorted(feasible)

    def _node_names(self) -> list[str]:
        with self.api.cond:
            return sorted(n["metadata"]["name"] for n in self.api.state.objects["nodes"].values())

    def _preempt(self, pod: dict[str, Any], nodes: list[str]) -> None:
        priority = pod["spec"].get("priority") or 0
        want = pod_requests(pod["spec"])
        with self.api.cond:
            all_nodes = {n["metadata"]["name"]: n for n in self.api.state.objects["nodes"].values()}
            pods = list(self.api.state.objects["pods"].values())
        candidates: dict[str, Any] = {}
        for name in nodes:
            node = all_nodes.get(name)
            if node is None:
                continue
            allocatable = resource_list(node["status"]["allocatable"], "allocatable")
            here = [
                p
                for p in pods
                if p["spec"].get("nodeName") == name
                and p["status"].get("phase") not in ("Succeeded", "Failed")
            ]
            used: collections.Counter[str] = collections.Counter()
            for other in here:
                used.update(pod_requests(other["spec"]))
            lower = [p for p in here if (p["spec"].get("priority") or 0) < priority]
            for victim in lower:
                used.subtract(pod_requests(victim["spec"]))
            if lower and all(used[r] + a <= allocatable.get(r, 0) for r, a in want.items() if a):
                violations = sum(
                    1
                    for v in lower
                    for ns, selector in self.api.state.budgets
                    if ns == v["metadata"]["namespace"]
                    and all(
                        (v["metadata"].get("labels") or {}).get(k) == val
                        for k, val in selector.items()
                    )
                )
                candidates[name] = {
                    "Pods": [{"UID": v["metadata"]["uid"]} for v in lower],
                    "NumPDBViolations": violations,
                }
        if not candidates:
            return
        status, answer = self.extender.post(
            "preempt",
            {"Pod": pod, "NodeNameToVictims": None, "NodeNameToMetaVictims": candidates},
        )
        kept = answer.get("NodeNameToMetaVictims") or {} if status == 200 else {}
        if not kept:
            return
        node_name = sorted(kept)[0]
        uids = {v["UID"] for v in kept[node_name]["Pods"]}
        for victim in pods:
            if victim["metadata"]["uid"] in uids:
                with contextlib.suppress(KeyError):
                    self.api.delete(
                        "pods", victim["metadata"]["namespace"], victim["metadata"]["name"]
                    )
        self.preemptions.append((_key(pod), node_name, sorted(uids)))
        self.nominated[_key(pod)] = (node_name, priority, want)

    def _park(self, key: str, reason: str, pod: dict[str, Any]) -> None:
        self.parked[key] = reason
        self.reasons[key] = reason
        self._annotations[key] = pod["metadata"].get("annotations") or {}

    def schedule_one(self, key: str) -> None:
        self.cycles += 1
        namespace, name = key.split("/", 1)
        with self.api.cond:
            pod = self.api.state.objects["pods"].get(key)
        if pod is None or pod["spec"].get("nodeName"):
            return
        feasible = self._fits(pod)
        if not feasible:
            self._park(key, "0 nodes fit (kube-scheduler's own filters)", pod)
            self._preempt(pod, self._node_names())
            return
        status, answer = self.extender.post(
            "filter", {"Pod": pod, "Nodes": None, "NodeNames": feasible}
        )
        if status != 200 or answer.get("Error"):
            self.backoff[key] = time.monotonic() + 0.2
            return
        kept = answer["NodeNames"]
        if not kept:
            reasons = {**answer["FailedNodes"], **answer["FailedAndUnresolvableNodes"]}
            self._park(key, sorted(set(reasons.values()))[0] if reasons else "no reason", pod)
            unfit = set(self._node_names()) - set(feasible)
            self._preempt(pod, sorted(unfit | set(answer["FailedNodes"])))
            return
        chosen = kept[0]
        if len(kept) > 1:
            status, scores = self.extender.post(
                "prioritize", {"Pod": pod, "Nodes": None, "NodeNames": kept}
            )
            if status == 200:
                best = max(s["Score"] for s in scores)
                chosen = next(s["Host"] for s in scores if s["Score"] == best)
        status, answer = self.extender.post(
            "bind",
            {
                "PodName": name,
                "PodNamespace": namespace,
                "PodUID": pod["metadata"]["uid"],
                "Node": chosen,
            },
        )
        if status != 200 or answer.get("Error"):
            self.reasons[key] = answer.get("Error", f"HTTP {status}")
            self.backoff[key] = time.monotonic() + 0.2

    # ---- driving ----------------------------------
    def settle(
        self, idle: float = 1.5, timeout: float = 60.0, until: Callable[[], bool] | None = None
    ) -> None:
        """Schedule until nothing happens for `idle` seconds, or, given `until`, until it holds.

        With `until` the quiet spells do not end the wait (a reclaim pass or a nudge can come
        seconds later on a loaded machine); at `timeout` it returns and the caller's assertion
        says what is missing.
        """
        deadline = time.monotonic() + timeout
        quiet_since = time.monotonic()
        while time.monotonic() < deadline:
            if until is not None and until():
                return
            if self._observe():
                quiet_since = time.monotonic()
            now = time.monotonic()
            for key, at in list(self.backoff.items()):
                if at <= now:
                    del self.backoff[key]
                    self.queue.append(key)
            if self.queue:
                key = self.queue.popleft()
                if key not in self.parked:
                    self.schedule_one(key)
                quiet_since = time.monotonic()
                continue
            if until is None and not self.backoff and time.monotonic() - quiet_since > idle:
                return
            time.sleep(0.01)
        if until is None:
            raise AssertionError("the cluster did not settle in time")

    def bound(self, prefix: str = "") -> dict[str, str]:
        with self.api.cond:
            pods = list(self.api.state.objects["pods"].values())
        return {
            p["metadata"]["name"]: p["spec"]["nodeName"]
            for p in pods
            if p["spec"].get("nodeName") and p["metadata"]["name"].startswith(prefix)
        }
