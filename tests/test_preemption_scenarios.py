"""Preemption and reclaim end to end: a fake API server (evictions, PodDisruptionBudgets,
Events), gangplank over HTTP, and the kube-scheduler stand-in with its preemption step."""

from __future__ import annotations

import time
from typing import Any

from extender.core.policy import parse_policy
from tests.builders import gang_pods, gpus, node, pod, policy_doc, queue
from tests.fakeapi import FakeApiServer
from tests.scheduler_sim import Extender, KubeScheduler

QUEUE = "gangplank.io/queue"
STARTED = "2026-12-01T00:00:00Z"


def add_nodes(api: FakeApiServer, count: int) -> None:
    for i in range(count):
        api.put("nodes", node(f"n{i}", gpu=8, cpu="64"))


def running_gang(
    api: FakeApiServer, name: str, nodes: list[str], *, priority: int = 0, **kw: Any
) -> None:
    for member, node_name in zip(
        gang_pods(name, len(nodes), gpu=8, priority=priority, **kw), nodes, strict=True
    ):
        member["spec"]["nodeName"] = node_name
        member["status"] = {"phase": "Running", "startTime": STARTED}
        api.put("pods", member)


def running_pod(api: FakeApiServer, name: str, node_name: str, **kw: Any) -> None:
    raw = pod(name, gpu=8, node=node_name, **kw)
    raw["status"] = {"phase": "Running", "startTime": STARTED}
    api.put("pods", raw)


def wait_for_events(api: FakeApiServer, count: int) -> list[str]:
    """The Events gangplank posted, once there are `count` (its evictor runs every 0.1 s)."""
    deadline = time.monotonic() + 10
    while len(api.state.posted_events) < count and time.monotonic() < deadline:
        time.sleep(0.05)
    return [e["message"] for e in api.state.posted_events]


def names(api: FakeApiServer, prefix: str) -> set[str]:
    with api.cond:
        return {
            p["metadata"]["name"]
            for p in api.state.objects["pods"].values()
            if p["metadata"]["name"].startswith(prefix)
        }


def test_a_high_priority_gang_evicts_exactly_one_low_priority_gang_and_binds_whole(
    api: FakeApiServer,
) -> None:
    add_nodes(api, 8)
    running_gang(api, "low-a", ["n0", "n1", "n2", "n3"])
    running_gang(api, "low-b", ["n4", "n5", "n6", "n7"])
    with Extender(api) as extender:
        scheduler = KubeScheduler(api, extender)
        for member in gang_pods("urgent", 4, gpu=8, priority=1000):
            api.put("pods", member)
        scheduler.settle(timeout=30, until=lambda: len(scheduler.bound("urgent")) == 4)
        assert len(scheduler.bound("urgent")) == 4, (
            scheduler.reasons,
            api.state.evictions,
            scheduler.preemptions,
        )
        gone = {g for g in ("low-a", "low-b") if not names(api, g)}
        kept = {g for g in ("low-a", "low-b") if len(names(api, g)) == 4}
        assert len(gone) == 1 and len(kept) == 1, "one whole gang evicted, the other untouched"
        victim = gone.pop()
        assert set(scheduler.bound("urgent").values()) == {
            f"n{i}" for i in (range(4) if victim == "low-a" else range(4, 8))
        }
        events = wait_for_events(api, 2)
        assert any(
            m.startswith("evicted by gangplank: priority 1000 (no queue), for gang default/urgent")
            for m in events
        )
        assert any("gangplank evicts 1 job(s) for this gang default/urgent" in m for m in events)
        metrics = extender.metrics()
        assert (
            'gangplank_preemption_evictions_total{outcome="evicted",queue="",rule="priority"}'
            in (metrics)
            or "gangplank_preemption_evictions_total" in metrics
        )
        assert 'gangplank_gangs{state="partial"} 0.0' in metrics


def test_a_queue_below_its_guarantee_reclaims_exactly_the_jobs_it_needs(
    api: FakeApiServer,
) -> None:
    add_nodes(api, 8)
    for i in range(4):
        running_gang(
            api, f"borrowed-{i}", [f"n{2 * i}", f"n{2 * i + 1}"], labels={QUEUE: "research"}
        )
    rules = parse_policy(
        policy_doc(queue("prod", guarantee=gpus(32)), queue("research", guarantee=gpus(16)))
    )
    with Extender(api, policy=rules) as extender:
        scheduler = KubeScheduler(api, extender)
        for member in gang_pods("serve", 2, gpu=8, labels={QUEUE: "prod"}):
            api.put("pods", member)
        scheduler.settle(timeout=40, until=lambda: len(scheduler.bound("serve")) == 2)
        assert len(scheduler.bound("serve")) == 2, scheduler.reasons
        left = [i for i in range(4) if names(api, f"borrowed-{i}")]
        assert len(left) == 3, "one 2-pod gang (16 GPUs) was enough"
        assert all(len(names(api, f"borrowed-{i}")) == 2 for i in left), "no gang left in part"
        evicted = {(ns, n) for ns, n, dry in api.state.evictions if not dry}
        assert len(evicted) == 2
        assert any(
            "evicted by gangplank: reclaim for queue prod (guarantee 32 nvidia.com/gpu, using 0)"
            in e["message"]
            for e in api.state.posted_events
        )
        deadline = time.monotonic() + 5
        while 'rule="reclaim"' not in extender.metrics():
            assert time.monotonic() < deadline, "eviction metrics"
            time.sleep(0.05)


def test_non_preemptible_and_budget_protected_pods_survive(api: FakeApiServer) -> None:
    add_nodes(api, 3)
    running_pod(api, "opted-out", "n0", labels={"gangplank.io/preemptible": "false"})
    running_pod(api, "budgeted", "n1", labels={"app": "db"})
    running_gang(api, "guarded", ["n2"], labels={"app": "db2"})
    api.state.budgets += [("default", {"app": "db"}), ("default", {"app": "db2"})]
    with Extender(api) as extender:
        scheduler = KubeScheduler(api, extender)
        api.put("pods", pod("urgent", gpu=8, priority=1000))
        for member in gang_pods("urgent-gang", 1, gpu=8, priority=1000):
            api.put("pods", member)
        scheduler.settle(timeout=20)
        assert names(api, "opted-out") and names(api, "budgeted") and names(api, "guarded")
        assert not scheduler.bound("urgent")
        assert not [e for e in api.state.evictions if not e[2]], "no eviction for real"
        assert 'outcome="blocked"' in extender.metrics()
        assert extender.runtime.gangs.reserved_pods() == 0, "a plan on blocked victims is dropped"


def test_a_job_that_cannot_fit_even_after_evictions_evicts_nothing(api: FakeApiServer) -> None:
    add_nodes(api, 2)
    running_gang(api, "low", ["n0", "n1"])
    with Extender(api) as extender:
        scheduler = KubeScheduler(api, extender)
        for member in gang_pods("huge", 3, gpu=8, priority=1000):
            api.put("pods", member)
        scheduler.settle(timeout=15)
        assert len(names(api, "low")) == 2
        assert api.state.evictions == [] and scheduler.preemptions == []


def test_two_queues_reclaiming_from_each_other_settle_without_ping_pong(
    api: FakeApiServer,
) -> None:
    add_nodes(api, 8)
    for i in range(8):
        running_pod(api, f"a-run-{i}", f"n{i}", labels={QUEUE: "a"})
    rules = parse_policy(
        {
            **policy_doc(queue("a", guarantee=gpus(32)), queue("b", guarantee=gpus(32))),
            "preemption": {"evictionsPerMinute": 3},
        }
    )
    with Extender(api, policy=rules) as extender:
        scheduler = KubeScheduler(api, extender)
        for i in range(6):
            api.put("pods", pod(f"b-new-{i}", gpu=8, labels={QUEUE: "b"}))
            api.put("pods", pod(f"a-new-{i}", gpu=8, labels={QUEUE: "a"}))
        scheduler.settle(timeout=40, until=lambda: len(scheduler.bound("b-new")) >= 3)
        first_minute = [e for e in api.state.evictions if not e[2]]
        assert len(first_minute) == 3, "at most 3 jobs a minute"
        scheduler.settle(idle=6, timeout=20)
        assert len([e for e in api.state.evictions if not e[2]]) == 3, "no more within the minute"
        assert all(n.startswith("a-run") for _, n, _ in api.state.evictions), "b is never a victim"
        assert len(scheduler.bound("b-new")) == 3
        assert len(names(api, "a-run")) == 5
        assert 'outcome="evicted",queue="a",rule="reclaim"} 3.0' in extender.metrics()
