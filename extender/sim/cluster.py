"""The simulated cluster's nodes: from a YAML dump, the public traces' node CSVs, or generated.

    nodes.yaml / dump.json        `kubectl get nodes -o yaml` (or any List holding Node objects)
    node_info_df.csv              the alibaba-spot-gpu-v2026 node list (4,278 GPU nodes)
    openb_node_list_*.csv         the alibaba-gpu-v2023 node lists
    a traces directory            its spot node list
    synthetic:64x8                64 nodes of 8 GPUs (8 nodes a rack, 4 racks a block)

Nodes come out as API server JSON, so the same objects feed the in-process cache and the fake
API server the demo's gangplank watches.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any

import yaml

from extender.core.model.resources import GPU

SPOT_NODES = "alibaba-spot-gpu-v2026/node_info_df.csv"
NODES_PER_RACK = 8
RACKS_PER_BLOCK = 4


class ClusterError(Exception):
    """The cluster could not be read; the message says which file and why."""


def node_object(
    name: str,
    *,
    gpus: int,
    cpu_milli: int,
    memory_mib: int,
    model: str = "",
    index: int = 0,
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A Node as the API server shows it, with rack and block labels by its index."""
    rack = index // NODES_PER_RACK
    all_labels = {
        "kubernetes.io/hostname": name,
        "network.gangplank.io/rack": f"rack-{rack:04d}",
        "network.gangplank.io/block": f"block-{rack // RACKS_PER_BLOCK:03d}",
        **(labels or {}),
    }
    if gpus and model:
        all_labels["nvidia.com/gpu.product"] = model
    allocatable = {"cpu": f"{cpu_milli}m", "memory": f"{memory_mib}Mi", "pods": "110"}
    if gpus:
        allocatable["nvidia.com/gpu"] = str(gpus)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": all_labels, "uid": f"node-{index}"},
        "spec": {},
        "status": {"allocatable": allocatable, "capacity": dict(allocatable)},
    }


def synthetic(nodes: int, gpus: int, model: str = "NVIDIA-H100-80GB-HBM3") -> list[dict[str, Any]]:
    return [
        node_object(
            f"node-{i:05d}", gpus=gpus, cpu_milli=96_000, memory_mib=786_432, model=model, index=i
        )
        for i in range(nodes)
    ]


def _csv_nodes(path: Path) -> list[dict[str, Any]]:
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        raise ClusterError(f"{path}: no rows")
    header = set(rows[0])
    out = []
    if {"gpu_model", "gpu_capacity_num", "cpu_num", "node_name"} <= header:
        for i, row in enumerate(rows):
            cpus = int(float(row["cpu_num"]))
            out.append(
                node_object(
                    f"spot-{int(float(row['node_name'])):05d}",
                    gpus=int(float(row["gpu_capacity_num"])),
                    cpu_milli=cpus * 1000,
                    memory_mib=cpus * 8192,
                    model=row["gpu_model"],
                    index=i,
                )
            )
    elif {"sn", "cpu_milli", "memory_mib", "gpu", "model"} <= header:
        for i, row in enumerate(rows):
            out.append(
                node_object(
                    row["sn"],
                    gpus=int(row["gpu"]),
                    cpu_milli=int(row["cpu_milli"]),
                    memory_mib=int(row["memory_mib"]),
                    model=row["model"],
                    index=i,
                )
            )
    else:
        raise ClusterError(
            f"{path}: not a node list this reads (columns {sorted(header)}; expected the "
            "alibaba-spot-gpu-v2026 or alibaba-gpu-v2023 node CSV)"
        )
    return out


def _items(document: Any) -> list[Any]:
    if isinstance(document, dict) and isinstance(document.get("items"), list):
        return list(document["items"])
    return [document]


def _yaml_nodes(path: Path) -> list[dict[str, Any]]:
    try:
        text = path.read_text()
        documents = [json.loads(text)] if path.suffix == ".json" else list(yaml.safe_load_all(text))
    except (OSError, ValueError, yaml.YAMLError) as err:
        raise ClusterError(f"{path}: {err}") from None
    nodes = [
        item
        for document in documents
        for item in _items(document)
        if isinstance(item, dict)
        and item.get("kind", "Node") == "Node"
        and "status" in item
        and isinstance(item.get("metadata"), dict)
    ]
    if not nodes:
        raise ClusterError(f"{path}: no Node objects in it")
    return nodes


def node_gpus(nodes: list[dict[str, Any]]) -> list[int]:
    """The GPUs each node can give (its allocatable `nvidia.com/gpu`)."""
    return [int(n["status"]["allocatable"].get(GPU, 0)) for n in nodes]


def load_cluster(spec: str) -> list[dict[str, Any]]:
    """The nodes `spec` names (see the module's docstring)."""
    found = re.fullmatch(r"synthetic:(\d+)x(\d+)", spec)
    if found:
        return synthetic(int(found.group(1)), int(found.group(2)))
    path = Path(spec)
    if path.is_dir():
        path = path / SPOT_NODES
    if not path.is_file():
        raise ClusterError(
            f"{spec}: no such file; the public traces are not in the repository (README, "
            "Simulate: where to get them); or pass a `kubectl get nodes -o yaml` dump, or "
            "synthetic:NODESxGPUS"
        )
    if path.suffix == ".csv":
        return _csv_nodes(path)
    return _yaml_nodes(path)
