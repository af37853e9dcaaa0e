"""The policy's `topology` and `placement` sections: tiers of domains and scoring weights.

```yaml
topology:
  tiers:                       # narrowest first; a node's domain is its first label present
    - {name: clique, labels: [nvidia.com/gpu.clique]}
    - {name: rack, labels: [network.gangplank.io/rack, topology.k8s.aws/network-node-layer-3]}
placement:
  weights: {fragmentation: 10, keepGpuNodes: 3, gpuModel: 2, binpack: 0.5, preferredNodes: 2}
```
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from extender.core.placement.scoring import ScoreWeights
from extender.core.placement.topology import DEFAULT_TOPOLOGY, Tier, Topology

WEIGHT_KEYS = {
    "fragmentation": "fragmentation",
    "keepGpuNodes": "keep_gpu_nodes",
    "gpuModel": "gpu_model",
    "binpack": "binpack",
    "preferredNodes": "preferred_nodes",
}

Fail = Callable[[str, str], Exception]


def parse_topology(raw: Any, fail: Fail) -> Topology:
    if raw is None:
        return DEFAULT_TOPOLOGY
    if not isinstance(raw, dict) or set(raw) - {"tiers"}:
        raise fail("topology", "must be a map with one field, tiers")
    tiers_raw = raw.get("tiers")
    if not isinstance(tiers_raw, list) or not tiers_raw:
        raise fail("topology.tiers", "must be a list of {name, labels}, narrowest first")
    tiers: list[Tier] = []
    for i, item in enumerate(tiers_raw):
        where = f"topology.tiers[{i}]"
        if not isinstance(item, dict) or set(item) - {"name", "labels"}:
            raise fail(where, "must be a map with name and labels")
        name, labels = item.get("name"), item.get("labels")
        if not isinstance(name, str) or not name or any(t.name == name for t in tiers):
            raise fail(f"{where}.name", f"{name!r} must be a new, non-empty name")
        if (
            not isinstance(labels, list)
            or not labels
            or not all(isinstance(x, str) and x for x in labels)
        ):
            raise fail(f"{where}.labels", "must be a list of node label keys")
        tiers.append(Tier(name, tuple(labels)))
    return Topology(tuple(tiers))


def parse_weights(raw: Any, fail: Fail) -> ScoreWeights:
    if raw is None:
        return ScoreWeights()
    if not isinstance(raw, dict) or set(raw) - {"weights"}:
        raise fail("placement", "must be a map with one field, weights")
    weights = raw.get("weights") or {}
    if not isinstance(weights, dict):
        raise fail("placement.weights", "must be a map of weights")
    values: dict[str, float] = {}
    for key, value in weights.items():
        if key not in WEIGHT_KEYS:
            raise fail(
                f"placement.weights.{key}", f"unknown (known: {', '.join(sorted(WEIGHT_KEYS))})"
            )
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 100:
            raise fail(f"placement.weights.{key}", f"{value!r} must be a number from 0 to 100")
        values[WEIGHT_KEYS[key]] = float(value)
    return ScoreWeights(**values)
