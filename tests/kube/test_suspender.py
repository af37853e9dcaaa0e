"""Suspending and resuming a workload over HTTP, through the real Kubernetes client against the
fake API server: every pod's eviction is tried as a dry run first, then the workload's suspend
flag is merge-patched where its kind keeps it, with an Event on the workload; a
PodDisruptionBudget, a workload gone or a refusal is the outcome, and nothing is patched."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

from extender.core.lifecycle.workloads import KINDS, Resume, Suspension, Workload
from extender.kube.evictor import ApiEvictor
from extender.kube.workloads import ApiSuspender
from tests.builders import gang_pods
from tests.fakeapi import FakeApiServer
from tests.job_controller import batch_job

TRAIN = Workload("Job", "batch/v1", "default", "train")


def suspender(api: FakeApiServer) -> ApiSuspender:
    api_client = client.ApiClient(client.Configuration(host=api.url))
    core = client.CoreV1Api(api_client)
    return ApiSuspender(core, client.CustomObjectsApi(api_client), ApiEvictor(core))


def running(api: FakeApiServer) -> tuple[tuple[str, str, str], ...]:
    pods = gang_pods("train", 2, gpu=8, job="train", labels={"team": "ml"})
    for pod in pods:
        api.put("pods", pod)
    return tuple(("default", p["metadata"]["name"], p["metadata"]["uid"]) for p in pods)


def suspension(pods: tuple[tuple[str, str, str], ...], workload: Workload = TRAIN) -> Suspension:
    return Suspension(
        job="gangplank:default/train",
        workload=workload,
        pods=pods,
        rule="not-ready",
        queue="a",
        reason="RequeueSuspended",
        message="suspended by gangplank: gang default/train not ready in time",
        gpu_seconds=0.0,
    )


def events(api: FakeApiServer) -> list[tuple[dict[str, Any], str, str]]:
    with api.cond:
        return [(e["involvedObject"], e["reason"], e["type"]) for e in api.state.posted_events]


def test_a_job_is_suspended_after_a_dry_run_of_every_pods_eviction_with_an_event_on_it(
    api: FakeApiServer,
) -> None:
    job = api.put("jobs", batch_job("train", 2))
    pods = running(api)
    assert suspender(api).suspend(suspension(pods)) == "suspended"
    with api.cond:
        assert api.state.evictions == [("default", "train-0", True), ("default", "train-1", True)]
    (patch,) = api.patches_of("jobs")
    assert (patch.content_type, patch.body) == (
        "application/merge-patch+json",
        {
            "spec": {"suspend": True},
            "metadata": {"annotations": {"gangplank.io/suspended-for": "gangplank:default/train"}},
        },
    )
    assert api.object("jobs", "default", "train")["spec"]["suspend"] is True  # type: ignore[index]
    assert events(api) == [
        (
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "namespace": "default",
                "name": "train",
                "uid": job["metadata"]["uid"],
            },
            "RequeueSuspended",
            "Warning",
        )
    ]


def test_a_resume_clears_the_flag_and_says_so_on_the_job(api: FakeApiServer) -> None:
    api.put("jobs", batch_job("train", 2))
    assert suspender(api).suspend(suspension(running(api))) == "suspended"
    with api.cond:
        api.state.posted_events.clear()
    resume = Resume("gangplank:default/train", TRAIN, "resumed by gangplank: ...")
    assert suspender(api).resume(resume) == "resumed"
    job = api.object("jobs", "default", "train")
    assert job is not None and job["spec"]["suspend"] is False
    assert "gangplank.io/suspended-for" not in (job["metadata"].get("annotations") or {})
    assert [(o["kind"], reason, kind) for o, reason, kind in events(api)] == [
        ("Job", "RequeueResumed", "Normal")
    ]


CUSTOM_KINDS = sorted(k for k in KINDS if k != "Job")


@pytest.mark.parametrize(
    "kind",
    CUSTOM_KINDS,
    ids=[
        f"a {k} is suspended where its kind keeps the flag, at its own API version"
        for k in CUSTOM_KINDS
    ],
)
def test_each_custom_workload_kind_is_suspended_and_resumed_over_http(
    api: FakeApiServer, kind: str
) -> None:
    known = KINDS[kind]
    api_version = known.api_versions[0]
    api.put(
        known.plural,
        {
            "apiVersion": api_version,
            "kind": kind,
            "metadata": {"name": "bert", "namespace": "default", "uid": "u-bert"},
            "spec": {"runPolicy": {"cleanPodPolicy": "None"}} if "runPolicy" in known.field else {},
        },
    )
    bert = Workload(kind, api_version, "default", "bert")
    assert suspender(api).suspend(suspension(running(api), bert)) == "suspended"
    found = api.object(known.plural, "default", "bert")
    assert found is not None
    if "runPolicy" in known.field:
        assert found["spec"]["runPolicy"] == {"cleanPodPolicy": "None", "suspend": True}
    else:
        assert found["spec"]["suspend"] is True
    resume = Resume("gangplank:default/train", bert, "resumed by gangplank: ...")
    assert suspender(api).resume(resume) == "resumed"
    found = api.object(known.plural, "default", "bert")
    assert found is not None
    flag: object = found
    for key in known.field:
        assert isinstance(flag, dict)
        flag = flag[key]
    assert flag is False


@pytest.mark.parametrize(
    ("arrange", "outcome"),
    [
        ("budget", "blocked"),
        ("no workload", "gone"),
    ],
    ids=[
        "a PodDisruptionBudget that forbids evicting one pod keeps the whole job running",
        "a workload deleted meanwhile (404) is gone, and nothing else is done",
    ],
)
def test_a_suspension_that_cannot_be_done_patches_nothing_and_says_why(
    api: FakeApiServer, arrange: str, outcome: str
) -> None:
    pods = running(api)
    if arrange == "budget":
        api.put("jobs", batch_job("train", 2))
        with api.cond:
            api.state.budgets.append(("default", {"team": "ml"}))
    assert suspender(api).suspend(suspension(pods)) == outcome
    with api.cond:
        assert all(dry for _, _, dry in api.state.evictions), "no pod evicted for real"
    if arrange == "budget":
        assert api.patches_of("jobs") == [], "not suspended"
    assert events(api) == []


@pytest.mark.parametrize(
    "arrange",
    ["by hand", "recreated"],
    ids=[
        "a Job a person suspended (no gangplank.io/suspended-for) is never resumed by gangplank",
        "a Job recreated under the same name, suspended by its owner, is left suspended",
    ],
)
def test_a_workload_gangplank_did_not_suspend_is_left_as_it_is(
    api: FakeApiServer, arrange: str
) -> None:
    if arrange == "recreated":
        api.put("jobs", batch_job("train", 2))
        assert suspender(api).suspend(suspension(running(api))) == "suspended"
        api.delete("jobs", "default", "train")
    api.put("jobs", batch_job("train", 2, suspend=True))
    resume = Resume("gangplank:default/train", TRAIN, "resumed by gangplank: ...")
    assert suspender(api).resume(resume) == "left"
    job = api.object("jobs", "default", "train")
    assert job is not None and job["spec"]["suspend"] is True
    assert [p.body["spec"]["suspend"] for p in api.patches_of("jobs")] == (
        [True] if arrange == "recreated" else []
    )


def test_a_suspend_the_api_server_did_not_keep_failed_and_says_so(api: FakeApiServer) -> None:
    """A RayCluster of KubeRay before 1.1 (no spec.suspend): the API server prunes the field and
    answers 200; nothing was suspended, so the requeue must be undone, not counted."""
    api.put(
        "rayclusters",
        {
            "apiVersion": "ray.io/v1",
            "kind": "RayCluster",
            "metadata": {"name": "lab", "namespace": "default", "uid": "u-lab"},
            "spec": {},
        },
    )
    with api.cond:
        api.state.pruned["rayclusters"] = ("spec", "suspend")
    lab = Workload("RayCluster", "ray.io/v1", "default", "lab")
    assert suspender(api).suspend(suspension(running(api), lab)) == "failed"
    assert events(api) == [], "no Event says it was suspended"
