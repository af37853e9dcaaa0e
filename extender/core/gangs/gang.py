"""Who is a gang, and how many members it needs — from every source the README's "Label a
workload" table lists.

A pod belongs to at most one gang; its key names the source and the gang:
`gangplank:ns/name`, `volcano:ns/name`, `coscheduling:ns/name`, `kueue:ns/name`, `job:ns/name`,
`pytorch:ns/name`. The size comes from the gang's own annotation, its PodGroup, Kueue's
total-count, the Job's parallelism, or the PyTorchJob's replicas. Anything that does not give one
clear, sane size is a `problem`, reported on the pods.

**Elastic gangs** (docs/elastic.md): `size` is the minimum, placed all or nothing; `maximum` is
how many members it may run. It comes from `gangplank.io/gang-max`, a Job's parallelism above the
gang size its pods carry or Kueue's `job-min-parallelism` on it, the pods a PodGroup has beyond
its `minMember`, or a PyTorchJob's `elasticPolicy`. Members beyond the minimum ("extras") start
only on capacity no one waits for, and go first when others need it: an Indexed Job's or a
Kubeflow job's highest indexes first (`extras`), as a smaller size would remove them.
"""

from __future__ import annotations

from dataclasses import dataclass

from extender.core.model.keys import (
    COMPLETION_INDEX,
    GANG_MAX,
    GANG_SIZE,
    KUBEFLOW_REPLICA_INDEX,
    KUBEFLOW_REPLICA_TYPE,
    KUEUE_MIN_PARALLELISM,
    KUEUE_TOTAL,
    MAX_GANG_SIZE,
)
from extender.core.model.snapshot import PodInfo, Snapshot
from extender.core.placement.topology import NO_CONSTRAINT, Constraint, constraint_of


@dataclass(frozen=True, slots=True)
class Gang:
    key: str
    size: int  # members needed; 0 when `problem` is set
    members: tuple[PodInfo, ...]  # active members (not finished, not being deleted)
    problem: str = ""
    timeout_seconds: int | None = None
    constraint: Constraint = NO_CONSTRAINT  # the topology its pods or PodGroup ask for
    group_priority: int | None = None  # a native PodGroup's priority, over its pods'
    basic: bool = False  # a native PodGroup with the `basic` policy: no gang, pods on their own
    maximum: int = 0  # members it may run (elastic when above `size`; 0: `size`)

    @property
    def name(self) -> str:
        """`ns/name`, as users write it."""
        return self.key.split(":", 1)[1]

    @property
    def source(self) -> str:
        return self.key.split(":", 1)[0]

    @property
    def ready(self) -> bool:
        """Valid, and every member it needs exists: it can be planned."""
        return not self.problem and len(self.members) >= self.size

    @property
    def needed(self) -> int:
        """Members still to place: its size less those already running."""
        return max(0, self.size - len(self.bound))

    @property
    def most(self) -> int:
        """Members it may run: its maximum, at least its size."""
        return max(self.size, self.maximum)

    @property
    def elastic(self) -> bool:
        return self.maximum > self.size

    @property
    def whole(self) -> bool:
        """Its minimum is running: any further member is an extra."""
        return self.size > 0 and len(self.bound) >= self.size

    @property
    def extras(self) -> list[PodInfo]:
        """Bound members beyond the minimum, the first to go first: the highest index of an
        Indexed Job's or a Kubeflow job's workers (what lowering its size removes), else the
        last started."""
        bound = sorted(self.bound, key=going_order, reverse=True)
        return bound[: max(0, len(bound) - self.size)]

    @property
    def bound(self) -> list[PodInfo]:
        return [p for p in self.members if p.node_name is not None]

    @property
    def pending(self) -> list[PodInfo]:
        return sorted(
            (p for p in self.members if p.node_name is None), key=lambda p: (p.created, p.name)
        )

    @property
    def priority(self) -> int:
        if self.group_priority is not None:
            return self.group_priority
        return max((p.priority for p in self.members), default=0)

    @property
    def created(self) -> float:
        return min((p.created for p in self.members), default=0.0)


def member_index(pod: PodInfo) -> int | None:
    """An Indexed Job's pod's completion index, or a Kubeflow worker's replica index."""
    text = pod.annotations.get(COMPLETION_INDEX)
    if text is None and pod.labels.get(KUBEFLOW_REPLICA_TYPE, "").lower() == "worker":
        text = pod.labels.get(KUBEFLOW_REPLICA_INDEX)
    return int(text) if text is not None and text.isdigit() else None


def going_order(pod: PodInfo) -> tuple[int, int, int, float, float, str]:
    """Sorts a gang's members the last to go first: a Kubeflow job's master (or launcher) pods,
    then by index, then ready before not ready, then by start, then by creation: the reverse of
    the order the Job controller removes a NonIndexed Job's pods in when its parallelism is
    lowered (`ActivePods`: not ready first, then the shortest ready, then the newest)."""
    kind = pod.labels.get(KUBEFLOW_REPLICA_TYPE, "").lower()
    index = member_index(pod)
    return (
        0 if kind and kind != "worker" else 1,
        -1 if index is None else index,
        0 if pod.ready else 1,
        pod.started or pod.created,
        pod.created,
        pod.name,
    )


def _size(value: object, where: str) -> tuple[int, str]:
    """A size as written (text or number) → (size, "") or (0, what is wrong)."""
    text = str(value).strip()
    try:
        size = int(text)
    except ValueError:
        return 0, f"{where} is {value!r}, not a whole number"
    if isinstance(value, bool) or size < 1:
        return 0, f"{where} is {value!r}; a gang needs at least 1 member"
    if size > MAX_GANG_SIZE:
        return 0, f"{where} is {size}, more than the {MAX_GANG_SIZE} members gangplank accepts"
    return size, ""


def _annotated_size(members: tuple[PodInfo, ...], key: str, label: str) -> tuple[int, str]:
    """The size the members' annotation (or label) `key` gives; they must agree."""
    seen: dict[str, str] = {}
    for pod in members:
        value = pod.annotations.get(key, pod.labels.get(key))
        if value is not None:
            seen.setdefault(value, pod.name)
    if not seen:
        return 0, f"no size: set the annotation {key} on its pods"
    if len(seen) > 1:
        which = ", ".join(f"{v!r} on pod {p}" for v, p in sorted(seen.items()))
        return 0, f"its pods disagree on {label} ({which})"
    return _size(next(iter(seen)), f"{label} {key}")


def resolve_gang(snapshot: Snapshot, key: str, asking: PodInfo | None = None) -> Gang:
    """The gang `key` on the snapshot. `asking` is the pod being scheduled: it is a member even
    when the cache has not seen it yet (kube-scheduler can be faster than the watch)."""
    members = tuple(p for p in snapshot.groups.get(key, ()) if p.active)
    if asking is not None and asking.active and all(p.uid != asking.uid for p in members):
        members = (*members, asking)
    source, name = key.split(":", 1)
    timeout: int | None = None
    constraint, problem = constraint_of(members)
    if problem:
        return Gang(key, 0, members, f"gang {name}: {problem}")
    if source == "native":
        return _native(snapshot, key, members, constraint)
    maximum = 0
    if source == "gangplank":
        size, problem = _annotated_size(members, GANG_SIZE, "the gang size")
        if not problem:
            maximum, problem = _maximum(snapshot, members, size)
    elif source in ("volcano", "coscheduling"):
        group = snapshot.pod_groups.get(key)
        kind = "Volcano" if source == "volcano" else "coscheduling"
        if group is None:
            if any(GANG_SIZE in p.annotations for p in members):
                size, problem = _annotated_size(members, GANG_SIZE, "the gang size")
            else:
                size, problem = 0, f"waiting for its {kind} PodGroup {name} (not found)"
        else:
            size, problem = _size(group.min_member, f"minMember of PodGroup {name}")
            timeout = group.timeout_seconds
            if not problem:  # its pods beyond minMember are extras
                maximum, problem = _maximum(snapshot, members, size, len(members))
    elif source == "kueue":
        size, problem = _annotated_size(members, KUEUE_TOTAL, "the pod group total count")
    elif source == "pytorch":
        size, maximum, problem = _pytorch_size(snapshot, name)
    else:  # job
        size, problem = _job_size(snapshot, name)
        minimum = snapshot.jobs[name].min_parallelism if not problem else None
        if minimum is not None and not any(GANG_SIZE in p.annotations for p in members):
            # Kueue's partial admission minimum: that many first, the rest extras
            maximum = size  # Kueue allows 0 (all may go): here the gang keeps one
            minimum = "1" if minimum.strip() == "0" else minimum
            size, problem = _size(minimum, f"{KUEUE_MIN_PARALLELISM} of Job {name}")
            if not problem and size > maximum:
                problem = f"{KUEUE_MIN_PARALLELISM} {size} is above the parallelism {maximum}"
        elif not problem and any(GANG_SIZE in p.annotations for p in members):
            # a gang size on its pods below the parallelism: that many first, the rest extras
            maximum = size
            size, problem = _annotated_size(members, GANG_SIZE, "the gang size")
            if not problem and size > maximum:
                problem = f"the gang size {size} is above the parallelism {maximum} of Job {name}"
    if problem:
        return Gang(key, 0, members, f"gang {name}: {problem}")
    return Gang(key, size, members, timeout_seconds=timeout, constraint=constraint, maximum=maximum)


def _job_size(snapshot: Snapshot, name: str) -> tuple[int, str]:
    """The pods Job `name` runs at once: its parallelism (at most its completions)."""
    job = snapshot.jobs.get(name)
    if job is None:
        return 0, f"waiting for Job {name} (not in gangplank's cache yet)"
    if job.parallelism is None:
        return 1, ""
    wanted = job.parallelism
    if job.completions is not None:
        wanted = min(wanted, job.completions)
    return _size(max(wanted, 1) if wanted >= 0 else wanted, f"parallelism of Job {name}")


def _pytorch_size(snapshot: Snapshot, name: str) -> tuple[int, int, str]:
    """(size, maximum, problem) of PyTorchJob `name`'s gang: its Master replicas with its
    elasticPolicy's minReplicas (maxReplicas) workers, or with all of them when not elastic. The
    training operator fills an unset bound with the Worker replicas."""
    job = snapshot.pytorch_jobs.get(name)
    if job is None:
        return (
            0,
            0,
            (
                f"waiting for PyTorchJob {name} (not in gangplank's cache yet; if it stays, the "
                "watch of pytorchjobs is not running: see /readyz)"
            ),
        )
    if not job.elastic:
        size, problem = _size(job.masters + job.workers, f"the replicas of PyTorchJob {name}")
        return size, 0, problem
    low = job.workers if job.min_replicas is None else job.min_replicas
    high = job.workers if job.max_replicas is None else job.max_replicas
    if low > high:
        return (
            0,
            0,
            f"PyTorchJob {name}: elasticPolicy minReplicas {low} is above maxReplicas {high}",
        )
    size, problem = _size(job.masters + low, f"elasticPolicy.minReplicas of PyTorchJob {name}")
    return size, job.masters + high, problem


def _maximum(
    snapshot: Snapshot, members: tuple[PodInfo, ...], size: int, default: int = 0
) -> tuple[int, str]:
    """The members a gang of `size` may run: `gangplank.io/gang-max` on its pods, else the
    parallelism of the Job that owns them, else `default` (0: `size`)."""
    if any(GANG_MAX in p.annotations or GANG_MAX in p.labels for p in members):
        maximum, problem = _annotated_size(members, GANG_MAX, "the gang maximum")
        if not problem and maximum < size:
            problem = f"the gang maximum {GANG_MAX} is {maximum}, below its size {size}"
        return maximum, problem
    owner = next((p.owner for p in members if p.owner is not None), None)
    if owner is not None and owner.kind == "Job":
        ns = members[0].namespace
        parallelism, problem = _job_size(snapshot, f"{ns}/{owner.name}")
        if not problem and parallelism > size:
            return parallelism, ""
    return default, ""


NATIVE_API = "scheduling.k8s.io/v1alpha2"


def _native(
    snapshot: Snapshot, key: str, members: tuple[PodInfo, ...], constraint: Constraint
) -> Gang:
    """A gang of Kubernetes' own PodGroup: `minCount`, its topology key, its priority."""
    name = key.split(":", 1)[1]
    group = snapshot.pod_groups.get(key)
    if group is None:
        problem = f"waiting for its PodGroup {name} ({NATIVE_API}; not found)"
        return Gang(key, 0, members, f"gang {name}: {problem}")
    if not group.gang:
        return Gang(key, 1, members, constraint=constraint, basic=True)
    size, problem = _size(group.min_member, f"schedulingPolicy.gang.minCount of PodGroup {name}")
    if problem:
        return Gang(key, 0, members, f"gang {name}: {problem}")
    if group.topology and not constraint.required:
        constraint = Constraint(group.topology[0], constraint.preferred)
    priority = group.priority
    if priority is None and group.priority_class:
        priority = snapshot.priority_classes.get(group.priority_class)
    return Gang(
        key,
        size,
        members,
        timeout_seconds=group.timeout_seconds,
        constraint=constraint,
        group_priority=priority,
    )
