"""The Job-controller stand-in (tests/job_controller.py) does what the batch/v1 Job controller
does to a Job whose pods are evicted or suspended: checked against the fake API server over
HTTP with the real Kubernetes client (the Eviction API, BatchV1Api), on a clock the test moves
(so a 80 s backoff takes no time), and once live, with the controller's own thread."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.fakeapi import FakeApiServer
from tests.job_controller import (
    BACKOFF_LIMIT_EXCEEDED,
    COMPLETION_INDEX,
    CONTROLLER_UID,
    JOB_NAME,
    LEGACY_CONTROLLER_UID,
    LEGACY_JOB_NAME,
    MAX_POD_FAILURE_BACKOFF,
    JobController,
    backoff_seconds,
    batch_job,
)

# The Job controller stand-in waits its (scaled) backoffs in real time (about 14 s in all): slow.
pytestmark = pytest.mark.slow

START = 1_800_000_000.0
FAILED_FOR_GOOD = [
    ("FailureTarget", "True", BACKOFF_LIMIT_EXCEEDED),
    ("Failed", "True", BACKOFF_LIMIT_EXCEEDED),
]


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def jobs(fake_api: FakeApiServer, clock: Clock) -> JobController:
    """The controller, synced by each test (`at`), on the test's clock."""
    return JobController(fake_api, clock=clock, seed=7)


@pytest.fixture
def core(fake_api: FakeApiServer) -> Any:
    return client.CoreV1Api(client.ApiClient(client.Configuration(host=fake_api.url)))


@pytest.fixture
def batch(fake_api: FakeApiServer) -> Any:
    return client.BatchV1Api(client.ApiClient(client.Configuration(host=fake_api.url)))


def at(jobs: JobController, clock: Clock, seconds: float) -> None:
    """Sync `seconds` after the start."""
    clock.now = START + seconds
    jobs.sync()


def names(jobs: JobController, job: str = "train") -> list[str]:
    return sorted(p["metadata"]["name"] for p in jobs.pods(job))


def evict(core: Any, jobs: JobController, job: str = "train", count: int | None = None) -> None:
    """Evict the job's pods (`count` of them) through the Eviction API, as gangplank does; one
    gone meanwhile (the controller deleted it: the Job failed) is no error."""
    for name in names(jobs, job)[:count]:
        try:
            core.create_namespaced_pod_eviction(
                name,
                "default",
                client.V1Eviction(metadata=client.V1ObjectMeta(name=name, namespace="default")),
            )
        except ApiException as err:
            if err.status != 404:
                raise


# ---- the backoff ----


@pytest.mark.parametrize(
    ("failures", "seconds"),
    [(0, 0.0), (1, 10.0), (2, 20.0), (4, 80.0), (6, 320.0), (7, 600.0), (30, 600.0)],
    ids=[
        "no failure: no wait",
        "the first failure: 10 s",
        "the second: doubled to 20 s",
        "four pods evicted together: 80 s",
        "six failures: 320 s",
        "seven: capped at 10 minutes, MaxJobPodFailureBackOff",
        "thirty: still the cap",
    ],
)
def test_the_failure_backoff_doubles_from_10_seconds_with_each_failure_up_to_its_cap(
    failures: int, seconds: float
) -> None:
    assert backoff_seconds(failures) == seconds
    assert backoff_seconds(failures) <= MAX_POD_FAILURE_BACKOFF


# ---- pods, failures and the backoff ----


def test_a_job_s_pods_are_made_from_its_template_named_labelled_and_owned_as_upstream_makes_them(
    fake_api: FakeApiServer, jobs: JobController, clock: Clock, core: Any
) -> None:
    job = fake_api.put("jobs", batch_job("train", 3, labels={"gangplank.io/queue": "a"}))
    at(jobs, clock, 0)
    pods = core.list_pod_for_all_namespaces().items
    assert len(pods) == 3 and len({p.metadata.name for p in pods}) == 3
    uid = job["metadata"]["uid"]
    for pod in pods:
        assert pod.metadata.name.startswith("train-") and len(pod.metadata.name) == 11
        assert pod.metadata.labels == {
            "gangplank.io/queue": "a",
            JOB_NAME: "train",
            LEGACY_JOB_NAME: "train",
            CONTROLLER_UID: uid,
            LEGACY_CONTROLLER_UID: uid,
        }
        (owner,) = pod.metadata.owner_references
        assert (owner.api_version, owner.kind, owner.name, owner.uid, owner.controller) == (
            "batch/v1",
            "Job",
            "train",
            uid,
            True,
        )
        assert pod.spec.scheduler_name == "gangplank" and pod.status.phase == "Pending"
    assert [sorted(g.pods) for g in jobs.generations("train")] == [names(jobs)], "one sync"
    status = jobs.job("train")["status"]
    assert (status["active"], status["ready"], "failed" in status) == (3, 0, False)


@pytest.mark.parametrize(
    "end",
    ["evicted", "deleted", "reported Failed"],
    ids=[
        "a pod evicted through the Eviction API",
        "a pod deleted (kubectl delete, a node drained)",
        "a pod its kubelet reports Failed",
    ],
)
def test_a_pod_that_ends_without_succeeding_counts_as_one_failure_and_its_replacement_waits_10_seconds(  # noqa: E501
    fake_api: FakeApiServer, jobs: JobController, clock: Clock, core: Any, end: str
) -> None:
    fake_api.put("jobs", batch_job("train", 1))
    at(jobs, clock, 0)
    (first,) = names(jobs)
    if end == "evicted":
        evict(core, jobs)
    elif end == "deleted":
        core.delete_namespaced_pod(first, "default")
    else:
        pod = jobs.pods("train")[0]
        fake_api.put("pods", {**pod, "status": {"phase": "Failed", "reason": "Error"}})
    at(jobs, clock, 1)
    assert jobs.failed("train") == 1
    assert jobs.next_try("train") == START + 11
    at(jobs, clock, 10.9)
    assert len(jobs.generations("train")) == 1, "not before the backoff is over"
    assert jobs.failed("train") == 1, "counted once"
    at(jobs, clock, 11)
    (second,) = jobs.generations("train")[1].pods
    assert second != first and jobs.generations("train")[1].at == START + 11
    assert jobs.job("train")["status"]["active"] == 1


def test_a_job_with_the_default_backoff_limit_whose_four_pods_are_evicted_twice_is_failed_with_backoff_limit_exceeded(  # noqa: E501
    fake_api: FakeApiServer, jobs: JobController, clock: Clock, core: Any, batch: Any
) -> None:
    """What gangplank's requeue by eviction did to a 4-pod Job: the first eviction is 4
    failures (the new pods wait 80 s), the second makes 8, past the default backoffLimit of 6."""
    fake_api.put("jobs", batch_job("train", 4))
    at(jobs, clock, 0)
    evict(core, jobs)
    at(jobs, clock, 1)
    assert jobs.failed("train") == 4 and jobs.pods("train") == []
    assert jobs.next_try("train") == START + 81, "10 s x 2^3"
    at(jobs, clock, 81)
    assert len(jobs.pods("train")) == 4 and jobs.conditions("train") == []
    evict(core, jobs)
    at(jobs, clock, 82)
    read = batch.read_namespaced_job("train", "default")
    assert read.status.failed == 8
    assert [(c.type, c.status, c.reason) for c in read.status.conditions] == FAILED_FOR_GOOD
    assert read.status.conditions[1].message == "Job has reached the specified backoff limit"
    at(jobs, clock, 2000)
    assert jobs.pods("train") == [] and len(jobs.generations("train")) == 2, "never again"


def test_a_job_past_its_limit_with_pods_left_deletes_them_and_counts_them_failed(
    fake_api: FakeApiServer, jobs: JobController, clock: Clock, core: Any
) -> None:
    fake_api.put("jobs", batch_job("train", 4))
    at(jobs, clock, 0)
    evict(core, jobs)
    at(jobs, clock, 1)
    at(jobs, clock, 81)
    evict(core, jobs, count=3)  # 7 failures > 6
    at(jobs, clock, 82)
    assert jobs.pods("train") == []
    assert jobs.failed("train") == 8, "the pod left is deleted and counted failed"
    assert jobs.conditions("train") == FAILED_FOR_GOOD


def test_a_success_clears_the_backoff_so_the_next_pod_is_made_at_once(
    fake_api: FakeApiServer, jobs: JobController, clock: Clock, core: Any
) -> None:
    fake_api.put("jobs", batch_job("train", 1, completions=3))
    at(jobs, clock, 0)
    evict(core, jobs)
    at(jobs, clock, 1)
    at(jobs, clock, 11)
    (pod,) = jobs.pods("train")
    fake_api.put("pods", {**pod, "status": {"phase": "Succeeded"}})
    at(jobs, clock, 12)
    assert (jobs.failed("train"), jobs.succeeded("train")) == (1, 1)
    assert [g.at - START for g in jobs.generations("train")] == [0, 11, 12], "no wait"


def test_a_job_whose_pods_all_succeed_is_complete(
    fake_api: FakeApiServer, jobs: JobController, clock: Clock
) -> None:
    fake_api.put("jobs", batch_job("train", 2, completions=2))
    at(jobs, clock, 0)
    for pod in jobs.pods("train"):
        fake_api.put("pods", {**pod, "status": {"phase": "Succeeded"}})
    at(jobs, clock, 5)
    assert jobs.succeeded("train") == 2
    assert jobs.conditions("train") == [
        ("SuccessCriteriaMet", "True", ""),
        ("Complete", "True", ""),
    ]
    assert "active" not in jobs.job("train")["status"]


def test_a_job_managed_by_another_controller_is_left_alone(
    fake_api: FakeApiServer, jobs: JobController, clock: Clock
) -> None:
    job = batch_job("train", 4)
    job["spec"]["managedBy"] = "kueue.x-k8s.io/multikueue"
    fake_api.put("jobs", job)
    at(jobs, clock, 0)
    assert jobs.pods("train") == [] and jobs.job("train")["status"] == {}


def test_a_controller_told_which_jobs_it_manages_leaves_the_others_alone(
    fake_api: FakeApiServer, clock: Clock
) -> None:
    fake_api.put("jobs", batch_job("train", 2))
    fake_api.put("jobs", batch_job("sized-only", 4))  # its pods are the test's own
    jobs = JobController(fake_api, clock=clock, only={"default/train"})
    at(jobs, clock, 0)
    assert len(jobs.pods("train")) == 2
    assert jobs.pods("sized-only") == [] and jobs.job("sized-only")["status"] == {}


# ---- suspension ----


def test_a_suspended_job_s_pods_are_gone_without_a_failure_and_its_resume_recreates_them_at_once(
    fake_api: FakeApiServer, jobs: JobController, clock: Clock, batch: Any
) -> None:
    fake_api.put("jobs", batch_job("train", 4))
    at(jobs, clock, 0)
    batch.patch_namespaced_job("train", "default", {"spec": {"suspend": True}})
    at(jobs, clock, 1)
    assert jobs.pods("train") == [] and jobs.failed("train") == 0
    assert jobs.conditions("train") == [("Suspended", "True", "JobSuspended")]
    assert "active" not in jobs.job("train")["status"], "0: left out"
    at(jobs, clock, 30)
    assert jobs.pods("train") == [], "suspended: no pods"
    batch.patch_namespaced_job("train", "default", {"spec": {"suspend": False}})
    at(jobs, clock, 31)
    assert len(jobs.pods("train")) == 4, "at once: no failure, no backoff"
    assert [g.at - START for g in jobs.generations("train")] == [0, 31]
    assert jobs.conditions("train") == [("Suspended", "False", "JobResumed")]
    status = jobs.job("train")["status"]
    assert (status["active"], status.get("failed", 0)) == (4, 0)
    assert status["startTime"] == "2027-01-15T08:00:31Z", "the resume resets startTime"


def test_a_job_created_suspended_gets_no_pods_and_no_start_time_until_resumed(
    fake_api: FakeApiServer, jobs: JobController, clock: Clock, batch: Any
) -> None:
    fake_api.put("jobs", batch_job("train", 4, suspend=True))
    at(jobs, clock, 0)
    assert jobs.pods("train") == [] and "startTime" not in jobs.job("train")["status"]
    assert jobs.conditions("train") == [("Suspended", "True", "JobSuspended")]
    batch.patch_namespaced_job("train", "default", {"spec": {"suspend": False}})
    at(jobs, clock, 2)
    assert len(jobs.pods("train")) == 4


def test_a_job_resumed_soon_after_a_failure_waits_out_the_rest_of_its_backoff(
    fake_api: FakeApiServer, jobs: JobController, clock: Clock, core: Any, batch: Any
) -> None:
    """The backoff record is the controller's, kept across a suspension."""
    fake_api.put("jobs", batch_job("train", 4))
    at(jobs, clock, 0)
    evict(core, jobs, count=1)
    at(jobs, clock, 1)  # 1 failure: 10 s
    batch.patch_namespaced_job("train", "default", {"spec": {"suspend": True}})
    at(jobs, clock, 2)
    assert jobs.failed("train") == 1, "the suspension added none"
    batch.patch_namespaced_job("train", "default", {"spec": {"suspend": False}})
    at(jobs, clock, 4)
    assert jobs.pods("train") == [] and jobs.next_try("train") == START + 11
    at(jobs, clock, 11)
    assert len(jobs.pods("train")) == 4


# ---- live ----


@pytest.fixture
def live(fake_api: FakeApiServer) -> Iterator[JobController]:
    with JobController(fake_api, scale=0.01) as controller:
        yield controller


def test_live_an_error_in_the_controller_s_thread_is_raised_when_it_stops(
    fake_api: FakeApiServer,
) -> None:
    fake_api.put("jobs", {"metadata": {"name": "broken", "namespace": "default"}, "spec": 4})
    controller = JobController(fake_api)
    controller.start()
    wait_for(lambda: not controller.is_alive())
    with pytest.raises(RuntimeError, match="stopped on an error") as raised:
        controller.stop()
    assert isinstance(raised.value.__cause__, AttributeError)


def wait_for(what: Any, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not what():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_live_a_four_pod_job_evicted_twice_fails_and_its_new_pods_waited_the_scaled_backoff(
    fake_api: FakeApiServer, live: JobController, core: Any
) -> None:
    """scale 0.01: the 80 s after four failures is 0.8 s."""
    fake_api.put("jobs", batch_job("train", 4))
    wait_for(lambda: len(live.pods("train")) == 4)
    evict(core, live)
    wait_for(lambda: len(live.generations("train")) == 2)
    waited = live.generations("train")[1].at - live.generations("train")[0].at
    assert 0.8 <= waited < 2.0
    wait_for(lambda: len(live.pods("train")) == 4)
    evict(core, live)
    wait_for(lambda: live.conditions("train") == FAILED_FOR_GOOD)
    assert live.failed("train") == 8


# ---- Indexed Jobs ----


def test_an_indexed_job_made_smaller_removes_its_highest_indexes_uncounted_as_upstream_does(
    fake_api: FakeApiServer, jobs: JobController, clock: Clock, core: Any, batch: Any
) -> None:
    """Completions and parallelism lowered together (an elastic Indexed Job): the pods whose
    index is at or above the new completions go, and none counts as failed; a pod of an index
    still in range that is evicted does count."""
    fake_api.put("jobs", batch_job("train", 4, completions=4, indexed=True))
    at(jobs, clock, 0)
    pods = jobs.pods("train")
    indexes = sorted(p["metadata"]["annotations"][COMPLETION_INDEX] for p in pods)
    assert indexes == ["0", "1", "2", "3"]
    assert all(
        p["metadata"]["name"].startswith(f"train-{p['metadata']['labels'][COMPLETION_INDEX]}-")
        for p in pods
    )
    batch.patch_namespaced_job("train", "default", {"spec": {"completions": 2, "parallelism": 2}})
    at(jobs, clock, 1)
    left = sorted(p["metadata"]["annotations"][COMPLETION_INDEX] for p in jobs.pods("train"))
    assert left == ["0", "1"]
    assert jobs.failed("train") == 0
    evict(core, jobs, count=1)
    at(jobs, clock, 2)
    assert jobs.failed("train") == 1, "an index below completions evicted is a failure"


def test_a_nonindexed_job_made_smaller_removes_pods_in_its_active_pods_order_uncounted(
    fake_api: FakeApiServer, jobs: JobController, clock: Clock, batch: Any
) -> None:
    """Parallelism lowered from 4 to 2: the pod not ready goes first, then the one ready the
    shortest time (upstream's ActivePods order); the controller counts neither as failed."""
    fake_api.put("jobs", batch_job("train", 4))
    at(jobs, clock, 0)
    pods = sorted(jobs.pods("train"), key=lambda p: p["metadata"]["name"])
    for i, member in enumerate(pods):
        member["spec"]["nodeName"] = f"n{i}"
        ready = "False" if i == 2 else "True"
        since = f"2026-12-01T0{i}:00:00Z"
        member["status"] = {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": ready, "lastTransitionTime": since}],
        }
        fake_api.put("pods", member)
    batch.patch_namespaced_job("train", "default", {"spec": {"parallelism": 2}})
    at(jobs, clock, 1)
    left = sorted(p["metadata"]["name"] for p in jobs.pods("train"))
    assert left == [pods[0]["metadata"]["name"], pods[1]["metadata"]["name"]], (
        "the not-ready pod and the one ready since 03:00 went"
    )
    assert jobs.failed("train") == 0
