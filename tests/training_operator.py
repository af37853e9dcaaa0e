"""A stand-in for the Kubeflow training operator's PyTorchJob controller, over the fake API
server's state: what gangplank relies on when it changes a PyTorchJob's Worker replicas.

The rules (kubeflow/training-operator: pkg/controller.v1/common/pod.go `ReconcilePods`,
`GetPodSlices`; pkg/apis/kubeflow.org/v1 defaults): a pod per replica index below
`spec.pytorchReplicaSpecs.<Type>.replicas` (1 when unset), named `<job>-<type>-<index>`,
labelled `training.kubeflow.org/job-name`, `training.kubeflow.org/replica-type` (the type in
lower case) and `training.kubeflow.org/replica-index`, owned by the PyTorchJob; a pod whose
index is at or above the replicas (the job was made smaller) is deleted, not recreated. Each pod
carries the template's labels (a queue label) and asks for the operator's `gpu` GPUs. Not
modelled: restarts, the job's status and conditions, Services, elastic rendezvous, the HPA of
`elasticPolicy.metrics`.
"""

from __future__ import annotations

import threading
from typing import Any

from tests.builders import pod
from tests.fakeapi import FakeApiServer

JOB_NAME = "training.kubeflow.org/job-name"
REPLICA_TYPE = "training.kubeflow.org/replica-type"
REPLICA_INDEX = "training.kubeflow.org/replica-index"


def pytorch_job(
    name: str, workers: int, *, least: int, most: int, labels: dict[str, str]
) -> dict[str, Any]:
    """An elastic PyTorchJob (`elasticPolicy` minReplicas `least`, maxReplicas `most`)."""
    template = {"metadata": {"labels": labels}}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {
            "elasticPolicy": {"rdzvBackend": "c10d", "minReplicas": least, "maxReplicas": most},
            "pytorchReplicaSpecs": {"Worker": {"replicas": workers, "template": template}},
        },
    }


class TrainingOperator(threading.Thread):
    """`with TrainingOperator(api) as operator:` syncs every PyTorchJob every `tick` seconds."""

    def __init__(self, api: FakeApiServer, gpu: int = 8, tick: float = 0.05) -> None:
        super().__init__(daemon=True)
        self.api, self.gpu, self.tick = api, gpu, tick
        self._done = threading.Event()

    def __enter__(self) -> TrainingOperator:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self.join(2)

    def run(self) -> None:
        while not self._done.wait(self.tick):
            self.sync()

    def sync(self) -> None:
        with self.api.cond:
            jobs = list(self.api.state.objects["pytorchjobs"].values())
            pods = list(self.api.state.objects["pods"].values())
            for job in jobs:
                self._reconcile(job, pods)

    def _reconcile(self, job: dict[str, Any], pods: list[dict[str, Any]]) -> None:
        name = job["metadata"]["name"]
        for kind, spec in (job["spec"].get("pytorchReplicaSpecs") or {}).items():
            replicas = spec.get("replicas", 1)
            rtype = kind.lower()
            mine = {
                int(p["metadata"]["labels"][REPLICA_INDEX]): p
                for p in pods
                if p["metadata"].get("labels", {}).get(JOB_NAME) == name
                and p["metadata"]["labels"].get(REPLICA_TYPE) == rtype
            }
            for index, found in mine.items():
                if index >= replicas:  # out of range: deleted, not recreated
                    self.api.delete("pods", "default", found["metadata"]["name"])
            for index in range(replicas):
                if index not in mine:
                    labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels", {})
                    self.api.put("pods", replica_pod(job, rtype, index, labels, self.gpu))


def replica_pod(
    job: dict[str, Any], rtype: str, index: int, labels: dict[str, str], gpu: int
) -> dict[str, Any]:
    """The pod the operator makes for replica `index` of type `rtype` of PyTorchJob `job`."""
    name = job["metadata"]["name"]
    made = pod(
        f"{name}-{rtype}-{index}",
        gpu=gpu,
        labels={**labels, JOB_NAME: name, REPLICA_TYPE: rtype, REPLICA_INDEX: str(index)},
        owner=("kubeflow.org/v1", "PyTorchJob", name),
    )
    made["metadata"]["ownerReferences"][0]["uid"] = job["metadata"]["uid"]
    return made
