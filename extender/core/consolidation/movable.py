"""Which running jobs may be moved to make room, and how, decided from what their pods carry.

A job is movable when its controller recreates its pods and moving them spends none of its own
retries, and when someone said it may move: the pod label `gangplank.io/movable: "true"` or its
queue's `consolidation: {allow: true}` (`gangplank.io/movable: "false"` keeps it where it is
whatever the queue says). How it moves:

- **suspend**: a kind with a suspend field (`lifecycle/workloads.py`: Job, JobSet, the Kubeflow
  kinds, RayCluster) is suspended and resumed, so its controller recreates the pods and counts no
  failure (an evicted pod of a batch/v1 Job counts against its `backoffLimit` unless its
  `podFailurePolicy` ignores `DisruptionTarget`, which the pod does not show);
- **evict**: the pods of a ReplicaSet, StatefulSet or ReplicationController are evicted (those
  controllers count no failures and recreate the pod at once);
- anything else is not movable: a bare pod (nobody recreates it), a DaemonSet's pod (it belongs
  on its node), a kind gangplank does not know (it may count evictions as failures).

Never moved: a job not running whole (a pod pending or being deleted), a gang that requires a
topology domain (the move planner re-places pods one by one, not in one domain), a job with local
storage (`emptyDir` or `hostPath`: data a move loses; a local PersistentVolume does not show on
the pod, see docs/consolidation.md) unless it is labelled movable.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum

from extender.core.gangs.gang import resolve_gang
from extender.core.lifecycle.workloads import Workload, workload_of
from extender.core.model.keys import is_single
from extender.core.model.snapshot import PodInfo, Snapshot

MOVABLE_LABEL = "gangplank.io/movable"
RECREATING = frozenset({"ReplicaSet", "StatefulSet", "ReplicationController"})


class Way(Enum):
    SUSPEND = "suspend"
    EVICT = "evict"


def how_moved(
    snapshot: Snapshot, key: str, pods: Sequence[PodInfo], queue_allows: bool
) -> tuple[Way | None, Workload | None, str]:
    """(how job `key`, running `pods`, is moved; the workload it is suspended through; why not
    when it is not movable)."""
    if not pods:
        return None, None, "it runs no pod"
    said = {p.labels.get(MOVABLE_LABEL) for p in pods}
    if "false" in said:
        return None, None, f'it is labelled {MOVABLE_LABEL}: "false"'
    labelled = "true" in said
    if not (labelled or queue_allows):
        return None, None, f"neither labelled {MOVABLE_LABEL} nor in a queue that allows moves"
    if any(p.node_name is None or not p.active for p in pods):
        return None, None, "it does not run whole"
    if not labelled and any(p.local_storage for p in pods):
        return None, None, "it keeps data on its node (emptyDir or hostPath)"
    if not is_single(key):
        gang = resolve_gang(snapshot, key)
        if gang.problem or len(pods) < gang.size:
            return None, None, "it does not run whole"
        if gang.constraint.required:
            return None, None, "it requires a topology domain a move would not keep"
    workload = workload_of(pods)
    if workload is not None:
        return Way.SUSPEND, workload, ""
    owners = {(p.owner.kind, p.owner.uid) if p.owner is not None else None for p in pods}
    if len(owners) == 1:
        owner = next(iter(owners))
        if owner is not None and owner[0] in RECREATING:
            return Way.EVICT, None, ""
    return None, None, "no controller of it recreates its pods without counting a failure"
