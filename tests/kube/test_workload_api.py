"""Workloads on the fake API server, through the real Kubernetes client over HTTP: a Job or a
custom resource (JobSet, PyTorchJob, RayJob, RayCluster...) is read, listed and watched in its
namespace and merge-patched as the API server does it (`kubectl patch --type=merge`): its status
apart, resourceVersion and generation bumped on a change, a clear error for what is refused, and
every PATCH recorded as sent."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from extender.sim.apiserver import MERGE_PATCH, STRATEGIC_MERGE_PATCH, Patched
from tests.fakeapi import FakeApiServer
from tests.job_controller import batch_job


def clients(api: FakeApiServer) -> tuple[Any, Any]:
    """(BatchV1Api, CustomObjectsApi) on the fake API server."""
    api_client = client.ApiClient(client.Configuration(host=api.url))
    return client.BatchV1Api(api_client), client.CustomObjectsApi(api_client)


def custom(api_version: str, kind: str, name: str, namespace: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"suspend": False, "replicas": 4},
        "status": {"conditions": []},
    }


CUSTOM = [
    ("jobset.x-k8s.io", "v1alpha2", "jobsets", "JobSet"),
    ("kubeflow.org", "v1", "pytorchjobs", "PyTorchJob"),
    ("kubeflow.org", "v1", "tfjobs", "TFJob"),
    ("ray.io", "v1", "rayjobs", "RayJob"),
    ("ray.io", "v1", "rayclusters", "RayCluster"),
]
CUSTOM_IDS = [
    "a JobSet",
    "a Kubeflow PyTorchJob",
    "a Kubeflow TFJob",
    "a RayJob",
    "a RayCluster",
]


def send(
    api: FakeApiServer, path: str, body: bytes, content_type: str
) -> tuple[int, dict[str, Any]]:
    """A PATCH as any client could send it: (status, the answer's JSON)."""
    request = urllib.request.Request(
        api.url + path, data=body, method="PATCH", headers={"Content-Type": content_type}
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


JOB_PATH = "/apis/batch/v1/namespaces/default/jobs/train"


# ---- Jobs ----


def test_a_merge_patch_of_spec_suspend_through_batch_v1_api_reaches_the_stored_job(
    fake_api: FakeApiServer,
) -> None:
    stored = fake_api.put("jobs", batch_job("train", 4))
    batch, _ = clients(fake_api)
    answer = batch.patch_namespaced_job("train", "default", {"spec": {"suspend": True}})
    assert answer.spec.suspend is True and answer.spec.parallelism == 4
    job = fake_api.object("jobs", "default", "train")
    assert job is not None and job["spec"]["suspend"] is True
    assert int(job["metadata"]["resourceVersion"]) > int(stored["metadata"]["resourceVersion"])
    assert job["metadata"]["generation"] == 2, "the spec changed"
    assert job["metadata"]["uid"] == stored["metadata"]["uid"]
    assert fake_api.patches_of("jobs") == [
        Patched("jobs", "default", "train", "", STRATEGIC_MERGE_PATCH, {"spec": {"suspend": True}})
    ], "the client sends a dict body as a strategic merge patch"
    assert fake_api.workload_calls("jobs") == [("PATCH", JOB_PATH)]


def test_a_job_is_read_and_listed_in_its_namespace_and_an_unknown_one_is_404(
    fake_api: FakeApiServer,
) -> None:
    fake_api.put("jobs", batch_job("train", 4))
    fake_api.put("jobs", batch_job("train", 2, namespace="other"))
    batch, _ = clients(fake_api)
    assert batch.read_namespaced_job("train", "other").spec.parallelism == 2
    assert [j.metadata.namespace for j in batch.list_namespaced_job("other").items] == ["other"]
    assert len(batch.list_job_for_all_namespaces().items) == 2
    with pytest.raises(ApiException) as missing:
        batch.read_namespaced_job("nope", "default")
    assert missing.value.status == 404
    assert json.loads(str(missing.value.body))["message"] == 'jobs.batch "nope" not found'
    with pytest.raises(ApiException) as unpatched:
        batch.patch_namespaced_job("nope", "default", {"spec": {"suspend": True}})
    assert unpatched.value.status == 404


def test_a_status_patch_changes_only_the_status_and_a_patch_of_the_job_leaves_the_status(
    fake_api: FakeApiServer,
) -> None:
    fake_api.put("jobs", batch_job("train", 4))
    batch, _ = clients(fake_api)
    batch.patch_namespaced_job_status(
        "train", "default", {"status": {"failed": 4}, "spec": {"parallelism": 1}}
    )
    job = fake_api.object("jobs", "default", "train")
    assert job is not None
    assert (job["status"]["failed"], job["spec"]["parallelism"]) == (4, 4)
    assert job["metadata"]["generation"] == 1, "no spec change"
    batch.patch_namespaced_job("train", "default", {"spec": {"suspend": True}, "status": {}})
    job = fake_api.object("jobs", "default", "train")
    assert job is not None and job["status"] == {"failed": 4}
    assert [p.subresource for p in fake_api.patches_of("jobs")] == ["status", ""]


def test_a_patch_that_changes_nothing_bumps_no_resource_version(fake_api: FakeApiServer) -> None:
    before = fake_api.put("jobs", batch_job("train", 4))
    batch, _ = clients(fake_api)
    batch.patch_namespaced_job("train", "default", {"spec": {"suspend": False}})
    job = fake_api.object("jobs", "default", "train")
    assert (
        job is not None
        and job["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    )


def test_a_watch_of_a_namespace_s_jobs_sees_the_patch_and_nothing_of_another_namespace(
    fake_api: FakeApiServer,
) -> None:
    fake_api.put("jobs", batch_job("train", 4))
    fake_api.put("jobs", batch_job("train", 4, namespace="other"))
    batch, _ = clients(fake_api)
    listed = batch.list_namespaced_job("default")
    batch.patch_namespaced_job("train", "other", {"spec": {"suspend": True}})
    batch.patch_namespaced_job("train", "default", {"spec": {"suspend": True}})
    stream = batch.list_namespaced_job(
        "default",
        watch=True,
        resource_version=listed.metadata.resource_version,
        timeout_seconds=2,
        _preload_content=False,
    )
    first = json.loads(stream.readline())  # the first event: the other namespace's is skipped
    stream.release_conn()
    job = first["object"]
    assert (first["type"], job["metadata"]["namespace"], job["spec"]["suspend"]) == (
        "MODIFIED",
        "default",
        True,
    )


@pytest.mark.parametrize(
    ("body", "content_type", "status", "says"),
    [
        (b'{"spec": {"suspend": tru', MERGE_PATCH, 400, "the patch is not JSON"),
        (b'[{"op": "replace"}]', MERGE_PATCH, 400, "a merge patch must be a JSON object"),
        (b'{"metadata": {"name": "other"}}', MERGE_PATCH, 400, "metadata.name"),
        (
            b'[{"op": "replace", "path": "/spec/suspend", "value": true}]',
            "application/json-patch+json",
            415,
            "accepted media types here include: application/merge-patch+json, "
            "application/strategic-merge-patch+json",
        ),
        (b"spec: {suspend: true}", "application/apply-patch+yaml", 415, "unknown format"),
        (
            b'{"metadata": {"resourceVersion": "1"}, "spec": {"suspend": true}}',
            MERGE_PATCH,
            409,
            'Operation cannot be fulfilled on jobs.batch "train": the object has been modified',
        ),
    ],
    ids=[
        "a body that is not JSON is refused 400 with the parser's reason",
        "a merge patch that is not an object is refused 400",
        "a patch renaming the object is refused 400",
        "a JSON patch is refused 415 naming the media types that are served",
        "a server-side apply is refused 415",
        "a patch naming an old resourceVersion is refused 409 Conflict",
    ],
)
def test_a_patch_the_server_cannot_apply_is_refused_with_the_reason_and_changes_nothing(
    fake_api: FakeApiServer, body: bytes, content_type: str, status: int, says: str
) -> None:
    before = fake_api.put("jobs", batch_job("train", 4))
    code, answer = send(fake_api, JOB_PATH, body, content_type)
    assert (code, answer["kind"], answer["code"]) == (status, "Status", status)
    assert says in answer["message"], answer["message"]
    assert fake_api.object("jobs", "default", "train") == before
    assert len(fake_api.patches_of("jobs")) == 1, "recorded, refused or not"


# ---- custom resources ----


@pytest.mark.parametrize(("group", "version", "plural", "kind"), CUSTOM, ids=CUSTOM_IDS)
def test_a_merge_patch_of_spec_suspend_through_custom_objects_api_reaches_the_stored_object(
    fake_api: FakeApiServer, group: str, version: str, plural: str, kind: str
) -> None:
    stored = fake_api.put(plural, custom(f"{group}/{version}", kind, "train"))
    _, objects = clients(fake_api)
    answer = objects.patch_namespaced_custom_object(
        group, version, "default", plural, "train", {"spec": {"suspend": True}}
    )
    assert answer["spec"] == {"suspend": True, "replicas": 4}
    found = fake_api.object(plural, "default", "train")
    assert found is not None and found["spec"]["suspend"] is True
    assert int(found["metadata"]["resourceVersion"]) > int(stored["metadata"]["resourceVersion"])
    assert objects.get_namespaced_custom_object(group, version, "default", plural, "train") == found
    listed = objects.list_namespaced_custom_object(group, version, "default", plural)
    assert [o["metadata"]["name"] for o in listed["items"]] == ["train"]
    assert fake_api.patches_of(plural) == [
        Patched(plural, "default", "train", "", MERGE_PATCH, {"spec": {"suspend": True}})
    ], "CustomObjectsApi sends a merge patch"


def test_a_custom_resource_refuses_a_strategic_merge_patch_as_the_api_server_does(
    fake_api: FakeApiServer,
) -> None:
    """Custom resources have no strategic merge: `kubectl patch` of a JobSet needs
    --type=merge, and so does a client that forces the content type."""
    fake_api.put("jobsets", custom("jobset.x-k8s.io/v1alpha2", "JobSet", "train"))
    _, objects = clients(fake_api)
    with pytest.raises(ApiException) as refused:
        objects.patch_namespaced_custom_object(
            "jobset.x-k8s.io",
            "v1alpha2",
            "default",
            "jobsets",
            "train",
            {"spec": {"suspend": True}},
            _content_type=STRATEGIC_MERGE_PATCH,
        )
    assert refused.value.status == 415
    found = fake_api.object("jobsets", "default", "train")
    assert found is not None and found["spec"]["suspend"] is False


def test_a_custom_resource_whose_crd_is_not_installed_is_404(fake_api: FakeApiServer) -> None:
    fake_api.state.absent.add("rayjobs")
    _, objects = clients(fake_api)
    with pytest.raises(ApiException) as missing:
        objects.get_namespaced_custom_object("ray.io", "v1", "default", "rayjobs", "train")
    assert missing.value.status == 404
    with pytest.raises(ApiException) as unknown:
        objects.get_namespaced_custom_object("ray.io", "v1", "default", "raypets", "train")
    assert unknown.value.status == 404
