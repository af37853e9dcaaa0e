"""A pod's request of its node is computed as kube-scheduler computes it."""

from __future__ import annotations

from typing import Any

import pytest

from extender.core.model.snapshot import JobInfo, PyTorchJobInfo
from extender.kube.convert import (
    ConversionError,
    job_from_api,
    node_from_api,
    pod_from_api,
    pod_requests,
    pytorch_job_from_api,
)


def container(cpu: str, memory: str = "1Gi", **extra: Any) -> dict[str, Any]:
    return {"name": "c", "resources": {"requests": {"cpu": cpu, "memory": memory}}, **extra}


def test_containers_add_up_and_every_pod_takes_one_pod_slot() -> None:
    spec = {"containers": [container("1"), container("500m", "512Mi")]}
    assert pod_requests(spec) == {"cpu": 1500, "memory": 2**30 + 2**29, "pods": 1}


def test_a_limit_without_a_request_counts_as_the_request() -> None:
    spec = {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "2"}}}]}
    assert pod_requests(spec)["nvidia.com/gpu"] == 2


def test_an_init_container_larger_than_the_containers_sets_the_request() -> None:
    spec = {"containers": [container("1")], "initContainers": [container("4")]}
    assert pod_requests(spec)["cpu"] == 4000


def test_sidecars_add_to_containers_and_to_later_init_containers() -> None:
    spec = {
        "containers": [container("1")],
        "initContainers": [container("2", restartPolicy="Always"), container("2")],
    }
    # regular 1 + sidecar 2 = 3; the init container runs beside the sidecar: 2 + 2 = 4
    assert pod_requests(spec)["cpu"] == 4000


def test_overhead_is_added_and_pod_level_requests_replace_container_sums() -> None:
    spec = {
        "containers": [container("1", "1Gi")],
        "overhead": {"cpu": "100m"},
        "resources": {"requests": {"cpu": "3"}},
    }
    requests = pod_requests(spec)
    assert requests["cpu"] == 3100
    assert requests["memory"] == 2**30


def test_a_node_reads_allocatable_labels_taints_and_cordon() -> None:
    info = node_from_api(
        {
            "metadata": {"name": "g1", "labels": {"rack": "r1"}},
            "spec": {
                "unschedulable": True,
                "taints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}],
            },
            "status": {"allocatable": {"cpu": "8", "nvidia.com/gpu": "4"}},
        }
    )
    assert info.allocatable == {"cpu": 8000, "nvidia.com/gpu": 4}
    assert info.labels == {"rack": "r1"} and info.unschedulable
    assert info.taints[0].key == "nvidia.com/gpu"


def test_a_pod_reads_owner_priority_phase_and_deletion() -> None:
    info = pod_from_api(
        {
            "metadata": {
                "name": "w-0",
                "namespace": "ml",
                "uid": "u1",
                "deletionTimestamp": "2026-12-01T10:00:00Z",
                "creationTimestamp": "2026-12-01T09:00:00Z",
                "ownerReferences": [
                    {"kind": "Job", "name": "train", "uid": "j1", "controller": True}
                ],
            },
            "spec": {"containers": [], "priority": 100, "nodeName": "g1"},
            "status": {"phase": "Running"},
        }
    )
    assert info.key == "ml/w-0" and info.priority == 100 and info.node_name == "g1"
    assert info.owner is not None and info.owner.kind == "Job" and info.deleting
    assert info.created == 1_796_115_600.0 and info.holds_resources  # 2026-12-01T09:00:00Z


def running(**status: Any) -> dict[str, Any]:
    return {"metadata": {"name": "w-0"}, "status": {"phase": "Running", **status}}


def test_a_pod_is_ready_when_its_ready_condition_is_true() -> None:
    scheduled = {"type": "PodScheduled", "status": "True"}
    assert pod_from_api(running(conditions=[scheduled, {"type": "Ready", "status": "True"}])).ready
    for conditions in (
        [scheduled],
        [{"type": "Ready", "status": "False"}],
        [{"type": "ContainersReady", "status": "True"}],
        [{"type": "Ready", "status": True}, "Ready"],
        {"Ready": "True"},
    ):
        assert not pod_from_api(running(conditions=conditions)).ready, conditions
    assert not pod_from_api(running()).ready


@pytest.mark.parametrize(
    ("volumes", "local"),
    [
        ([{"name": "scratch", "emptyDir": {}}], True),
        ([{"name": "data", "hostPath": {"path": "/data"}}], True),
        ([{"name": "ckpt", "persistentVolumeClaim": {"claimName": "ckpt"}}], False),
        ([{"name": "cfg", "configMap": {"name": "cfg"}}], False),
        (None, False),
    ],
    ids=[
        "an emptyDir volume is local storage a move would lose",
        "a hostPath volume is local storage",
        "a claim is not known to be local (a local PV names no node on the pod)",
        "a config map is no local storage",
        "a pod without volumes has none",
    ],
)
def test_a_pod_says_whether_it_keeps_data_on_its_node(
    volumes: list[dict[str, Any]] | None, local: bool
) -> None:
    raw: dict[str, Any] = {"metadata": {"name": "w-0"}, "spec": {}}
    if volumes is not None:
        raw["spec"]["volumes"] = volumes
    assert pod_from_api(raw).local_storage is local


def test_the_waiting_reason_is_that_of_the_first_container_waiting_with_one() -> None:
    def waiting(reason: object) -> dict[str, Any]:
        return {"name": "c", "state": {"waiting": {"reason": reason, "message": "..."}}}

    started = {"name": "c", "restartCount": 1, "state": {"running": {"startedAt": "now"}}}
    assert pod_from_api(running()).waiting_reason == ""
    assert pod_from_api(running(containerStatuses=[started])).waiting_reason == ""
    assert (
        pod_from_api(
            running(containerStatuses=[started, waiting(""), waiting("ImagePullBackOff")])
        ).waiting_reason
        == "ImagePullBackOff"
    )
    # Init containers come first.
    both = running(
        initContainerStatuses=[{"name": "i", "state": {"terminated": {}}}, waiting("ErrImagePull")],
        containerStatuses=[waiting("PodInitializing")],
    )
    assert pod_from_api(both).waiting_reason == "ErrImagePull"
    # What is not a reason counts as none.
    odd = running(
        containerStatuses=[waiting(7), {"state": "waiting"}, "c", waiting("CrashLoopBackOff")]
    )
    assert pod_from_api(odd).waiting_reason == "CrashLoopBackOff"


@pytest.mark.parametrize(
    "raw,message",
    [
        ({"metadata": {"name": "x", "creationTimestamp": "yesterday"}}, "not an RFC 3339 time"),
        ({"metadata": {"name": "x"}, "spec": {"tolerations": ["all"]}}, "tolerations[0]"),
        ({"metadata": {"name": "x"}, "spec": {"priority": 2**40}}, "int32"),
    ],
    ids=[
        "a creation time that is not a time",
        "a toleration that is not an object",
        "a priority beyond int32",
    ],
)
def test_unreadable_pods_name_the_field(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(ConversionError, match=message.replace("[", r"\[").replace("]", r"\]")):
        pod_from_api(raw)


@pytest.mark.parametrize(
    ("spec", "needs"),
    [
        ({}, False),
        ({"volumes": [{"name": "cfg", "configMap": {"name": "cfg"}}]}, False),
        ({"volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "d"}}]}, True),
        ({"volumes": [{"name": "s", "ephemeral": {"volumeClaimTemplate": {}}}]}, True),
        ({"resourceClaims": [{"name": "gpu", "resourceClaimName": "c"}]}, True),
    ],
    ids=[
        "a pod with no volumes needs nothing of kube-scheduler's bind cycle",
        "a config map volume needs nothing of it either",
        "a claim's volume does: the claim may wait for its first consumer",
        "an ephemeral volume's claim does too",
        "a DRA claim does: it is allocated there",
    ],
)
def test_a_pod_that_needs_kube_schedulers_bind_cycle_is_told_apart(
    spec: dict[str, Any], needs: bool
) -> None:
    raw = {"metadata": {"name": "p", "uid": "u"}, "spec": {"containers": [], **spec}}
    assert pod_from_api(raw).needs_bind_cycle is needs


PYTORCH = [
    (
        "an elastic PyTorchJob: its bounds, its masters, gangplank's record of its size",
        {
            "metadata": {"name": "pt", "annotations": {"gangplank.io/shrunk-from": "4"}},
            "spec": {
                "elasticPolicy": {"minReplicas": 1, "maxReplicas": 4},
                "pytorchReplicaSpecs": {"Master": {}, "Worker": {"replicas": 3}},
            },
        },
        PyTorchJobInfo("default", "pt", 3, 1, 1, 4, elastic=True, shrunk_from=4),
    ),
    (
        "one without elasticPolicy, its Worker replicas left to the default of 1",
        {
            "metadata": {"name": "pt", "namespace": "ml"},
            "spec": {"pytorchReplicaSpecs": {"Worker": {}}},
        },
        PyTorchJobInfo("ml", "pt", 1),
    ),
]


@pytest.mark.parametrize("raw,read", [c[1:] for c in PYTORCH], ids=[c[0] for c in PYTORCH])
def test_a_pytorchjob_reads_its_replicas_and_elastic_policy(
    raw: dict[str, Any], read: PyTorchJobInfo
) -> None:
    assert pytorch_job_from_api(raw) == read


def test_a_pytorchjob_with_a_bound_that_is_no_whole_number_is_refused_by_name() -> None:
    raw = {"metadata": {"name": "pt"}, "spec": {"elasticPolicy": {"minReplicas": "two"}}}
    with pytest.raises(ConversionError, match="minReplicas must be a whole number, not 'two'"):
        pytorch_job_from_api(raw)


def test_a_job_reads_its_completion_mode_kueues_minimum_and_gangplanks_record() -> None:
    annotations = {"kueue.x-k8s.io/job-min-parallelism": "2", "gangplank.io/shrunk-from": "x"}
    raw = {
        "metadata": {"name": "el", "annotations": annotations},
        "spec": {"parallelism": 3, "completions": 3, "completionMode": "Indexed"},
    }
    assert job_from_api(raw) == JobInfo("default", "el", 3, 3, True, "2", 0)
