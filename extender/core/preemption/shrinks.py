"""Taking an elastic gang's extras back through its workload, where its kind allows it, rather
than by evicting pods its controller would count as failed (docs/elastic.md).

- An **Indexed Job whose completions equal its parallelism** (an elastic Indexed Job): both are
  lowered to the lowest completion index taken. The Job controller then removes the pods whose
  index is at or above the new completions without counting them as failed (a pod deleted by
  anyone else counts as failed only while its index is below completions), so `status.failed`
  stays as it was and the Job's `backoffLimit` is not used up.
- A **NonIndexed Job** running more than its gang's minimum (its parallelism above the gang
  size, or Kueue's `job-min-parallelism`): its parallelism is lowered by the extras taken and the
  members still unscheduled. The Job controller removes the unscheduled pods first, then the
  running ones that have been ready the shortest time (its `ActivePods` order, the order the
  extras are taken in: `gang.going_order`), and a pod it removes is not counted as failed (it
  takes the pod's tracking finalizer off before deleting it).
- An **elastic PyTorchJob** (`spec.elasticPolicy`): its Worker replicas are lowered to the lowest
  worker replica index taken, never below `elasticPolicy.minReplicas`; the training operator
  deletes the workers whose index is out of range instead of recreating them.

Not a workload Kueue manages (label `kueue.x-k8s.io/queue-name` on it): Kueue suspends a running
job whose pod counts no longer match its Workload (`ensureOneWorkload`: "job with no matching
workload, suspending"). Anything else is evicted, as before, and the Event says why (a Job
counts an evicted pod as failed unless its `podFailurePolicy` ignores the `DisruptionTarget`
condition the Eviction API adds).

The extras taken must be the highest indexes (the candidates are built so: an extra takes the
ones above it with it, `victim_candidates`), and the members left below the new size must keep
the gang's minimum running; otherwise the pods are evicted.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from extender.core.gangs.gang import Gang, member_index
from extender.core.model.keys import KUBEFLOW_REPLICA_TYPE
from extender.core.model.snapshot import PodInfo, Snapshot

KUEUE_MANAGED = (
    "Kueue manages {} (label kueue.x-k8s.io/queue-name): Kueue suspends a running workload whose "
    "size no longer matches its Workload"
)
Fields = tuple[tuple[str, ...], ...]
JOB_FIELDS: Fields = (("spec", "completions"), ("spec", "parallelism"))
PARALLELISM: Fields = (("spec", "parallelism"),)
WORKER_FIELDS: Fields = (("spec", "pytorchReplicaSpecs", "Worker", "replicas"),)


@dataclass(frozen=True, slots=True)
class Shrink:
    """A workload's size lowered to take extras back: set each of `fields` from `current` to
    `to` (the runtime checks the workload still has `current` before it patches)."""

    kind: str  # Job, PyTorchJob
    api_version: str
    plural: str
    namespace: str
    name: str
    what: str  # as people read it: "completions and parallelism", "Worker replicas"
    fields: tuple[tuple[str, ...], ...]
    current: int
    to: int

    @property
    def shown(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"

    def patch(self) -> dict[str, object]:
        """The merge patch that sets every field to `to`."""
        body: dict[str, object] = {}
        for path in self.fields:
            level = body
            for key in path[:-1]:
                found = level.setdefault(key, {})
                assert isinstance(found, dict)
                level = found
            level[path[-1]] = self.to
        return body

    def says(self) -> str:
        return f"{self.shown}: {self.what} lowered from {self.current} to {self.to}"


@dataclass(frozen=True, slots=True)
class Sized:
    """A kind of workload whose size gangplank changes, and the fields that are its size."""

    kind: str
    api_version: str
    plural: str
    what: str
    fields: Fields

    def resize(self, namespace: str, name: str, current: int, to: int) -> Shrink:
        return Shrink(
            self.kind, self.api_version, self.plural, namespace, name, self.what, self.fields,
            current, to,
        )  # fmt: skip


INDEXED_JOB = Sized("Job", "batch/v1", "jobs", "completions and parallelism", JOB_FIELDS)
NON_INDEXED_JOB = Sized("Job", "batch/v1", "jobs", "parallelism", PARALLELISM)
ELASTIC_PYTORCHJOB = Sized(
    "PyTorchJob", "kubeflow.org/v1", "pytorchjobs", "Worker replicas", WORKER_FIELDS
)


def shrinkable(snapshot: Snapshot, gang: Gang) -> bool:
    """Whether `gang`'s extras can go through its workload (an elastic Job, an elastic
    PyTorchJob): then they go in the order of `Gang.extras`, the first first."""
    owner = _owner(gang.members)
    if owner is None:
        return False
    key = f"{gang.members[0].namespace}/{owner[1]}"
    if owner[0] == "Job":
        job = snapshot.jobs.get(key)
        if job is None or job.kueue:
            return False
        return job.completions == job.parallelism if job.indexed else job.parallelism is not None
    pytorch = snapshot.pytorch_jobs.get(key)
    return pytorch is not None and pytorch.elastic and not pytorch.kueue


def through_workload(
    snapshot: Snapshot, gang: Gang, taken: Collection[PodInfo]
) -> tuple[Shrink | None, str]:
    """How `taken` (extras of `gang`) go: (the shrink, "") or (None, why they are evicted)."""
    owner = _owner(gang.members)
    if owner is None:
        return None, (
            "its pods are not all of one Indexed Job or elastic PyTorchJob, whose size gangplank "
            "could lower instead"
        )
    kind, name = owner
    key = f"{gang.members[0].namespace}/{name}"
    indexes = [member_index(p) for p in taken]
    if kind == "Job":
        job = snapshot.jobs.get(key)
        if job is None:
            return None, f"Job {key} is not in gangplank's view yet"
        if not job.indexed:
            return _fewer_in_parallel(gang, key, job.parallelism, job.kueue, taken)
        if job.completions != job.parallelism or job.completions is None:
            return None, (
                f"Indexed Job {key} has completions {job.completions} and parallelism "
                f"{job.parallelism}: only an Indexed Job whose two are equal can be made smaller"
            )
        if job.kueue:
            return None, KUEUE_MANAGED.format(f"Job {key}")
        current, floor, sized = job.completions, 0, INDEXED_JOB
    else:
        pytorch = snapshot.pytorch_jobs.get(key)
        if pytorch is None or not pytorch.elastic:
            return None, f"PyTorchJob {key} has no elasticPolicy: its replicas are not to change"
        if pytorch.kueue:
            return None, KUEUE_MANAGED.format(f"PyTorchJob {key}")
        if any(p.labels.get(KUBEFLOW_REPLICA_TYPE, "").lower() != "worker" for p in taken):
            return None, f"PyTorchJob {key}: only its workers can be fewer"
        current, sized = pytorch.workers, ELASTIC_PYTORCHJOB
        floor = pytorch.workers if pytorch.min_replicas is None else pytorch.min_replicas
    what = sized.what
    if any(i is None for i in indexes):
        return None, f"{kind} {key}: a pod taken has no index"
    to = min(i for i in indexes if i is not None)
    if to >= current:
        return None, f"{kind} {key}: the pods taken are beyond its {what} of {current} already"
    if to < floor:
        return None, f"{kind} {key}: its {what} would fall below its minReplicas {floor}"
    # what keeps running: the members below the new size (and a PyTorchJob's masters)
    kept = [p for p in gang.bound if (i := member_index(p)) is None or i < to]
    if len(kept) < gang.size:
        return None, (
            f"{kind} {key}: lowering its {what} to {to} would leave {len(kept)} of its pods "
            f"running, fewer than its minimum of {gang.size}"
        )
    return sized.resize(gang.members[0].namespace, name, current, to), ""


def _owner(members: Collection[PodInfo]) -> tuple[str, str] | None:
    """(kind, name) of the one Job or PyTorchJob that owns every member, else None."""
    found = {(p.owner.kind, p.owner.name) if p.owner is not None else None for p in members}
    if len(found) != 1:
        return None
    owner = found.pop()
    return owner if owner is not None and owner[0] in ("Job", "PyTorchJob") else None


def _fewer_in_parallel(
    gang: Gang, key: str, parallelism: int | None, kueue: bool, taken: Collection[PodInfo]
) -> tuple[Shrink | None, str]:
    """A NonIndexed Job's parallelism lowered by the members taken and those not scheduled
    (the Job controller removes those first)."""
    if kueue:
        return None, KUEUE_MANAGED.format(f"Job {key}")
    if parallelism is None:
        return None, f"Job {key} has no parallelism to lower"
    unscheduled = len(gang.pending)
    to = parallelism - unscheduled - len(taken)
    left = len(gang.bound) - len(taken)
    if to < gang.size or left < gang.size:
        return None, (
            f"Job {key}: lowering its parallelism to {to} would leave {left} of its pods "
            f"running, fewer than its minimum of {gang.size}"
        )
    namespace, name = key.split("/", 1)
    return NON_INDEXED_JOB.resize(namespace, name, parallelism, to), ""
