"""Preemption and reclaim end to end: a fake API server (evictions, PodDisruptionBudgets,
Events), gangplank over HTTP, and the kube-scheduler stand-in with its preemption step."""

from __future__ import annotations

import time
from typing import Any

from extender.core.queues.policy_parse import parse_policy
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
        told = "evicted by gangplank: priority 1000 (no queue), for gang default/urgent"
        deadline = time.monotonic() + 10  # the victims' Events may follow the preemptor's
        events = wait_for_events(api, 2)
        while not any(m.startswith(told) for m in events):
            assert time.monotonic() < deadline, events
            time.sleep(0.05)
            events = wait_for_events(api, 2)
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
        assert extender.runtime.scheduler.reservations.pods() == 0, (
            "a plan on blocked victims is dropped"
        )


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


# ---- a queue at its max: the common setup (a team's max equals its share of the pool) ----


def team_at_max(api: FakeApiServer) -> None:
    """8 nodes of 8 GPUs; queue `team` (guarantee and max 64 GPUs) full with two priority-100
    gangs of 4 x 8 GPUs."""
    add_nodes(api, 8)
    running_gang(api, "low-a", ["n0", "n1", "n2", "n3"], priority=100, labels={QUEUE: "team"})
    running_gang(api, "low-b", ["n4", "n5", "n6", "n7"], priority=100, labels={QUEUE: "team"})


def urgent_gang_in_team(api: FakeApiServer) -> None:
    """A priority-10000 gang of 4 x 8 GPUs in queue `team` (guarantee and max 64 GPUs), run
    until it is bound whole and its Events are out."""
    rules = parse_policy(policy_doc(queue("team", guarantee=gpus(64), max=gpus(64))))
    with Extender(api, policy=rules) as extender:
        scheduler = KubeScheduler(api, extender)
        for member in gang_pods("urgent", 4, gpu=8, priority=10000, labels={QUEUE: "team"}):
            api.put("pods", member)
        scheduler.settle(timeout=30, until=lambda: len(scheduler.bound("urgent")) == 4)
        assert len(scheduler.bound("urgent")) == 4, (scheduler.reasons, api.state.evictions)
        wait_for_events(api, 2)  # the victims' and the preemptor's, posted while it runs


def test_a_high_priority_gang_preempts_inside_its_own_queue_at_max(api: FakeApiServer) -> None:
    team_at_max(api)
    urgent_gang_in_team(api)
    gone = {g for g in ("low-a", "low-b") if not names(api, g)}
    kept = {g for g in ("low-a", "low-b") if len(names(api, g)) == 4}
    assert len(gone) == 1 and len(kept) == 1, "one whole low gang evicted, the other untouched"
    assert any(
        m.startswith("evicted by gangplank: priority 10000 in queue team, for gang")
        for m in wait_for_events(api, 2)
    )


def test_a_queue_at_max_in_a_larger_cluster_preempts_its_own_low_work_not_idle_nodes(
    api: FakeApiServer,
) -> None:
    """The queue, not the cluster, is full: 8 more nodes are idle, yet the job may not use them
    past its queue's max; a lower-priority job of its own queue makes room in the quota."""
    team_at_max(api)
    for i in range(8, 16):
        api.put("nodes", node(f"n{i}", gpu=8, cpu="64"))
    urgent_gang_in_team(api)
    left = [g for g in ("low-a", "low-b") if len(names(api, g)) == 4]
    assert len(left) == 1, "exactly one low gang went, whole"


def test_a_parent_at_max_takes_back_what_a_sibling_borrowed(api: FakeApiServer) -> None:
    """Parent `org` (max 64) is full: `research` runs 48 GPUs against a guarantee of 16; `prod`
    (guarantee 32) asks for 16 in a cluster with room to spare. Only the parent's max stands in
    the way, and research's borrowing is what the rules let prod take back."""
    add_nodes(api, 12)
    for i in range(3):
        running_gang(
            api, f"borrowed-{i}", [f"n{2 * i}", f"n{2 * i + 1}"], labels={QUEUE: "research"}
        )
    running_gang(api, "prod-run", ["n6", "n7"], labels={QUEUE: "prod"})
    rules = parse_policy(
        policy_doc(
            queue("org", guarantee=gpus(64), max=gpus(64)),
            queue("prod", parent="org", guarantee=gpus(32)),
            queue("research", parent="org", guarantee=gpus(16)),
        )
    )
    with Extender(api, policy=rules) as extender:
        scheduler = KubeScheduler(api, extender)
        for member in gang_pods("serve", 2, gpu=8, labels={QUEUE: "prod"}):
            api.put("pods", member)
        scheduler.settle(timeout=30, until=lambda: len(scheduler.bound("serve")) == 2)
        assert len(scheduler.bound("serve")) == 2, (scheduler.reasons, api.state.evictions)
        left = [i for i in range(3) if names(api, f"borrowed-{i}")]
        assert len(left) == 2, "one 2-pod research gang (16 GPUs) was enough"
        assert all(len(names(api, f"borrowed-{i}")) == 2 for i in left), "no gang left in part"
        assert len(names(api, "prod-run")) == 2, "prod's own running work is untouched"


def test_a_queue_at_max_with_no_lower_priority_work_evicts_nothing_and_says_why(
    api: FakeApiServer,
) -> None:
    team_at_max(api)
    rules = parse_policy(policy_doc(queue("team", guarantee=gpus(64), max=gpus(64))))
    with Extender(api, policy=rules) as extender:
        scheduler = KubeScheduler(api, extender)
        for member in gang_pods("same", 4, gpu=8, priority=100, labels={QUEUE: "team"}):
            api.put("pods", member)
        scheduler.settle(timeout=10)
        assert not scheduler.bound("same")
        assert [e for e in api.state.evictions if not e[2]] == [], "nothing evicted"
        # kube-scheduler finds no lower-priority pod and never asks: gangplank's own pass tells.
        deadline = time.monotonic() + 15
        while "of max" not in str(said := extender.get("/why?pod=default/same-0")):
            assert time.monotonic() < deadline, said
            time.sleep(0.1)
        held = [m for m in wait_for_events(api, 1) if "of max" in m]
        for told in (str(said), *held):
            assert "queue team: nvidia.com/gpu 64 of max 64 in use, gang default/same needs 32" in (
                told
            )
            assert "no job of queue team runs at a priority below 100" in told
        assert held, "a QueueHeld Event on the gang"
        assert [e for e in api.state.evictions if not e[2]] == [], "nothing evicted"
