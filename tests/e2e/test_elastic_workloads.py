"""Elastic workloads end to end (docs/elastic.md): the fake API server, gangplank over HTTP, the
kube-scheduler stand-in and the Job controller stand-in (tests/job_controller.py, which counts
failures as the real one does). An elastic Job gives its extras back by a smaller size (an
Indexed one its completions and parallelism, a NonIndexed one its parallelism), without a
failure, and grows back on spare room; a PyTorchJob with elasticPolicy (run by the training
operator's stand-in, tests/training_operator.py) and a Volcano job with minAvailable below its
replicas are read as elastic, the PyTorchJob made smaller and grown back by its Worker replicas.
Slow (`make test-slow`)."""

from __future__ import annotations

from typing import Any

import pytest

from extender.core.gangs.placer import GangConfig
from tests.builders import gang_pods, pod, pod_group
from tests.e2e.test_preemption_scenarios import QUEUE, add_nodes, wait_for_events
from tests.fakeapi import FakeApiServer
from tests.job_controller import JobController, batch_job
from tests.scheduler_sim import Extender, KubeScheduler
from tests.training_operator import TrainingOperator, pytorch_job, replica_pod

pytestmark = pytest.mark.slow

CONFIG = GangConfig(kick_interval_seconds=0.2, regrow_after_seconds=1.0)
MIN_PARALLELISM = "kueue.x-k8s.io/job-min-parallelism"


def elastic_job(indexed: bool) -> dict[str, Any]:
    """Job el: 4 pods of 8 GPUs (completions 4, parallelism 4), Kueue's minimum 2."""
    job = batch_job("el", 4, completions=4, gpu=8, labels={QUEUE: "research"}, indexed=indexed)
    job["metadata"]["annotations"] = {MIN_PARALLELISM: "2"}
    return job


def bound(api: FakeApiServer, prefix: str) -> dict[str, str]:
    with api.cond:
        pods = list(api.state.objects["pods"].values())
    return {
        p["metadata"]["name"]: p["spec"]["nodeName"]
        for p in pods
        if p["metadata"]["name"].startswith(prefix) and p["spec"].get("nodeName")
    }


@pytest.mark.parametrize("alone", [False, True], ids=["a gang", "a pod alone"])
@pytest.mark.parametrize(
    "indexed", [True, False], ids=["an elastic Indexed Job", "a NonIndexed elastic Job"]
)
def test_a_job_needing_a_node_takes_an_elastic_jobs_extra_its_minimum_runs_on_and_it_grows_back(
    api: FakeApiServer, indexed: bool, alone: bool
) -> None:
    add_nodes(api, 4)
    api.put("jobs", elastic_job(indexed))
    with (
        Extender(api, CONFIG) as extender,
        JobController(api, scale=0.01, only=["default/el"]) as jobs,
    ):
        scheduler = KubeScheduler(api, extender)
        scheduler.settle(timeout=30, until=lambda: len(bound(api, "el-")) == 4)
        assert len(bound(api, "el-")) == 4, scheduler.reasons
        urgent = pod("urgent-0", gpu=8, priority=1000)
        for member in [urgent] if alone else gang_pods("urgent", 1, gpu=8, priority=1000):
            api.put("pods", member)
        scheduler.settle(timeout=30, until=lambda: len(bound(api, "urgent")) == 1)
        assert len(bound(api, "urgent")) == 1, (scheduler.reasons, api.state.evictions)
        scheduler.settle(timeout=2, until=lambda: False)  # the Job controller catches up
        spec = jobs.job("el")["spec"]
        running = bound(api, "el-")
        events = wait_for_events(api, 1)
        what = "completions and parallelism" if indexed else "parallelism"
        assert (spec["completions"], spec["parallelism"]) == ((3, 3) if indexed else (4, 3))
        assert jobs.failed("el") == 0, "a pod a smaller size removes is no failure"
        assert len(running) == 3, "the minimum and one extra keep running"
        if indexed:
            assert sorted(n.rsplit("-", 1)[0] for n in running) == ["el-0", "el-1", "el-2"], (
                "the extra of index 2 keeps running"
            )
        assert not [e for e in api.state.evictions if not e[2]], "nothing evicted"
        annotations = jobs.job("el")["metadata"]["annotations"]
        assert annotations["gangplank.io/shrunk-from"] == "4"
        assert any(m.startswith(f"gangplank lowered its {what} from 4 to 3: ") for m in events), (
            events
        )
        # the urgent job ends: the room is spare again, the Job gets its size back
        api.delete("pods", "default", "urgent-0")
        scheduler.settle(timeout=30, until=lambda: len(bound(api, "el-")) == 4)
        spec = jobs.job("el")["spec"]
        assert (spec["completions"], spec["parallelism"]) == (4, 4)
        assert len(bound(api, "el-")) == 4, scheduler.reasons
        assert "gangplank.io/shrunk-from" not in jobs.job("el")["metadata"]["annotations"]
        assert jobs.failed("el") == 0
        metrics = extender.metrics()
        assert 'gangplank_elastic_regrowths_total{kind="Job",outcome="grown"} 1.0' in metrics


def test_a_pytorchjob_with_elastic_policy_gives_workers_back_by_replicas_and_grows_again(
    api: FakeApiServer,
) -> None:
    """min 2 / max 4 workers on room for 3: 3 start; a job needing a node lowers its Worker
    replicas to 2 (the operator deletes worker 2, out of range, without recreating it); once
    that job ends the replicas go back up (to 3: the room for a fourth worker never comes)."""
    add_nodes(api, 3)
    api.put("pytorchjobs", pytorch_job("pt", 4, least=2, most=4, labels={QUEUE: "research"}))

    def workers() -> int:
        found = api.object("pytorchjobs", "default", "pt")
        assert found is not None
        return int(found["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"])

    with Extender(api, CONFIG) as extender, TrainingOperator(api):
        scheduler = KubeScheduler(api, extender)
        scheduler.settle(timeout=30, until=lambda: len(bound(api, "pt-")) == 3)
        assert sorted(bound(api, "pt-")) == ["pt-worker-0", "pt-worker-1", "pt-worker-2"], (
            scheduler.reasons
        )
        for member in gang_pods("urgent", 1, gpu=8, priority=1000):
            api.put("pods", member)
        scheduler.settle(timeout=30, until=lambda: len(bound(api, "urgent")) == 1)
        assert len(bound(api, "urgent")) == 1, scheduler.reasons
        assert workers() == 2
        assert sorted(bound(api, "pt-")) == ["pt-worker-0", "pt-worker-1"]
        assert not [e for e in api.state.evictions if not e[2]], "no worker evicted"
        found = api.object("pytorchjobs", "default", "pt")
        assert found is not None
        assert found["metadata"]["annotations"] == {"gangplank.io/shrunk-from": "4"}
        api.delete("pods", "default", "urgent-0")
        scheduler.settle(timeout=30, until=lambda: len(bound(api, "pt-")) == 3)
        assert workers() == 3, "one worker back on the room the urgent job left"
        assert sorted(bound(api, "pt-")) == ["pt-worker-0", "pt-worker-1", "pt-worker-2"]
        scheduler.settle(timeout=2, until=lambda: False)
        assert workers() == 3, "no room for a fourth: it grows no further"
        grown = 'gangplank_elastic_regrowths_total{kind="PyTorchJob",outcome="grown"} 1.0'
        assert grown in extender.metrics()


def test_a_volcano_job_with_min_available_below_its_replicas_is_elastic(api: FakeApiServer) -> None:
    """Volcano's controller makes PodGroup vj with minMember = minAvailable (2) for 4 replicas,
    its pods annotated with the group: on room for 3, 3 start (the minimum whole, then one)."""
    add_nodes(api, 3)
    api.put("volcano-podgroups", pod_group("vj", 2))
    with Extender(api, CONFIG) as extender:
        scheduler = KubeScheduler(api, extender)
        for i in range(4):
            annotations = {"scheduling.k8s.io/group-name": "vj"}
            api.put("pods", pod(f"vj-{i}", gpu=8, annotations=annotations))
        scheduler.settle(timeout=30, until=lambda: len(bound(api, "vj-")) == 3)
        assert len(bound(api, "vj-")) == 3, scheduler.reasons
        planned = {m for m in wait_for_events(api, 1) if "planned whole" in m}
        assert any(m.startswith("gang default/vj: 2 members planned whole on ") for m in planned)


def test_without_the_pytorchjob_crd_readyz_says_so_and_its_pods_wait_saying_where_to_look(
    api: FakeApiServer,
) -> None:
    api.state.absent.add("pytorchjobs")  # the training operator is not installed
    add_nodes(api, 2)
    with Extender(api, CONFIG) as extender:
        scheduler = KubeScheduler(api, extender)
        job = pytorch_job("pt", 2, least=1, most=2, labels={QUEUE: "research"})
        api.put("pods", replica_pod(job, "worker", 0, {QUEUE: "research"}, 8))
        scheduler.settle()
        assert bound(api, "pt-") == {}
        assert "waiting for PyTorchJob default/pt" in scheduler.reasons["default/pt-worker-0"]
        assert extender.get("/readyz")["reason"] == (
            "cache synced (not served by this cluster, read as none: pytorchjobs)"
        )
