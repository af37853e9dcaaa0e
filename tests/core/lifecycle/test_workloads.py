"""Which workload a job is, and how it is requeued: what its pods carry (the controller's
ownerReference with its apiVersion, and labels) says whether it is suspended through a workload
object, which one, and where its suspend flag is; anything else is evicted."""

from __future__ import annotations

from typing import Any

import pytest

from extender.core.lifecycle.workloads import Workload, workload_of
from extender.core.model.snapshot import PodInfo
from extender.kube.convert import pod_from_api
from tests.builders import pod


def pods(
    owner: tuple[str, str, str] | None, count: int = 2, labels: dict[str, str] | None = None
) -> list[PodInfo]:
    return [
        pod_from_api(pod(f"w-{i}", namespace="ml", owner=owner, labels=labels))
        for i in range(count)
    ]


CASES: list[tuple[list[PodInfo], Workload | None, dict[str, Any]]] = [
    (
        pods(("batch/v1", "Job", "train")),
        Workload("Job", "batch/v1", "ml", "train"),
        {"spec": {"suspend": True}},
    ),
    (
        pods(
            ("batch/v1", "Job", "train-workers-0"),
            labels={"jobset.sigs.k8s.io/jobset-name": "train"},
        ),
        Workload("JobSet", "jobset.x-k8s.io/v1alpha2", "ml", "train"),
        {"spec": {"suspend": True}},
    ),
    *(
        (
            pods(("kubeflow.org/v1", kind, "train")),
            Workload(kind, "kubeflow.org/v1", "ml", "train"),
            {"spec": {"runPolicy": {"suspend": True}}},
        )
        for kind in ("PyTorchJob", "TFJob", "XGBoostJob", "PaddleJob", "JAXJob")
    ),
    (
        pods(("kubeflow.org/v2beta1", "MPIJob", "train"))
        + pods(
            ("batch/v1", "Job", "train-launcher"),
            1,
            labels={"training.kubeflow.org/job-name": "train"},
        ),
        Workload("MPIJob", "kubeflow.org/v2beta1", "ml", "train"),
        {"spec": {"runPolicy": {"suspend": True}}},
    ),
    (
        pods(
            ("ray.io/v1", "RayCluster", "sweep-raycluster-x7k2p"),
            labels={
                "ray.io/originated-from-crd": "RayJob",
                "ray.io/originated-from-cr-name": "sweep",
            },
        ),
        None,
        {},
    ),
    (
        pods(("ray.io/v1", "RayCluster", "lab")),
        Workload("RayCluster", "ray.io/v1", "ml", "lab"),
        {"spec": {"suspend": True}},
    ),
    (pods(None), None, {}),
    (pods(("apps/v1", "StatefulSet", "lws-0")), None, {}),
    (
        pods(
            ("ray.io/v1", "RayCluster", "serve-raycluster-abcde"),
            labels={
                "ray.io/originated-from-crd": "RayService",
                "ray.io/originated-from-cr-name": "s",
            },
        ),
        None,
        {},
    ),
    (pods(("batch/v1beta1", "Job", "train")), None, {}),
    (pods(("batch/v1", "Job", "a"), 1) + pods(("batch/v1", "Job", "b"), 1), None, {}),
    (pods(("batch/v1", "Job", "a"), 1) + pods(None, 1), None, {}),
]


@pytest.mark.parametrize(
    ("members", "expected", "suspend"),
    CASES,
    ids=[
        "a batch/v1 Job's pods are requeued by suspending the Job (spec.suspend)",
        "the pods of a Job a JobSet made are requeued through the JobSet, never the child Job",
        "a PyTorchJob is suspended at spec.runPolicy.suspend",
        "a TFJob is suspended at spec.runPolicy.suspend",
        "an XGBoostJob is suspended at spec.runPolicy.suspend",
        "a PaddleJob is suspended at spec.runPolicy.suspend",
        "a JAXJob is suspended at spec.runPolicy.suspend",
        "an MPIJob's workers and the launcher Job it made are requeued through the MPIJob",
        "a RayJob's cluster is evicted: KubeRay may fail a suspended RayJob",
        "a RayCluster on its own is suspended itself (spec.suspend, KubeRay 1.1 and later)",
        "a gang of bare pods has no workload: its pods are evicted",
        "a kind without suspend (a StatefulSet) is evicted",
        "a RayService's cluster is evicted (the RayService replaces it on its own)",
        "a kind at an apiVersion not known to have the field is evicted",
        "pods of two Jobs in one gang are evicted, never one Job suspended for both",
        "a Job's pods with a bare pod in the same gang are evicted",
    ],
)
def test_which_workload_a_job_is_and_where_it_is_suspended(
    members: list[PodInfo], expected: Workload | None, suspend: dict[str, Any]
) -> None:
    found = workload_of(members)
    assert found == expected
    if found is not None:
        assert found.patch(True) == suspend


def test_how_a_person_runs_a_held_workload_again_names_its_resource_and_field() -> None:
    job = Workload("Job", "batch/v1", "ml", "train")
    assert job.resume_command() == (
        'kubectl patch jobs.batch train -n ml --type=merge -p \'{"spec":{"suspend":false}}\''
    )
    torch = Workload("PyTorchJob", "kubeflow.org/v1", "ml", "bert")
    assert torch.resume_command() == (
        "kubectl patch pytorchjobs.kubeflow.org bert -n ml --type=merge "
        '-p \'{"spec":{"runPolicy":{"suspend":false}}}\''
    )


@pytest.mark.parametrize(
    "data",
    [
        {"kind": "Deployment", "apiVersion": "apps/v1", "namespace": "ml", "name": "x"},
        {"kind": "Job", "apiVersion": "batch/v1", "namespace": "ml"},
        {"kind": "Job", "apiVersion": 1, "namespace": "ml", "name": "x"},
        "Job ml/x",
    ],
    ids=[
        "a kind gangplank does not suspend",
        "no name",
        "an apiVersion that is no string",
        "no object",
    ],
)
def test_a_workload_in_a_record_edited_by_hand_is_refused(data: object) -> None:
    with pytest.raises(ValueError):
        Workload.from_json(data)
