"""The jobs a simulation replays: generated from a seeded mix, or read from a trace's pod CSV
(in the trace's own time, or as the FGD paper replays it: `fill_to_capacity`).

A job is one pod or a gang of identical pods; it arrives at a time, waits, runs its duration
once every member is bound, and leaves. Pods are API server JSON, labelled the way users label
them for gangplank (`gangplank.io/queue`, `gangplank.io/gang` + `gangplank.io/gang-size`, and
`gangplank.io/gang-max` for an elastic job: `elastic.py`). Arrivals may span days, and a queue's
may begin later than the others' (`Mix.starts`).

A share of jobs may waste what they hold (`workload_faults.py`).
"""

from __future__ import annotations

import csv
import dataclasses
import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from extender.core.model.resources import GPU

QUEUE_LABEL = "gangplank.io/queue"
GANG_LABEL = "gangplank.io/gang"
GANG_SIZE = "gangplank.io/gang-size"
GANG_MAX = "gangplank.io/gang-max"
DEFAULT_PODS = "alibaba-gpu-v2023/openb_pod_list_default.csv"
TRACE_COLUMNS = ("creation_time", "num_gpu", "cpu_milli", "memory_mib")  # a pod CSV has these


@dataclass(frozen=True)
class JobSpec:
    name: str
    queue: str  # "" when the workload has no queues
    members: int
    gpus: int  # per pod
    cpu_milli: int
    memory_mib: int
    duration: float  # seconds of running, once every member is bound
    arrival: float  # seconds from the start
    priority: int = 0
    namespace: str = "default"
    # How the job wastes what it holds ("": it does not), and when or how: `workload_faults.Faults`.
    fault: str = ""
    fault_at: float = 0.0  # crash, node-loss: share of its duration run before; idle: busy share
    symptom: str = ""  # never-ready: the stuck pod's waiting reason ("": Running, not Ready)
    faulty_runs: int = 0  # runs (attempts) that show the fault; the ones after are fixed
    controller: str = ""  # kind of the controller owning its pods ("": bare pods)
    # Elastic (`elastic.py`): `members` is its minimum and it runs up to this many pods (0: not
    # elastic); `duration` is then its run at the maximum, longer with fewer workers.
    max_members: int = 0

    @property
    def pods(self) -> int:
        """The pods it has: its maximum when elastic, else its members."""
        return max(self.members, self.max_members)

    @property
    def elastic(self) -> bool:
        return self.max_members > self.members

    @property
    def total_gpus(self) -> int:
        return self.gpus * self.pods


@dataclass(frozen=True)
class Shape:
    """One kind of job in a generated mix: `weight` is its share of arrivals."""

    members: int
    gpus: int
    weight: float
    cpu_milli: int = 8000
    memory_mib: int = 65536


# What training platforms see: many small single-pod jobs, fewer large gangs.
DEFAULT_SHAPES = (
    Shape(1, 1, 30),
    Shape(1, 2, 15),
    Shape(1, 4, 12),
    Shape(1, 8, 13),
    Shape(2, 8, 12),
    Shape(4, 8, 10),
    Shape(8, 8, 5),
    Shape(16, 8, 3),
)


@dataclass(frozen=True)
class Mix:
    """A generated workload: `jobs` arrivals (Poisson) over `hours`, durations lognormal with
    their median scaled so that the GPU-hours asked for are `load` x the cluster's. `starts`:
    seconds before which a queue has no arrivals (the queues begun take them all meanwhile)."""

    jobs: int = 400
    hours: float = 24.0
    load: float = 0.9
    seed: int = 1
    queues: Mapping[str, float] = field(default_factory=lambda: {"team-a": 1.0})
    priorities: Mapping[str, int] = field(default_factory=dict)  # by queue
    shapes: Sequence[Shape] = DEFAULT_SHAPES
    sigma: float = 1.0  # spread of the lognormal durations
    min_duration: float = 60.0
    starts: Mapping[str, float] = field(default_factory=dict)  # by queue


def pressure(picked: Sequence[Shape], node_gpus: Sequence[int]) -> float:
    """GPUs asked by `picked`, as a share of what the cluster can give them, at its tightest.

    A pod asking g GPUs runs only on a node with g or more, so the pods asking g or more share
    the GPUs of those nodes: this is the largest such ratio over g (when every node can hold
    every pod, the GPUs asked over the cluster's). Pods no node can hold count nowhere."""
    worst = 0.0
    for g in sorted({s.gpus for s in picked if s.gpus > 0}):
        room = sum(n for n in node_gpus if n >= g)
        if room:
            asked = sum(s.members * s.gpus for s in picked if s.gpus >= g)
            worst = max(worst, asked / room)
    return worst


def _begun(mix: Mix, queues: list[str], when: float) -> tuple[list[str], list[float]]:
    """The queues taking arrivals at `when` (those begun; before any has, the first to begin),
    with their shares."""
    first = min((mix.starts.get(q, 0.0) for q in queues), default=0.0)
    begun = [q for q in queues if mix.starts.get(q, 0.0) <= max(when, first)]
    return begun, [mix.queues[q] for q in begun]


def generate(mix: Mix, node_gpus: Sequence[int]) -> list[JobSpec]:
    """`node_gpus`: the GPUs of each node. Durations are sized so that the GPU-hours asked are
    `mix.load` of what the cluster can run of them (`pressure`): on a cluster of small and large
    nodes, jobs of 8-GPU pods load the 8-GPU nodes to `load`, whatever the small nodes do."""
    rng = random.Random(mix.seed)
    horizon = mix.hours * 3600.0
    shapes = list(mix.shapes)
    weights = [s.weight for s in shapes]
    queues = list(mix.queues)
    picked = [rng.choices(shapes, weights)[0] for _ in range(mix.jobs)]
    times = sorted(rng.uniform(0, horizon) for _ in range(mix.jobs))
    # median duration so that the tightest class's GPU-hours asked = load x its GPUs x horizon
    mean_factor = math.exp(mix.sigma**2 / 2)  # mean of a lognormal over its median
    median = mix.load * horizon / ((pressure(picked, node_gpus) or 1.0) * mean_factor)
    jobs = []
    for i, (shape, when) in enumerate(zip(picked, times, strict=True)):
        queue = rng.choices(*_begun(mix, queues, when))[0] if queues else ""
        duration = max(
            mix.min_duration, min(rng.lognormvariate(math.log(median), mix.sigma), horizon)
        )
        jobs.append(
            JobSpec(
                name=f"job-{i:06d}",
                queue=queue,
                members=shape.members,
                gpus=shape.gpus,
                cpu_milli=shape.cpu_milli,
                memory_mib=shape.memory_mib,
                duration=round(duration, 1),
                arrival=round(when, 3),
                priority=mix.priorities.get(queue, 0),
                namespace=queue or "default",
            )
        )
    return jobs


def from_trace(
    path: Path, queues: Sequence[str] = (), limit: int | None = None, seed: int = 1
) -> list[JobSpec]:
    """One single-pod job per row of an alibaba-gpu-v2023 pod CSV: it arrives at its creation
    time and runs from scheduling to deletion. A share of one GPU (`gpu_milli`) asks for a whole
    GPU: the device plugin hands out whole GPUs. Rows are spread over `queues` at random."""
    rng = random.Random(seed)
    if path.is_dir():
        path = path / DEFAULT_PODS
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        missing = [c for c in TRACE_COLUMNS if c not in (reader.fieldnames or ())]
        if missing:
            raise ValueError(
                f"not an alibaba-gpu-v2023 pod CSV: no {', '.join(missing)} column"
                f"{'s' if len(missing) > 1 else ''}"
            )
        rows = list(reader)
    rows = [r for r in rows if r.get("creation_time")]
    rows.sort(key=lambda r: float(r["creation_time"]))
    if limit is not None:
        rows = rows[:limit]
    start = float(rows[0]["creation_time"]) if rows else 0.0
    jobs = []
    for i, row in enumerate(rows):
        created = float(row["creation_time"])
        began = float(row.get("scheduled_time") or created or 0)
        ended = float(row.get("deletion_time") or 0)
        duration = ended - began if ended > began else 3600.0
        gpus = int(row["num_gpu"])
        if gpus == 0 and int(row.get("gpu_milli") or 0) > 0:
            gpus = 1
        queue = rng.choice(list(queues)) if queues else ""
        jobs.append(
            JobSpec(
                name=f"trace-{i:06d}",
                queue=queue,
                members=1,
                gpus=gpus,
                cpu_milli=int(row["cpu_milli"]),
                memory_mib=int(row["memory_mib"]),
                duration=max(1.0, duration),
                arrival=created - start,
                namespace=queue or "default",
            )
        )
    return jobs


T = TypeVar("T")


def fill_to_capacity(
    items: Sequence[T], demand: Callable[[T], int], capacity: int, seed: int
) -> list[T]:
    """The FGD paper's arrivals (Weng et al., ATC '23): the list in order, then seeded draws from
    it until what they ask for (`demand` of each) exceeds `capacity`."""
    rng = random.Random(seed)
    out, asked = list(items), sum(demand(item) for item in items)
    if not any(demand(item) > 0 for item in items):
        return out  # nothing asks for anything: no draw would fill the cluster
    while asked <= capacity:
        item = rng.choice(items)
        out.append(item)
        asked += demand(item)
    return out


FGD_SPACING = 1.0  # seconds between two arrivals: each pod is placed before the next comes


def fgd_arrivals(jobs: Sequence[JobSpec], capacity_gpus: int, seed: int) -> list[JobSpec]:
    """A trace's pods as the FGD paper replays them: in submission order, then seeded draws from
    the same list until the GPUs asked for exceed the cluster's; one a second, none leaving."""
    filled = fill_to_capacity(jobs, lambda j: j.gpus, capacity_gpus, seed)
    return [
        dataclasses.replace(job, name=f"fgd-{i:06d}", arrival=i * FGD_SPACING, duration=math.inf)
        for i, job in enumerate(filled)
    ]


EPOCH = datetime(2026, 12, 1, tzinfo=UTC).timestamp()


def stamp(seconds: float) -> str:
    """An RFC 3339 time `seconds` after the simulation's epoch (microseconds kept: creation
    order is kube-scheduler's tie-break)."""
    return datetime.fromtimestamp(EPOCH + seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def pod_object(
    job: JobSpec, index: int, uid: str, created: float, scheduler: str = "gangplank"
) -> dict[str, Any]:
    name = job.name if job.pods == 1 else f"{job.name}-{index}"
    labels: dict[str, str] = {"job-name": job.name}
    annotations: dict[str, str] = {}
    if job.queue:
        labels[QUEUE_LABEL] = job.queue
    if job.pods > 1:
        labels[GANG_LABEL] = job.name
        annotations[GANG_SIZE] = str(job.members)
    if job.elastic:
        annotations[GANG_MAX] = str(job.max_members)
    requests: dict[str, str] = {"cpu": f"{job.cpu_milli}m", "memory": f"{job.memory_mib}Mi"}
    if job.gpus:
        requests[GPU] = str(job.gpus)
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": job.namespace,
        "uid": uid,
        "labels": labels,
        "annotations": annotations,
        "creationTimestamp": stamp(created),
    }
    if job.controller:
        metadata["ownerReferences"] = [
            {
                "apiVersion": "kubeflow.org/v1",
                "kind": job.controller,
                "name": job.name,
                "uid": f"{job.namespace}-{job.name}",
                "controller": True,
            }
        ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {
            "schedulerName": scheduler,
            "priority": job.priority,
            "terminationGracePeriodSeconds": 0,
            "containers": [
                {
                    "name": "train",
                    "image": "example.com/train:latest",
                    "resources": {"requests": requests, "limits": dict(requests)},
                }
            ],
        },
        "status": {"phase": "Pending"},
    }
