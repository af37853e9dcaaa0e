"""Which pods are gangplank's business: the labels and annotations of the README's "Label a
workload" table.

Pods with none of them pass through untouched (they only have to respect reservations).
"""

from __future__ import annotations

from extender.core.model.snapshot import PodInfo

QUEUE_LABELS = (
    "gangplank.io/queue",
    "kueue.x-k8s.io/queue-name",
    "scheduling.volcano.sh/queue-name",
    "volcano.sh/queue-name",
    "yunikorn.apache.org/queue",
)
GANG_LABELS = (
    "gangplank.io/gang",
    "scheduling.x-k8s.io/pod-group",
    "kueue.x-k8s.io/pod-group-name",
)
GANG_ANNOTATIONS = (
    "scheduling.k8s.io/group-name",
    "yunikorn.apache.org/task-group-name",
)


def queue_label(pod: PodInfo) -> tuple[str, str]:
    """(label key, queue name) of the first queue label the pod carries, or ("", "")."""
    labels = pod.labels
    for key in QUEUE_LABELS:
        value = labels.get(key)
        if value:
            return key, value
    return "", ""


def queue_key(pod: PodInfo) -> tuple[str, str]:
    """How the cache groups pods for quota: (queue label value or "", namespace)."""
    return queue_label(pod)[1], pod.namespace


def is_managed(pod: PodInfo) -> bool:
    """Whether gangplank must account for this pod (it names a queue or a gang)."""
    labels = pod.labels
    if any(key in labels for key in QUEUE_LABELS) or any(key in labels for key in GANG_LABELS):
        return True
    if pod.job.startswith("native:"):  # a member of Kubernetes' own PodGroup
        return True
    return any(key in pod.annotations for key in GANG_ANNOTATIONS)
