"""Consolidation end to end: the fake API server, the Job controller stand-in (suspending a Job
deletes its pods without counting a failure, resuming recreates them at once), gangplank over
HTTP and the kube-scheduler stand-in (its own filters fit an 8-GPU pod nowhere, so it never
sends it to the extender's filter: the leader's pass finds it).

Three 8-GPU nodes: n0 runs two movable 2-GPU batch/v1 Jobs (a and b, default backoffLimit), n1
and n2 run 6 GPUs each of pods nobody recreates. 8 GPUs are free, 4 on n0 and 2 on each other
node, and an 8-GPU pod waits. Slow (`make test-slow`): each scenario takes seconds."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

import pytest

from extender.core.gangs.placer import GangConfig
from extender.core.queues.policy import Policy
from extender.core.queues.policy_parse import parse_policy
from tests.builders import pod, policy_doc, queue
from tests.e2e.test_lifecycle_scenarios import QUEUE, Kubelets, add_nodes, wait_for
from tests.fakeapi import FakeApiServer
from tests.job_controller import JobController, batch_job
from tests.scheduler_sim import Extender, KubeScheduler

pytestmark = pytest.mark.slow

CONFIG = GangConfig(lifecycle_review_seconds=0.2, kick_interval_seconds=0.2)
MOVABLE = {"gangplank.io/movable": "true"}


def policy(**consolidation: Any) -> Policy:
    doc = policy_doc(queue("ml", namespaces=["default"]))
    doc["consolidation"] = consolidation
    return parse_policy(doc, "policy.yaml")


def bound(api: FakeApiServer, name: str) -> str | None:
    found = api.object("pods", "default", name)
    return found["spec"].get("nodeName") if found is not None else None


def job_nodes(jobs: JobController, name: str) -> list[str]:
    return sorted(p["spec"].get("nodeName") or "" for p in jobs.pods(name))


def suspend_flags(api: FakeApiServer, name: str) -> list[bool]:
    return [p.body["spec"]["suspend"] for p in api.patches_of("jobs") if p.name == name]


def events(api: FakeApiServer, reason: str) -> list[str]:
    with api.cond:
        return [e["message"] for e in api.state.posted_events if e["reason"] == reason]


def others(count: int) -> list[str]:
    """The nodes beside n0 of a cluster of `count`."""
    return [f"n{i}" for i in range(1, count)]


def scattered(api: FakeApiServer, movable: bool, nodes: int = 3) -> None:
    """Jobs a and b (to land on n0: the other nodes are full meanwhile)."""
    add_nodes(api, nodes)
    for name in others(nodes):
        api.put("pods", pod(f"full-{name}", gpu=8, node=name, phase="Running"))
    labels = {QUEUE: "ml", **(MOVABLE if movable else {})}
    for name in ("a", "b"):
        api.put("jobs", batch_job(name, 1, gpu=2, labels=labels))


def fragment(
    api: FakeApiServer,
    extender: Extender,
    priority: int = 10,
    nodes: int = 3,
    stays: int = 6,
    cpu: str = "1",
) -> None:
    """The other nodes keep 8 - `stays` GPUs free each (n1 and n2: 2 each), and once gangplank's
    cache shows it, the 8-GPU pod `big` (asking for `cpu`) comes (at priority 10 kube-scheduler's
    own preemption could take a and b for it, or the pods on the other nodes)."""
    for name in others(nodes):
        api.delete("pods", "default", f"full-{name}")
        api.put("pods", pod(f"stays-{name}", gpu=stays, node=name, phase="Running"))

    def seen() -> bool:
        known = extender.store.snapshot().nodes
        return all(
            [p.name for p in known[n].pods] == [f"stays-{n}"] for n in others(nodes) if n in known
        )

    wait_for(seen, timeout=10)
    api.put("pods", pod("big", gpu=8, cpu=cpu, priority=priority, labels={QUEUE: "ml"}))


def on_n0(jobs: JobController) -> bool:
    return job_nodes(jobs, "a") + job_nodes(jobs, "b") == ["n0", "n0"]


@contextlib.contextmanager
def running(api: FakeApiServer) -> Iterator[tuple[JobController, Extender, KubeScheduler]]:
    """The stand-ins and gangplank, once Jobs a and b run on n0."""
    with (
        Kubelets(api),
        JobController(api, scale=0.01) as jobs,
        Extender(api, CONFIG, policy=policy()) as extender,
    ):
        scheduler = KubeScheduler(api, extender)
        scheduler.settle(timeout=40, until=lambda: on_n0(jobs))
        yield jobs, extender, scheduler


def test_two_movable_jobs_are_moved_to_planned_nodes_the_8_gpu_pod_starts_and_they_run_again_unfailed(  # noqa: E501
    api: FakeApiServer,
) -> None:
    scattered(api, movable=True)
    with running(api) as (jobs, extender, scheduler):
        fragment(api, extender)

        def done() -> bool:
            moved = sorted(job_nodes(jobs, "a") + job_nodes(jobs, "b"))
            return bound(api, "big") == "n0" and moved == ["n1", "n2"]

        scheduler.settle(timeout=60, until=done)
        with api.cond:
            seen = sorted(
                (p["metadata"]["name"], p["spec"].get("nodeName"), p["status"].get("phase"))
                for p in api.state.objects["pods"].values()
            )
        assert done(), seen
        # Events are posted by the events worker after the pass that decided them
        wait_for(lambda: bool(events(api, "ConsolidationPlanned")), timeout=10)
        wait_for(lambda: bool(events(api, "ConsolidationMove")), timeout=10)
        [planned] = events(api, "ConsolidationPlanned")
        assert planned.startswith(
            "pod default/big (8 GPUs in one node) fits once gangplank moves 2 job(s)"
        )
        for name in ("a", "b"):
            [node] = job_nodes(jobs, name)
            assert f"gang default/{name} (2 GPUs) from node n0 to {node}" in planned, planned
            assert jobs.failed(name) == 0, "moved by suspend and resume: no failure counted"
            assert suspend_flags(api, name) == [True, False]
        assert any(
            "to make room for pod default/big" in m for m in events(api, "ConsolidationMove")
        )
        assert scheduler.preemptions == [], "no one is preempted when moving others makes room"
        time.sleep(1.0)  # more passes: nothing moves again (a stable end state)
        scheduler.settle(timeout=2)
        assert [suspend_flags(api, n) for n in ("a", "b")] == [[True, False], [True, False]]
        metrics = extender.metrics()
        assert 'gangplank_consolidation_moves_total{outcome="moved",way="suspend"} 2.0' in metrics
        assert 'gangplank_consolidation_plans_total{outcome="made"} 1.0' in metrics


def nothing_moved(api: FakeApiServer, jobs: JobController, scheduler: KubeScheduler) -> None:
    scheduler.settle(timeout=3, until=lambda: False)  # many passes
    assert bound(api, "big") is None
    assert suspend_flags(api, "a") == suspend_flags(api, "b") == []
    assert on_n0(jobs) and jobs.failed("a") == jobs.failed("b") == 0
    assert events(api, "ConsolidationPlanned") == []


def test_nothing_moves_when_the_candidates_are_not_movable(api: FakeApiServer) -> None:
    scattered(api, movable=False)
    with running(api) as (jobs, extender, scheduler):
        fragment(api, extender, priority=0)
        nothing_moved(api, jobs, scheduler)


def test_nothing_moves_when_the_waiting_pod_would_not_fit_after_the_moves(
    api: FakeApiServer,
) -> None:
    """`big` asks for 100 CPUs: emptying n0 of a and b would give it its GPUs, not its CPUs
    (with 2 CPUs it is the first scenario, and a and b move)."""
    scattered(api, movable=True)
    with running(api) as (jobs, extender, scheduler):
        fragment(api, extender, priority=0, cpu="100")
        nothing_moved(api, jobs, scheduler)


def test_nothing_moves_when_a_moved_job_would_have_no_place(api: FakeApiServer) -> None:
    """Five nodes: n1 to n4 keep one GPU free each, so 8 are free in all (4 on n0), but a 2-GPU
    job fits on none of the others (with two free on each, a and b move)."""
    scattered(api, movable=True, nodes=5)
    with running(api) as (jobs, extender, scheduler):
        fragment(api, extender, priority=0, nodes=5, stays=7)
        nothing_moved(api, jobs, scheduler)


def test_a_disruption_budget_on_one_moved_job_drops_the_whole_plan_and_nothing_moves(
    api: FakeApiServer,
) -> None:
    scattered(api, movable=True)
    with api.cond:
        api.state.budgets += [("default", {"batch.kubernetes.io/job-name": "a"})]
    with running(api) as (jobs, extender, scheduler):
        fragment(api, extender, priority=0)
        metrics = extender.metrics
        scheduler.settle(
            timeout=20,
            until=lambda: 'gangplank_consolidation_plans_total{outcome="refused"}' in metrics(),
        )
        scheduler.settle(timeout=2, until=lambda: False)  # more passes: no retry against it
        assert suspend_flags(api, "a") == suspend_flags(api, "b") == []
        assert on_n0(jobs) and bound(api, "big") is None
        assert (
            'gangplank_consolidation_moves_total{outcome="blocked",way="suspend"} 1.0' in metrics()
        )
        assert 'gangplank_consolidation_plans_total{outcome="refused"} 1.0' in metrics()
