"""Which workload a job is, and how it is requeued: suspended through its workload object, or
its pods evicted.

A requeue that evicts pods counts each one as a failed pod for its controller: a batch/v1 Job
with Kubernetes' default `backoffLimit` (6) is `Failed` after the second requeue of 4 pods.
Where the kind has a suspend field, gangplank sets it instead (as Kueue does): pods removed for a
suspension are no failures, and the controller recreates them at once when it is resumed. The
kinds, and where each keeps the field (facts from upstream: the Job API, JobSet, the Kubeflow
training operator and mpi-operator, KubeRay; Kueue's job integrations suspend the same fields):

| kind | apiVersion | field |
|---|---|---|
| Job | batch/v1 | spec.suspend |
| JobSet | jobset.x-k8s.io/v1alpha2 | spec.suspend (a Job a JobSet made is requeued through it) |
| PyTorchJob, TFJob, XGBoostJob, PaddleJob, JAXJob | kubeflow.org/v1 | spec.runPolicy.suspend |
| MPIJob | kubeflow.org/v2beta1 | spec.runPolicy.suspend (its launcher Job goes with it) |
| RayCluster | ray.io/v1 | spec.suspend (KubeRay 1.1+; not one a RayJob or RayService made) |

Everything else, and a gang of bare pods, is requeued by evicting its pods (as before). A RayJob
is too: KubeRay refuses `suspend: true` on a RayJob without `shutdownAfterJobFinishes` (it marks
it `ValidationFailed`, a failure), and its pods do not tell whether it has it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from extender.core.model.keys import KUBEFLOW_JOB
from extender.core.model.snapshot import PodInfo

JOBSET_NAME = "jobset.sigs.k8s.io/jobset-name"  # on the pods of a JobSet's Jobs
JOBSET_API = "jobset.x-k8s.io/v1alpha2"
KUBEFLOW_JOB_NAME = KUBEFLOW_JOB  # on a Kubeflow job's pods (and Jobs)
RAY_FROM_CRD = "ray.io/originated-from-crd"  # the KubeRay kind (RayJob, RayService) it was made for
RAY_API = "ray.io/v1"

SPEC_SUSPEND = ("spec", "suspend")
RUN_POLICY_SUSPEND = ("spec", "runPolicy", "suspend")


@dataclass(frozen=True, slots=True)
class Kind:
    """A workload kind gangplank suspends."""

    api_versions: tuple[str, ...]  # the versions it is known to have the field in
    plural: str  # its resource (the API path, RBAC, kubectl)
    field: tuple[str, ...]  # where the suspend flag is


KINDS: Mapping[str, Kind] = {
    "Job": Kind(("batch/v1",), "jobs", SPEC_SUSPEND),
    "JobSet": Kind((JOBSET_API,), "jobsets", SPEC_SUSPEND),
    "PyTorchJob": Kind(("kubeflow.org/v1",), "pytorchjobs", RUN_POLICY_SUSPEND),
    "TFJob": Kind(("kubeflow.org/v1",), "tfjobs", RUN_POLICY_SUSPEND),
    "XGBoostJob": Kind(("kubeflow.org/v1",), "xgboostjobs", RUN_POLICY_SUSPEND),
    "PaddleJob": Kind(("kubeflow.org/v1",), "paddlejobs", RUN_POLICY_SUSPEND),
    "JAXJob": Kind(("kubeflow.org/v1",), "jaxjobs", RUN_POLICY_SUSPEND),
    "MPIJob": Kind(("kubeflow.org/v2beta1",), "mpijobs", RUN_POLICY_SUSPEND),
    "RayCluster": Kind((RAY_API,), "rayclusters", SPEC_SUSPEND),
}


@dataclass(frozen=True, slots=True)
class Workload:
    """The object a job is suspended and resumed through."""

    kind: str
    api_version: str
    namespace: str
    name: str

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]

    @property
    def version(self) -> str:
        return self.api_version.rpartition("/")[2]

    @property
    def plural(self) -> str:
        return KINDS[self.kind].plural

    @property
    def field(self) -> tuple[str, ...]:
        return KINDS[self.kind].field

    def flag_in(self, obj: Mapping[str, object]) -> object:
        """Its suspend flag as `obj` (the workload as the API server answered) has it (None:
        not there)."""
        found: object = obj
        for key in self.field:
            found = found.get(key) if isinstance(found, Mapping) else None
        return found

    def patch(self, suspend: bool) -> dict[str, object]:
        """The merge patch that sets its suspend flag."""
        body: dict[str, object] = {self.field[-1]: suspend}
        for key in reversed(self.field[:-1]):
            body = {key: body}
        return body

    @property
    def shown(self) -> str:
        """As people name it: `Job default/train`."""
        return f"{self.kind} {self.namespace}/{self.name}"

    def resume_command(self) -> str:
        """How a person runs it again."""
        resource = f"{self.plural}.{self.group}" if self.group else self.plural
        patch = json.dumps(self.patch(False), separators=(",", ":"))
        return f"kubectl patch {resource} {self.name} -n {self.namespace} --type=merge -p '{patch}'"

    def to_json(self) -> dict[str, str]:
        return {
            "kind": self.kind,
            "apiVersion": self.api_version,
            "namespace": self.namespace,
            "name": self.name,
        }

    @classmethod
    def from_json(cls, data: object) -> Workload | None:
        """One `to_json` wrote; None for none, ValueError for one that is not."""
        if data is None:
            return None
        if not isinstance(data, Mapping):
            raise ValueError("workload: not an object")
        fields = [data.get(k) for k in ("kind", "apiVersion", "namespace", "name")]
        if not all(isinstance(v, str) and v for v in fields) or fields[0] not in KINDS:
            raise ValueError(f"workload: not one gangplank suspends: {dict(data)}")
        kind, api_version, namespace, name = (str(v) for v in fields)
        return cls(kind, api_version, namespace, name)


def workload_of(pods: Sequence[PodInfo]) -> Workload | None:
    """The one workload all of a job's pods belong to and that gangplank can suspend; None: its
    pods are evicted (bare pods, a kind without suspend, pods of several workloads)."""
    found = {_workload(pod) for pod in pods}
    if len(found) == 1:
        return found.pop()
    # An MPIJob: its workers are its own pods, its launcher the pod of a Job it made.
    parents = {w for w in found if w is not None and w.kind != "Job"}
    if len(parents) == 1:
        parent = next(iter(parents))
        if all(_workload(p) == parent or _child_of(p, parent) for p in pods):
            return parent
    return None


def _workload(pod: PodInfo) -> Workload | None:
    owner = pod.owner
    if owner is None:
        return None
    labels, namespace = pod.labels, pod.namespace
    if owner.kind == "Job" and labels.get(JOBSET_NAME):
        return Workload("JobSet", JOBSET_API, namespace, labels[JOBSET_NAME])
    # A RayJob's or a RayService's cluster: evicted. KubeRay fails a RayJob suspended without
    # shutdownAfterJobFinishes (ValidationFailed), which the pods do not tell.
    if owner.kind == "RayCluster" and labels.get(RAY_FROM_CRD):
        return None
    kind = KINDS.get(owner.kind)
    if kind is None or owner.api_version not in kind.api_versions:
        return None
    return Workload(owner.kind, owner.api_version, namespace, owner.name)


def _child_of(pod: PodInfo, parent: Workload) -> bool:
    """A pod of a Job that Kubeflow job `parent` made (labelled with its name)."""
    owner = pod.owner
    return (
        owner is not None
        and owner.kind == "Job"
        and parent.group == "kubeflow.org"
        and pod.labels.get(KUBEFLOW_JOB_NAME) == parent.name
    )


@dataclass(frozen=True, slots=True)
class Suspension:
    """A job requeued (or held) through its workload: every running pod is evicted as a dry run
    first (a PodDisruptionBudget that forbids one keeps the whole job running), then the
    workload is suspended, with an Event on it."""

    job: str
    workload: Workload
    pods: tuple[tuple[str, str, str], ...]  # (namespace, name, uid) of its running pods
    rule: str
    queue: str  # "" for none
    reason: str  # the Event's reason
    message: str  # the Event's message
    gpu_seconds: float  # what its pods had run (work lost unless they checkpointed)


@dataclass(frozen=True, slots=True)
class Resume:
    """A suspended workload whose backoff is over: resumed, with an Event on it."""

    job: str
    workload: Workload
    message: str
