"""A batch/v1 Job as most teams write it (no backoffLimit: Kubernetes' default 6), 4 pods of 8
GPUs, one pod never Ready, requeued by the lifecycle rules, end to end: the fake API server, the
Job controller stand-in (tests/job_controller.py: it counts every evicted pod as a failure, backs
off 10 s x 2^(failures-1) before new pods, and fails the Job past backoffLimit, as the real one
does; suspending deletes the pods without counting them, resuming recreates them at once),
gangplank over HTTP and the kube-scheduler stand-in.

Evicting the 4 pods (what gangplank did before) gives the Job 4 failures at the first requeue and
8 > 6 at the second: `Failed: BackoffLimitExceeded`. Requeued through the Job it is suspended for
gangplank's backoff and resumed when it ends, `limit` times, its failed count 0, then held
suspended with an Event saying how to run it again. The Job controller's backoffs are scaled
down (x0.01) and gangplank's durations are seconds; slow (`make test-slow`)."""

from __future__ import annotations

import time
from typing import Any

import pytest
from kubernetes import client

from tests.builders import gang_pods
from tests.e2e.test_lifecycle_scenarios import (
    CONFIG,
    QUEUE,
    Kubelets,
    add_nodes,
    evicted,
    lifecycle,
    record,
    wait_for,
)
from tests.fakeapi import FakeApiServer
from tests.job_controller import JOB_NAME, JobController, batch_job
from tests.scheduler_sim import Extender, KubeScheduler

pytestmark = pytest.mark.slow

JOB = "job:default/train"  # the gang of Job train's pods (its parallelism)
RESUME = 'kubectl patch jobs.batch train -n default --type=merge -p \'{"spec":{"suspend":false}}\''


class OnePodNeverReady(Kubelets):
    """The kubelets, but of each Job in `broken` one running pod never becomes Ready (its image
    cannot be pulled): the first started while no other pod of the Job is so."""

    def __init__(self, api: FakeApiServer) -> None:
        super().__init__(api)
        self.broken: set[str] = set()
        self._unready: dict[str, str] = {}  # Job -> uid of its pod that is not Ready

    def state_of(self, pod: dict[str, Any]) -> dict[str, Any]:
        job = (pod["metadata"].get("labels") or {}).get(JOB_NAME, "")
        if job not in self.broken:
            return super().state_of(pod)
        pods = self.api.state.objects["pods"].values()
        if any(p["metadata"]["uid"] == self._unready.get(job) for p in pods):
            return {}
        self._unready[job] = pod["metadata"]["uid"]
        return {"ready": False, "waiting": "ImagePullBackOff"}


def kubelets(api: FakeApiServer, *broken: str) -> OnePodNeverReady:
    """The kubelets (`with` runs them), one pod of each Job in `broken` never Ready."""
    nodes = OnePodNeverReady(api)
    nodes.broken.update(broken)
    return nodes


def suspend_flags(api: FakeApiServer) -> list[bool]:
    """The suspend flag each PATCH of Job train set, in order."""
    return [p.body["spec"]["suspend"] for p in api.patches_of("jobs") if p.name == "train"]


def job_events(api: FakeApiServer) -> list[tuple[str, str]]:
    """(reason, message) of each Event gangplank posted on Job train itself."""
    with api.cond:
        return [
            (e["reason"], e["message"])
            for e in api.state.posted_events
            if e["involvedObject"]["kind"] == "Job" and e["involvedObject"]["name"] == "train"
        ]


def ready_pods(api: FakeApiServer, jobs: JobController) -> int:
    return sum(
        1
        for p in jobs.pods("train")
        if p["spec"].get("nodeName")
        and any(
            c["type"] == "Ready" and c["status"] == "True"
            for c in p.get("status", {}).get("conditions", [])
        )
    )


def suspended(api: FakeApiServer) -> bool:
    job = api.object("jobs", "default", "train")
    return job is not None and bool(job["spec"].get("suspend"))


class Resumes:
    """When the Job was seen resumed after each suspension (polled on every round of `settle`)."""

    def __init__(self, api: FakeApiServer) -> None:
        self.api, self._was = api, False
        self.at: list[float] = []

    def watch(self) -> None:
        now = suspended(self.api)
        if self._was and not now:
            self.at.append(time.time())
        self._was = now


def test_a_job_with_the_default_backoff_limit_is_requeued_through_suspend_never_fails_and_is_held_suspended_until_a_person_resumes_it(  # noqa: E501
    api: FakeApiServer,
) -> None:
    add_nodes(api, 4)
    api.put("jobs", batch_job("train", 4, gpu=8, labels={QUEUE: "a"}))  # backoffLimit: 6
    rules = lifecycle(readyTimeout="1s", requeue={"backoff": "1s", "maxBackoff": "1m", "limit": 3})
    with (
        kubelets(api, "train") as nodes,
        JobController(api, scale=0.01) as jobs,
        Extender(api, CONFIG, policy=rules) as extender,
    ):
        scheduler = KubeScheduler(api, extender)
        resumes = Resumes(api)

        def held() -> bool:
            resumes.watch()
            kept = record(api, JOB)
            return kept is not None and kept["held"] and suspended(api)

        scheduler.settle(timeout=60, until=held)
        kept = record(api, JOB)
        assert kept is not None and (kept["count"], kept["held"]) == (4, True), kept
        assert kept["workload"] == {
            "kind": "Job",
            "apiVersion": "batch/v1",
            "namespace": "default",
            "name": "train",
        }
        assert suspend_flags(api) == [True, False, True, False, True, False, True]
        assert evicted(api) == [], "no pod evicted: the Job controller removed them"
        assert jobs.failed("train") == 0, "pods removed for a suspension are no failures"
        assert ("Failed", "True", "BackoffLimitExceeded") not in jobs.conditions("train")
        generations = jobs.generations("train")
        assert len(generations) == 4, "the first pods and one set per resume"
        for resumed, made in zip(resumes.at, generations[1:], strict=True):
            assert made.at - resumed < 1.0, "recreated at once, no failure backoff"
        wait_for(lambda: len(job_events(api)) == 7)  # the last follows the suspension
        reasons = [reason for reason, _ in job_events(api)]
        assert reasons == ["RequeueSuspended", "RequeueResumed"] * 3 + ["HeldSuspended"]
        not_ready = "pods not ready within 1s ("
        first = job_events(api)[0][1]
        assert first.startswith(
            f"suspended by gangplank: gang default/train not ready in time: {not_ready}"
        ), first
        assert first.endswith("(queue a); requeued (1 of 3), resumed in 1s"), first
        told = job_events(api)[-1][1]
        assert "requeued 3 times, its limit; it stays suspended until a person resumes it" in told
        assert told.endswith(RESUME), told

        # held: it stays suspended past any backoff gangplank would wait
        scheduler.settle(timeout=2.5, until=lambda: False)
        assert suspended(api) and jobs.pods("train") == []
        assert extender.get("/status")["heldJobs"] == [
            {"job": "gang default/train", "requeues": 4, "reason": kept["reason"]}
        ]

        # a person fixes the image and resumes it: its new pods start afresh
        nodes.broken.clear()
        batch = client.BatchV1Api(client.ApiClient(client.Configuration(host=api.url)))
        batch.patch_namespaced_job("train", "default", {"spec": {"suspend": False}})
        scheduler.settle(timeout=15, until=lambda: ready_pods(api, jobs) == 4)
        assert ready_pods(api, jobs) == 4, scheduler.reasons
        # the record's deletion is written after the next pass (lifecycle_io), not at the bind
        scheduler.settle(timeout=5, until=lambda: record(api, JOB) is None)
        assert record(api, JOB) is None, "count and backoff forgotten"
        assert jobs.failed("train") == 0


def test_a_restart_of_gangplank_while_the_job_waits_suspended_still_resumes_it_once(
    api: FakeApiServer,
) -> None:
    add_nodes(api, 4)
    api.put("jobs", batch_job("train", 4, gpu=8, labels={QUEUE: "a"}))
    rules = lifecycle(readyTimeout="1s", requeue={"backoff": "3s", "maxBackoff": "1m", "limit": 3})
    with kubelets(api, "train") as nodes, JobController(api, scale=0.01) as jobs:
        old = Extender(api, CONFIG, policy=rules)
        old.__enter__()
        try:
            KubeScheduler(api, old).settle(timeout=15, until=lambda: suspended(api))
            assert suspended(api), "suspended by the first process"
            nodes.broken.clear()  # the next pods all become Ready
        finally:
            old.__exit__(None, None, None)  # killed while the Job waits out its backoff
        kept = record(api, JOB)
        assert kept is not None and kept["resumed"] is False and time.time() < kept["nextTry"]
        with Extender(api, CONFIG, policy=rules) as new:
            scheduler = KubeScheduler(api, new)
            scheduler.settle(timeout=15, until=lambda: ready_pods(api, jobs) == 4)
            assert not suspended(api), "resumed by the process that came after"
            assert ready_pods(api, jobs) == 4, scheduler.reasons
            assert jobs.generations("train")[1].at >= kept["nextTry"], "not before its backoff"
            assert suspend_flags(api) == [True, False], "resumed once"
            # the record says so at the next pass's write
            wait_for(lambda: (record(api, JOB) or {}).get("resumed") is True)
            after = record(api, JOB)
            assert after is not None and after["resumed"] is True
            assert jobs.failed("train") == 0


def test_a_gang_of_bare_pods_not_ready_is_still_requeued_by_evicting_its_pods(
    api: FakeApiServer,
) -> None:
    add_nodes(api, 4)
    rules = lifecycle(readyTimeout="1s", requeue={"backoff": "1m", "maxBackoff": "1h", "limit": 3})
    with kubelets(api) as nodes, Extender(api, CONFIG, policy=rules) as extender:
        nodes.trouble["solo-3"] = {"ready": False, "waiting": "ImagePullBackOff"}
        for member in gang_pods("solo", 4, gpu=8, labels={QUEUE: "a"}):
            api.put("pods", member)
        KubeScheduler(api, extender).settle(timeout=15, until=lambda: len(evicted(api)) == 4)
        assert sorted(evicted(api)) == [f"solo-{i}" for i in range(4)]
        with api.cond:
            assert api.state.workload_patches == [], "nothing to suspend"
        kept = record(api, "gangplank:default/solo")
        assert kept is not None and "workload" not in kept


def test_a_job_past_its_max_runtime_is_suspended_and_stays_so_with_how_to_run_it_again(
    api: FakeApiServer,
) -> None:
    add_nodes(api, 4)
    api.put("jobs", batch_job("train", 4, gpu=8, labels={QUEUE: "a"}))  # backoffLimit: 6
    rules = lifecycle(maxRuntime="2s")
    with (
        kubelets(api),
        JobController(api, scale=0.01) as jobs,
        Extender(api, CONFIG, policy=rules) as extender,
    ):
        scheduler = KubeScheduler(api, extender)
        scheduler.settle(timeout=15, until=lambda: ready_pods(api, jobs) == 4)
        assert ready_pods(api, jobs) == 4, scheduler.reasons
        scheduler.settle(timeout=15, until=lambda: suspended(api) and not jobs.pods("train"))
        assert suspended(api) and jobs.pods("train") == [], "its pods removed by suspension"
        assert suspend_flags(api) == [True]
        assert evicted(api) == []
        assert jobs.failed("train") == 0
        assert ("Failed", "True", "BackoffLimitExceeded") not in jobs.conditions("train")
        wait_for(lambda: len(job_events(api)) == 1)
        ((reason, told),) = job_events(api)
        assert reason == "HeldSuspended"
        assert "maxRuntime" in told and told.endswith(RESUME), told
        scheduler.settle(timeout=2, until=lambda: False)
        assert suspended(api), "held: not resumed by gangplank"
