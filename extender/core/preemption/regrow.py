"""Giving a workload made smaller (`shrinks.py`) its size back, one member at a time, once the
room for one more member is spare again (docs/elastic.md).

A workload gangplank made smaller carries `gangplank.io/shrunk-from: "N"` (its size before).
Each periodic pass looks at those workloads: one whose gang runs its minimum, has no member
waiting (its controller has caught up), and was not made smaller in the last `after` seconds
(`GangConfig.regrow_after_seconds`, 120 s), is raised by one when a member shaped like its own
would be placed as an extra now — near its members, only on room no waiting job needs (the fair
line's `spare`: never a hold, a reservation or the room kept for the head of the line). Its
controller then creates the pod, which kube-scheduler and gangplank place as any extra (quota
counts it then; a queue at its limit leaves it waiting). At the recorded size the annotation
goes. Without queues nothing keeps room for a waiting job that fits (its plan does, at its first
filter), as for any extra.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace

from extender.core.gangs.extras import Spare, place_extra
from extender.core.gangs.gang import Gang, going_order, resolve_gang
from extender.core.model.keys import KUBEFLOW_REPLICA_TYPE
from extender.core.model.snapshot import Snapshot
from extender.core.placement.planner import FreeOf
from extender.core.placement.topology import Topology
from extender.core.preemption.shrinks import (
    ELASTIC_PYTORCHJOB,
    INDEXED_JOB,
    NON_INDEXED_JOB,
    Shrink,
)

GROW_AFTER = 120.0  # seconds after a shrink before its workload may grow again


def regrowths(
    snapshot: Snapshot,
    shrunk_at: Mapping[str, float],
    now: float,
    free: Callable[[list[str]], FreeOf],
    topology: Topology,
    spare: Spare,
    after: float = GROW_AFTER,
) -> list[Shrink]:
    """The workloads to raise by one member now (`shrunk_at`: "Kind ns/name" -> when gangplank
    last made it smaller; `free(resources)`: what nodes have left for a pod of no plan)."""
    found = []
    owners = None
    for grow in _shrunk(snapshot):
        if now - shrunk_at.get(grow.shown, float("-inf")) < after:
            continue
        if owners is None:
            owners = _gangs_by_owner(snapshot)
        key = owners.get((grow.kind, grow.namespace, grow.name))
        if key is None:
            continue
        gang = resolve_gang(snapshot, key)
        if not _may_grow(gang, grow):
            continue
        template = max(
            (p for p in gang.bound if p.labels.get(KUBEFLOW_REPLICA_TYPE, "worker") == "worker"),
            key=going_order,
            default=None,
        )
        if template is None:
            continue
        one_more = replace(
            template,
            uid=f"regrow:{grow.shown}",
            name=f"{template.name} (one more)",
            node_name=None,
            phase="Pending",
            started=0.0,
            ready=False,
        )
        larger = replace(gang, maximum=max(gang.most, len(gang.members) + 1))
        node, _ = place_extra(
            snapshot,
            larger,
            one_more,
            list(snapshot.nodes),
            None,
            free(list(one_more.requests)),
            topology,
            spare,
        )
        if node is not None:
            found.append(grow)
    return found


def _shrunk(snapshot: Snapshot) -> Iterator[Shrink]:
    """Each workload gangplank made smaller, as the shrink that raises it by one."""
    for job in snapshot.jobs.values():
        size = job.completions
        if not job.indexed:
            width = job.parallelism
            if width is not None and width < job.shrunk_from:
                yield NON_INDEXED_JOB.resize(job.namespace, job.name, width, width + 1)
        elif size is not None and size == job.parallelism and size < job.shrunk_from:
            yield INDEXED_JOB.resize(job.namespace, job.name, size, size + 1)
    for pytorch in snapshot.pytorch_jobs.values():
        if pytorch.shrunk_from and pytorch.workers < pytorch.shrunk_from:
            workers = pytorch.workers
            yield ELASTIC_PYTORCHJOB.resize(pytorch.namespace, pytorch.name, workers, workers + 1)


def _gangs_by_owner(snapshot: Snapshot) -> dict[tuple[str, str, str], str]:
    """(owner kind, namespace, name) -> the gang key of its pods (Jobs, PyTorchJobs)."""
    out: dict[tuple[str, str, str], str] = {}
    for key, pods in snapshot.groups.items():
        for pod in pods:
            owner = pod.owner
            if owner is not None and owner.kind in ("Job", "PyTorchJob"):
                out.setdefault((owner.kind, pod.namespace, owner.name), key)
                break
    return out


def _may_grow(gang: Gang, grow: Shrink) -> bool:
    """Its minimum runs, every member it has now is running and no more than its size."""
    if gang.problem or not gang.whole or gang.pending:
        return False
    workers = [p for p in gang.members if p.labels.get(KUBEFLOW_REPLICA_TYPE, "worker") == "worker"]
    return len(workers) == grow.current
