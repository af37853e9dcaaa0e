"""Waiting jobs (`core/queues/waiting_jobs.py`): a cache group's pending pods of gangplank's
schedulers, as jobs: a gang whole, a pod alone; a pod alone's job is made again only when the pod
object changed."""

from __future__ import annotations

from typing import Any

from extender.core.model.resources import GPU
from extender.core.queues.waiting_jobs import PendingJobs
from extender.kube.convert import pod_from_api
from tests.builders import gang_pods, pod

GROUP = ("q", "default")


def later(raw: dict[str, Any], stamp: str) -> dict[str, Any]:
    return {**raw, "metadata": {**raw["metadata"], "creationTimestamp": stamp}}


def test_a_gangs_pending_members_are_one_job_and_a_pod_alone_is_one() -> None:
    members = gang_pods("g", 2, gpu=4)
    members = [later(members[0], "2026-12-01T11:00:00Z"), {**members[1]}]
    members[1]["spec"] = {**members[1]["spec"], "priority": 50}
    pods = [pod_from_api(p) for p in [*members, pod("solo", gpu=1)]]
    jobs = {job.key: job for job in PendingJobs({"gangplank"}).jobs(GROUP, "q", pods)}
    assert set(jobs) == {"gangplank:default/g", "pod:default/solo"}
    gang = jobs["gangplank:default/g"]
    assert (gang.queue, gang.priority, gang.requests[GPU], len(gang.pods)) == ("q", 50, 8, 2)
    assert gang.created == pods[1].created < pods[0].created, "its first member's"
    assert gang.name == "gang default/g" and jobs["pod:default/solo"].name == "pod default/solo"


def test_pods_of_other_schedulers_are_not_waiting_jobs() -> None:
    other = pod("other")
    other["spec"]["schedulerName"] = "default-scheduler"
    assert PendingJobs({"gangplank"}).jobs(GROUP, "q", [pod_from_api(other)]) == []


def test_a_pod_alones_job_is_made_again_only_when_the_pod_changed() -> None:
    pending = PendingJobs({"gangplank"})
    raw = pod("solo")
    solo = pod_from_api(raw)
    [first] = pending.jobs(GROUP, "q", [solo])
    [again] = pending.jobs(GROUP, "q", [solo])
    assert again is first, "the same pod object: the same job"
    [changed] = pending.jobs(GROUP, "q", [pod_from_api(raw)])
    assert changed is not first and changed.key == first.key
