"""A large cluster made from the public Alibaba GPU traces (or synthetic when they are absent).

Nodes: the 4,278 GPU nodes of alibaba-spot-gpu-v2026, then openb's 1,523 nodes, up to the count
asked for. Pods: openb's pod list repeated (with new names) up to the count asked for, placed
first-fit on nodes with room, the rest left Pending. Objects are shaped like API server JSON.
"""

from __future__ import annotations

import csv
import itertools
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

DEFAULT_TRACES = Path(__file__).resolve().parent.parent.parent / "shared" / "traces"
SPOT_NODES = "alibaba-spot-gpu-v2026/node_info_df.csv"
OPENB_NODES = "alibaba-gpu-v2023/openb_node_list_all_node.csv"
OPENB_PODS = "alibaba-gpu-v2023/openb_pod_list_default.csv"


@dataclass
class NodeRow:
    name: str
    cpu_milli: int
    memory_mib: int
    gpus: int
    model: str


@dataclass
class PodRow:
    cpu_milli: int
    memory_mib: int
    gpus: int


def traces_present(traces: Path) -> bool:
    return all((traces / f).is_file() for f in (SPOT_NODES, OPENB_NODES, OPENB_PODS))


def node_rows(traces: Path | None) -> Iterator[NodeRow]:
    if traces is None:
        for i in itertools.count():
            yield NodeRow(f"synthetic-node-{i:05d}", 96000, 786432, 8, "synthetic")
        return
    # The traces hold 5,801 nodes; a larger cluster repeats them under new names.
    for copy in itertools.count():
        suffix = f"-copy-{copy}" if copy else ""
        for row in _trace_node_rows(traces):
            yield replace(row, name=row.name + suffix)


def _trace_node_rows(traces: Path) -> Iterator[NodeRow]:
    with (traces / SPOT_NODES).open() as f:
        for row in csv.DictReader(f):
            cpus = int(row["cpu_num"])
            yield NodeRow(
                f"spot-node-{int(row['node_name']):05d}",
                cpus * 1000,
                cpus * 8192,
                int(row["gpu_capacity_num"]),
                row["gpu_model"],
            )
    with (traces / OPENB_NODES).open() as f:
        for row in csv.DictReader(f):
            yield NodeRow(
                row["sn"],
                int(row["cpu_milli"]),
                int(row["memory_mib"]),
                int(row["gpu"]),
                row["model"] or "none",
            )


def pod_rows(traces: Path | None) -> list[PodRow]:
    if traces is None:
        return [PodRow(4000, 16384, g) for g in (0, 1, 1, 2, 4, 8)]
    with (traces / OPENB_PODS).open() as f:
        return [
            PodRow(int(r["cpu_milli"]), int(r["memory_mib"]), int(r["num_gpu"]))
            for r in csv.DictReader(f)
        ]


def node_object(row: NodeRow, index: int) -> dict[str, Any]:
    allocatable = {"cpu": f"{row.cpu_milli}m", "memory": f"{row.memory_mib}Mi", "pods": "110"}
    if row.gpus:
        allocatable["nvidia.com/gpu"] = str(row.gpus)
    return {
        "metadata": {
            "name": row.name,
            "uid": f"node-{index}",
            "resourceVersion": str(index + 1),
            "labels": {
                "kubernetes.io/hostname": row.name,
                "kubernetes.io/os": "linux",
                "nvidia.com/gpu.product": row.model,
                "topology.kubernetes.io/zone": f"zone-{index // 2048}",
                "network.gangplank.io/block": f"block-{index // 256}",
                "network.gangplank.io/rack": f"rack-{index // 16}",
            },
        },
        "spec": {"podCIDR": f"10.{index // 256}.{index % 256}.0/24"},
        "status": {
            "allocatable": allocatable,
            "capacity": dict(allocatable),
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def pod_object(row: PodRow, index: int, node: str | None) -> dict[str, Any]:
    requests = {"cpu": f"{row.cpu_milli}m", "memory": f"{row.memory_mib}Mi"}
    limits: dict[str, str] = {}
    if row.gpus:
        requests["nvidia.com/gpu"] = limits["nvidia.com/gpu"] = str(row.gpus)
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": "worker",
                "image": "registry.example/train:2026.11",
                "resources": {"requests": requests, "limits": limits},
                "volumeMounts": [
                    {
                        "name": "kube-api-access",
                        "readOnly": True,
                        "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                    }
                ],
            }
        ],
        "priority": 0,
        "schedulerName": "gangplank",
        "restartPolicy": "Never",
        "tolerations": [
            {
                "key": "node.kubernetes.io/not-ready",
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": 300,
            }
        ],
    }
    if node:
        spec["nodeName"] = node
    job = f"job-{index // 4}"
    return {
        "metadata": {
            "name": f"{job}-{index % 4}",
            "namespace": f"team-{index % 20}",
            "uid": f"pod-{index:08d}",
            "resourceVersion": str(100000 + index),
            "creationTimestamp": "2026-11-30T12:00:00Z",
            "labels": {"app": "trace", "job-name": job},
            "ownerReferences": [
                {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "name": job,
                    "uid": f"job-{index // 4}",
                    "controller": True,
                }
            ],
        },
        "spec": spec,
        "status": {"phase": "Running" if node else "Pending"},
    }


def build(
    nodes: int, pods: int, traces: Path | None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """API objects for `nodes` nodes and `pods` pods, pods placed first-fit where they fit."""
    rows = list(itertools.islice(node_rows(traces), nodes))
    node_objects = [node_object(r, i) for i, r in enumerate(rows)]
    free = [[r.cpu_milli, r.memory_mib, r.gpus, 110] for r in rows]
    templates = pod_rows(traces)
    pod_objects = []
    cursor = 0
    for i in range(pods):
        row = templates[i % len(templates)]
        placed = None
        for step in range(len(rows)):
            j = (cursor + step) % len(rows)
            f = free[j]
            if f[0] >= row.cpu_milli and f[1] >= row.memory_mib and f[2] >= row.gpus and f[3]:
                f[0] -= row.cpu_milli
                f[1] -= row.memory_mib
                f[2] -= row.gpus
                f[3] -= 1
                placed = rows[j].name
                cursor = j
                break
            if step > 64:  # a full cluster: leave the rest pending rather than scan it all
                break
        pod_objects.append(pod_object(row, i, placed))
    return node_objects, pod_objects
