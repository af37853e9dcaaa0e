"""Small builders for API objects and core types used across the tests."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

from extender.core.model.gpu_use import GpuUse
from extender.core.model.snapshot import NodeInfo, PodInfo
from extender.core.preemption.evictions import Eviction
from extender.kube.convert import node_from_api, pod_from_api

FIXTURES = Path(__file__).parent / "data" / "kube-scheduler"
_ids = itertools.count(1)


def fixture(name: str) -> dict[str, Any]:
    """A request body a real kube-scheduler v1.36 sent (see data/kube-scheduler/NOTES.md)."""
    body: dict[str, Any] = json.loads((FIXTURES / name).read_text())
    return body


def pod(
    name: str = "",
    *,
    namespace: str = "default",
    node: str | None = None,
    cpu: str = "1",
    memory: str = "1Gi",
    gpu: int = 0,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    phase: str = "Pending",
    priority: int = 0,
    uid: str | None = None,
    job: str | None = None,
    created: str = "2026-12-01T10:00:00Z",
    node_selector: dict[str, str] | None = None,
    owner: tuple[str, str, str] | None = None,
) -> dict[str, Any]:
    """A Pod as the API server returns it (`job`: owned by that Job; `owner`: by that
    controller, (apiVersion, kind, name))."""
    n = next(_ids)
    requests: dict[str, str] = {"cpu": cpu, "memory": memory}
    if gpu:
        requests["nvidia.com/gpu"] = str(gpu)
    spec: dict[str, Any] = {
        "containers": [{"name": "main", "image": "train:1", "resources": {"requests": requests}}],
        "priority": priority,
        "schedulerName": "gangplank",
    }
    if node:
        spec["nodeName"] = node
    if node_selector:
        spec["nodeSelector"] = node_selector
    metadata: dict[str, Any] = {
        "name": name or f"pod-{n}",
        "namespace": namespace,
        "uid": uid or f"00000000-0000-4000-8000-{n:012d}",
        "labels": labels or {},
        "annotations": annotations or {},
        "creationTimestamp": created,
    }
    if job:
        owner = ("batch/v1", "Job", job)
    if owner:
        metadata["ownerReferences"] = [
            {
                "apiVersion": owner[0],
                "kind": owner[1],
                "name": owner[2],
                "uid": f"{owner[1].lower()}-{owner[2]}",
                "controller": True,
            }
        ]
    return {"metadata": metadata, "spec": spec, "status": {"phase": phase}}


def gang_pods(
    gang: str,
    count: int,
    size: int | None = None,
    *,
    gpu: int = 1,
    namespace: str = "default",
    labels: dict[str, str] | None = None,
    **kwargs: Any,
) -> list[dict[str, Any]]:
    """`count` members of gangplank gang `gang` of size `size` (default: count)."""
    return [
        pod(
            f"{gang}-{i}",
            namespace=namespace,
            gpu=gpu,
            labels={"gangplank.io/gang": gang, **(labels or {})},
            annotations={"gangplank.io/gang-size": str(size or count)},
            **kwargs,
        )
        for i in range(count)
    ]


def job(
    name: str, parallelism: int, *, namespace: str = "default", completions: int | None = None
) -> dict[str, Any]:
    spec: dict[str, Any] = {"parallelism": parallelism, "template": {}}
    if completions is not None:
        spec["completions"] = completions
    return {"metadata": {"name": name, "namespace": namespace}, "spec": spec}


def pod_group(
    name: str, min_member: object, *, namespace: str = "default", timeout: int | None = None
) -> dict[str, Any]:
    spec: dict[str, Any] = {"minMember": min_member}
    if timeout is not None:
        spec["scheduleTimeoutSeconds"] = timeout
    return {"metadata": {"name": name, "namespace": namespace}, "spec": spec}


def native_pod_group(
    name: str,
    min_count: int | None,
    *,
    namespace: str = "default",
    topology: str = "",
    priority_class: str = "",
) -> dict[str, Any]:
    """A Kubernetes 1.36 PodGroup (`scheduling.k8s.io/v1alpha2`); `min_count` None: `basic`."""
    policy: dict[str, Any] = (
        {"basic": {}} if min_count is None else {"gang": {"minCount": min_count}}
    )
    spec: dict[str, Any] = {"schedulingPolicy": policy, "disruptionMode": "PodGroup"}
    if topology:
        spec["schedulingConstraints"] = {"topology": [{"key": topology}]}
    if priority_class:
        spec["priorityClassName"] = priority_class
    return {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def native_member(name: str, group: str, **kwargs: Any) -> dict[str, Any]:
    """A pod naming its native PodGroup in `spec.schedulingGroup.podGroupName`."""
    out = pod(name, **kwargs)
    out["spec"]["schedulingGroup"] = {"podGroupName": group}
    return out


def node(
    name: str,
    *,
    cpu: str = "32",
    memory: str = "256Gi",
    gpu: int = 8,
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A Node as the API server returns it."""
    allocatable = {"cpu": cpu, "memory": memory, "pods": "110"}
    if gpu:
        allocatable["nvidia.com/gpu"] = str(gpu)
    return {
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": {},
        "status": {"allocatable": allocatable, "capacity": dict(allocatable)},
    }


def namespace(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name}}}


def priority_class(name: str, value: int) -> dict[str, Any]:
    return {"metadata": {"name": name}, "value": value}


def pod_info(**kwargs: Any) -> PodInfo:
    return pod_from_api(pod(**kwargs))


def node_info(name: str, **kwargs: Any) -> NodeInfo:
    return node_from_api(node(name, **kwargs))


def queue(
    name: str,
    *,
    parent: str | None = None,
    guarantee: dict[str, Any] | None = None,
    max: dict[str, Any] | None = None,
    weight: float | None = None,
    state: str | None = None,
    namespaces: list[str] | None = None,
    aliases: list[str] | None = None,
    lifecycle: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One queue entry of a policy, as a person writes it in YAML."""
    out: dict[str, Any] = {"name": name}
    for key, value in (
        ("parent", parent),
        ("guarantee", guarantee),
        ("max", max),
        ("weight", weight),
        ("state", state),
        ("namespaces", namespaces),
        ("aliases", aliases),
        ("lifecycle", lifecycle),
    ):
        if value is not None:
            out[key] = value
    return out


def policy_doc(*queues: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "gangplank.io/v1alpha1", "kind": "Policy", "queues": list(queues)}


def gpus(n: int) -> dict[str, Any]:
    return {"nvidia.com/gpu": n}


def nothing_to_preempt(queue: str, priority: int = 0) -> str:
    """What a quota refusal adds when no job may be preempted for the job refused."""
    return (
        f"; nothing may be preempted for it: no job of queue {queue} runs at a priority below "
        f"{priority} and may go (minRuntime, protected pods), and no queue borrows what it may "
        "take back"
    )


def eviction(name: str, namespace: str = "default") -> Eviction:
    """An eviction of single pod `name`, as preemption plans one (for tests of who carries it
    out, and when)."""
    return Eviction(
        job=f"pod:{namespace}/{name}",
        namespace=namespace,
        name=name,
        uid="",
        grace_seconds=None,
        rule="priority",
        queue="",
        gpu_seconds=0.0,
        message="evicted by gangplank (test)",
        preemptor=(namespace, "urgent"),
        preemptor_message="",
    )


def bound_pod(
    raw: dict[str, Any],
    node_name: str,
    started: float,
    *,
    ready: bool = True,
    waiting: str = "",
    restarts: int = 0,
    phase: str = "Running",
) -> dict[str, Any]:
    """`raw` bound to `node_name`, started at `started` (unix time), with its Ready condition and
    its container's state as the kubelet reports them."""
    from datetime import UTC, datetime

    stamp = datetime.fromtimestamp(started, UTC).isoformat().replace("+00:00", "Z")
    state: dict[str, Any] = {"waiting": {"reason": waiting}} if waiting else {"running": {}}
    return {
        **raw,
        "spec": {**raw["spec"], "nodeName": node_name},
        "status": {
            "phase": phase,
            "startTime": stamp,
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            "containerStatuses": [
                {"name": "main", "restartCount": restarts, "ready": ready, "state": state}
            ],
        },
    }


class FixedGpuUse:
    """A reader of GPU use (`service/lifecycle_io.UseReader`) that always answers `use`, and
    remembers the windows it was asked about."""

    def __init__(self, use: GpuUse) -> None:
        self.use = use
        self.windows: list[float] = []

    def read(self, window_seconds: float, now: float) -> GpuUse:
        self.windows.append(window_seconds)
        return self.use
