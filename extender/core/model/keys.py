"""Who a pod's job is: the keys the core files work under.

A job is the unit of admission: a gang (`gangplank:ns/name`, `volcano:ns/name`,
`coscheduling:ns/name`, `kueue:ns/name`, `job:ns/name`, `pytorch:ns/name`, `native:ns/name`: the
source, then the gang), or a pod alone (`pod:ns/name`). `JobKey` is any of them, `GangKey` one of
a gang; test which with `is_single`, never by the prefix.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NewType

from extender.core.model.snapshot import Owner, PodInfo
from extender.core.model.workload import QUEUE_LABELS

JobKey = NewType("JobKey", str)
GangKey = NewType("GangKey", JobKey)

SINGLE = "pod:"

GANG_LABEL = "gangplank.io/gang"
GANG_SIZE = "gangplank.io/gang-size"
GANG_MAX = "gangplank.io/gang-max"  # an elastic gang: members it may run beyond its size
VOLCANO_GROUP = "scheduling.k8s.io/group-name"
COSCHEDULING_GROUP = "scheduling.x-k8s.io/pod-group"
KUEUE_GROUP = "kueue.x-k8s.io/pod-group-name"
KUEUE_TOTAL = "kueue.x-k8s.io/pod-group-total-count"
KUEUE_QUEUE = "kueue.x-k8s.io/queue-name"  # on a workload Kueue manages
KUEUE_MIN_PARALLELISM = "kueue.x-k8s.io/job-min-parallelism"  # on a Job: its elastic minimum
# A Kubeflow training operator's pod: its job, its replica type (master, worker) and index
KUBEFLOW_JOB = "training.kubeflow.org/job-name"
KUBEFLOW_REPLICA_TYPE = "training.kubeflow.org/replica-type"
KUBEFLOW_REPLICA_INDEX = "training.kubeflow.org/replica-index"
SHRUNK_FROM = "gangplank.io/shrunk-from"  # on a workload gangplank made smaller: its size before
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"  # an Indexed Job's pod's index

# Larger than any real training job; a size beyond it is a typo, not a gang.
MAX_GANG_SIZE = 10_000


def group_key(pod: PodInfo) -> GangKey | None:
    """The gang a pod belongs to, from the pod alone (None: not a gang member)."""
    if pod.job:
        return None if is_single(pod.job) else GangKey(JobKey(pod.job))
    return gang_of(pod.labels, pod.annotations, pod.namespace, pod.owner)


def gang_of(
    labels: Mapping[str, str],
    annotations: Mapping[str, str],
    ns: str,
    owner: Owner | None,
    pod_group: str = "",
) -> GangKey | None:
    """`group_key` from a pod's parts (the converter works it out once per pod).

    `pod_group` is the pod's `spec.schedulingGroup.podGroupName` (Kubernetes' own PodGroup)."""
    if pod_group:
        return GangKey(JobKey(f"native:{ns}/{pod_group}"))
    if name := labels.get(GANG_LABEL):
        return GangKey(JobKey(f"gangplank:{ns}/{name}"))
    if name := annotations.get(VOLCANO_GROUP):
        return GangKey(JobKey(f"volcano:{ns}/{name}"))
    if name := labels.get(COSCHEDULING_GROUP):
        return GangKey(JobKey(f"coscheduling:{ns}/{name}"))
    if name := labels.get(KUEUE_GROUP):
        return GangKey(JobKey(f"kueue:{ns}/{name}"))
    if owner is not None and owner.kind == "Job" and any(k in labels for k in QUEUE_LABELS):
        return GangKey(JobKey(f"job:{ns}/{owner.name}"))
    if (
        owner is not None
        and owner.kind == "PyTorchJob"
        and labels.get(KUBEFLOW_JOB) == owner.name
        and KUBEFLOW_REPLICA_TYPE in labels
        and any(k in labels for k in QUEUE_LABELS)
    ):
        return GangKey(JobKey(f"pytorch:{ns}/{owner.name}"))
    return None


def job_key(pod: PodInfo) -> JobKey:
    """A pod's job, the unit of admission: its gang, or the pod alone (`pod:ns/name`)."""
    if pod.job:
        return JobKey(pod.job)
    return group_key(pod) or single_key(pod.namespace, pod.name)


def job_name(key: str) -> str:
    """`gang ns/name` or `pod ns/name`, as people read it."""
    source, name = key.split(":", 1)
    return f"{'pod' if source == 'pod' else 'gang'} {name}"


def is_single(key: str) -> bool:
    """Whether job `key` is a pod alone (not a gang)."""
    return key.startswith(SINGLE)


def single_key(namespace: str, name: str) -> JobKey:
    """The job of a pod alone."""
    return JobKey(f"{SINGLE}{namespace}/{name}")
