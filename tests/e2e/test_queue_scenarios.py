"""Queues end to end: a fake API server, gangplank over HTTP with its real runtime and a policy,
and a kube-scheduler stand-in driving the verbs pod by pod, parking and retrying as observed."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import yaml

from extender.core.queues.policy_parse import parse_policy
from tests.builders import (
    gang_pods,
    gpus,
    node,
    nothing_to_preempt,
    pod,
    policy_doc,
    queue,
)
from tests.fakeapi import FakeApiServer
from tests.scheduler_sim import Extender, KubeScheduler

QUEUE = "gangplank.io/queue"


def add_nodes(api: FakeApiServer, count: int, gpu: int = 8) -> None:
    for i in range(count):
        api.put("nodes", node(f"n{i}", gpu=gpu, cpu="64"))


def job(name: str, q: str, gpu: int = 8, **kwargs: Any) -> dict[str, Any]:
    return pod(name, gpu=gpu, labels={QUEUE: q}, **kwargs)


def create(api: FakeApiServer, *pods: dict[str, Any]) -> None:
    for p in pods:
        api.put("pods", p)


def finish(api: FakeApiServer, name: str) -> None:
    """The pod's containers exit: an update of an assigned pod, not a cluster event that
    requeues parked pods in the stand-in."""
    current = api.state.objects["pods"][f"default/{name}"]
    api.put("pods", {**current, "status": {"phase": "Succeeded"}})


def policy(*queues: dict[str, Any]) -> Any:
    return parse_policy(policy_doc(*queues), "policy.yaml")


def test_a_queue_at_its_max_gets_nothing_more_while_another_queues_work_proceeds(
    api: FakeApiServer,
) -> None:
    add_nodes(api, 4)
    with Extender(api, policy=policy(queue("a", max=gpus(8)), queue("b"))) as extender:
        scheduler = KubeScheduler(api, extender)
        create(api, job("a1", "a"), job("a2", "a"), job("b1", "b"), job("b2", "b"))
        scheduler.settle()
        assert set(scheduler.bound()) == {"a1", "b1", "b2"}
        assert scheduler.reasons["default/a2"] == (
            "queue a: nvidia.com/gpu 8 of max 8 in use, pod default/a2 needs 8"
            + nothing_to_preempt("a")
        )
        metrics = extender.metrics()
        assert 'gangplank_queue_rejections_total{queue="a",reason="max"}' in metrics
        assert 'gangplank_queue_usage{queue="b",resource="nvidia.com/gpu"} 16.0' in metrics
        assert 'gangplank_queue_admissions_total{queue="b"} 2.0' in metrics


def test_a_queue_borrows_idle_gpus_and_stops_when_the_lender_has_work_waiting(
    api: FakeApiServer,
) -> None:
    add_nodes(api, 5)
    # Without reclaim (tested on its own), borrowing only stops: nothing is taken back.
    borrower = {**queue("a", guarantee=gpus(8)), "preemption": {"reclaimable": False}}
    rules = policy(borrower, queue("b", guarantee=gpus(32)))
    with Extender(api, policy=rules) as extender:
        scheduler = KubeScheduler(api, extender)
        create(api, *(job(f"a{i}", "a") for i in range(3)))
        scheduler.settle()
        assert len(scheduler.bound("a")) == 3, "16 GPUs borrowed from b's idle guarantee"
        create(api, job("b1", "b"))
        create(api, *gang_pods("b2", 2, gpu=8, labels={QUEUE: "b"}))
        scheduler.settle()
        assert set(scheduler.bound("b")) == {"b1"}, "gang b2 needs two free nodes; one is"
        create(api, job("a3", "a"))
        scheduler.settle()
        assert scheduler.reasons["default/a3"] == (
            "queue a: pod default/a3 needs 8 nvidia.com/gpu beyond its guarantee (24 of 8 in "
            "use); 8 are idle but 16 of them are guaranteed to queues with work waiting (b 16)"
            + nothing_to_preempt("a")
        )
        api.delete("pods", "default", "a0")
        scheduler.settle()
        assert set(scheduler.bound("b")) == {"b1", "b2-0", "b2-1"}, "the lender gets them"
        assert "a3" not in scheduler.bound()
        report = extender.get("/queues")
        by_name = {q["name"]: q for q in report["queues"]}
        assert by_name["a"]["used"]["nvidia.com/gpu"] == "16"
        assert by_name["a"]["borrowed"] == {"nvidia.com/gpu": "8"}
        assert by_name["b"]["lent"] == {"nvidia.com/gpu": "8"}
        waiting = by_name["a"]["waiting"]
        assert [w["job"] for w in waiting] == ["pod default/a3"]
        assert waiting[0]["queuePosition"] == 1 and waiting[0]["position"] == 1
        assert "beyond its guarantee" in waiting[0]["reason"]


def test_a_held_pod_starts_within_seconds_of_its_quota_freeing(api: FakeApiServer) -> None:
    add_nodes(api, 2)
    with Extender(api, policy=policy(queue("q", max=gpus(8)))) as extender:
        scheduler = KubeScheduler(api, extender)
        create(api, job("first", "q"), job("second", "q"))
        scheduler.settle()
        assert set(scheduler.bound()) == {"first"}
        freed = time.monotonic()
        finish(api, "first")
        scheduler.settle(timeout=20, until=lambda: "second" in scheduler.bound())
        assert time.monotonic() - freed < 5
        assert ("default", "second") in {(ns, n) for ns, n, _ in api.state.patches}
        assert "gangplank_gang_kicks_total 1.0" in extender.metrics()


def test_a_closed_queue_holds_and_a_draining_queue_admits_nothing_new_and_keeps_what_runs(
    api: FakeApiServer,
) -> None:
    add_nodes(api, 3)
    create(api, job("running", "old", node="n0", phase="Running"))
    rules = policy(queue("old", state="draining"), queue("shut", state="closed"))
    with Extender(api, policy=rules) as extender:
        scheduler = KubeScheduler(api, extender)
        create(api, job("new-old", "old"), job("new-shut", "shut"))
        scheduler.settle()
        assert set(scheduler.bound()) == {"running"}, "what runs keeps running"
        assert scheduler.reasons["default/new-old"] == (
            "queue old is draining: it admits nothing new (running work goes on)"
        )
        assert scheduler.reasons["default/new-shut"] == (
            "queue shut is closed: it holds new work until it is opened"
        )
        metrics = extender.metrics()
        assert 'gangplank_queue_rejections_total{queue="shut",reason="closed"}' in metrics


def write_configmap(directory: Path, text: str, version: int) -> Path:
    """Write the policy as the kubelet updates a ConfigMap volume: a new timestamped directory,
    then an atomic swap of the `..data` symlink; the file itself is a symlink into `..data`."""
    data = directory / f"..2026_12_02_{version:04d}"
    data.mkdir()
    (data / "policy.yaml").write_text(text)
    link = directory / "..data_tmp"
    link.symlink_to(data.name)
    os.replace(link, directory / "..data")
    target = directory / "policy.yaml"
    if not target.is_symlink():
        target.symlink_to("..data/policy.yaml")
    return target


def test_a_bad_reload_keeps_the_old_policy_says_why_and_a_good_one_takes_effect(
    api: FakeApiServer, tmp_path: Path
) -> None:
    add_nodes(api, 2)
    path = write_configmap(tmp_path, yaml.safe_dump(policy_doc(queue("q", max=gpus(8)))), 1)
    with Extender(api, policy_path=str(path)) as extender:
        scheduler = KubeScheduler(api, extender)
        create(api, job("one", "q"), job("two", "q"))
        scheduler.settle()
        assert set(scheduler.bound()) == {"one"}
        write_configmap(tmp_path, "queues:\n  - name: q\n    max: {nvidia.com/gpu: -16}\n", 2)
        deadline = time.monotonic() + 10
        while "gangplank_policy_last_load_ok 0.0" not in extender.metrics():
            assert time.monotonic() < deadline, "the bad reload was not noticed"
            time.sleep(0.1)
        assert 'gangplank_policy_reloads_total{outcome="refused"} 1.0' in extender.metrics()
        create(api, job("three", "q"))
        scheduler.settle()
        assert scheduler.reasons["default/three"].startswith("queue q: nvidia.com/gpu 8 of max 8")
        write_configmap(tmp_path, yaml.safe_dump(policy_doc(queue("q", max=gpus(16)))), 3)
        scheduler.settle(timeout=20, until=lambda: len(scheduler.bound()) == 2)
        assert len(scheduler.bound()) == 2, "the new max admits one more, nudged at once"
        assert "gangplank_policy_last_load_ok 1.0" in extender.metrics()


def test_a_4_pod_gang_is_never_admitted_in_part_by_quota(api: FakeApiServer) -> None:
    add_nodes(api, 2)
    create(api, job("busy", "q", gpu=6, node="n0", phase="Running"))
    with Extender(api, policy=policy(queue("q", max=gpus(8)))) as extender:
        scheduler = KubeScheduler(api, extender)
        create(api, *gang_pods("train", 4, gpu=1, labels={QUEUE: "q"}))
        scheduler.settle()
        assert scheduler.bound("train") == {}
        assert extender.runtime.scheduler.reservations.pods() == 0
        assert scheduler.reasons["default/train-0"] == (
            "queue q: nvidia.com/gpu 6 of max 8 in use, gang default/train needs 4"
            + nothing_to_preempt("q")
        )
        finish(api, "busy")
        scheduler.settle(timeout=20, until=lambda: len(scheduler.bound("train")) == 4)
        assert len(scheduler.bound("train")) == 4
