"""The policy's `topology` and `placement` sections: tiers of domains and scoring weights.

```yaml
topology:
  tiers:                       # narrowest first; a node's domain is its first label present
    - {name: clique, labels: [nvidia.com/gpu.clique]}
    - {name: rack, labels: [network.gangplank.io/rack, topology.k8s.aws/network-node-layer-3]}
  budgets:                     # shared-link budgets per domain of a tier (`budgets.py`)
    rack:
      storageRead: {perDomain: 200Gi, mode: preferred}   # bytes/s; pods: gangplank.io/storage-read
placement:
  weights: {fragmentation: 10, keepGpuNodes: 3, gpuModel: 2, binpack: 0.5, preferredNodes: 2,
            dataLocality: 20, linkBudget: 30}
```
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from extender.core.model.quantity import QuantityError, parse_quantity
from extender.core.placement.budgets import Budget
from extender.core.placement.scoring import ScoreWeights
from extender.core.placement.topology import DEFAULT_TOPOLOGY, Tier, Topology

WEIGHT_KEYS = {
    "fragmentation": "fragmentation",
    "keepGpuNodes": "keep_gpu_nodes",
    "gpuModel": "gpu_model",
    "binpack": "binpack",
    "preferredNodes": "preferred_nodes",
    "dataLocality": "data_locality",
    "linkBudget": "link_budget",
}
QUANTITY_NAME = re.compile(r"^[a-z][a-zA-Z0-9]*$")  # camelCase: storageRead

Fail = Callable[[str, str], Exception]


def parse_topology(raw: Any, fail: Fail) -> Topology:
    if raw is None:
        return DEFAULT_TOPOLOGY
    if not isinstance(raw, dict) or set(raw) - {"tiers", "budgets"}:
        raise fail("topology", "must be a map with the fields tiers and budgets")
    tiers_raw = raw.get("tiers")
    if tiers_raw is None and "budgets" in raw:
        tiers = DEFAULT_TOPOLOGY.tiers
    else:
        tiers = _tiers(tiers_raw, fail)
    return Topology(tiers, _budgets(raw.get("budgets"), tiers, fail))


def _tiers(tiers_raw: Any, fail: Fail) -> tuple[Tier, ...]:
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
    return tuple(tiers)


def _budgets(raw: Any, tiers: tuple[Tier, ...], fail: Fail) -> tuple[Budget, ...]:
    """`{<tier>: {<quantity>: {perDomain: <quantity>, mode: preferred|required}}}`."""
    if raw is None:
        return ()
    if not isinstance(raw, dict):
        raise fail("topology.budgets", "must be a map of tier name to its budgets")
    by_name = {t.name: t for t in tiers}
    budgets: list[Budget] = []
    for tier_name, quantities in raw.items():
        where = f"topology.budgets.{tier_name}"
        tier = by_name.get(tier_name)
        if tier is None:
            raise fail(where, f"names no tier (tiers: {', '.join(by_name)})")
        if not isinstance(quantities, dict) or not quantities:
            raise fail(where, "must be a map of quantity name (e.g. storageRead) to its budget")
        for quantity, spec in quantities.items():
            at = f"{where}.{quantity}"
            if not isinstance(quantity, str) or not QUANTITY_NAME.match(quantity):
                raise fail(at, "a quantity is named in camelCase, e.g. storageRead")
            if not isinstance(spec, dict) or set(spec) - {"perDomain", "mode"}:
                raise fail(at, "must be a map with perDomain (bytes per second) and mode")
            if "perDomain" not in spec:
                raise fail(f"{at}.perDomain", "is missing (bytes per second, e.g. 200Gi)")
            try:
                per_domain = parse_quantity(spec["perDomain"])
            except QuantityError as err:
                raise fail(f"{at}.perDomain", str(err)) from None
            mode = spec.get("mode", "preferred")
            if mode not in ("preferred", "required"):
                raise fail(f"{at}.mode", f"{mode!r} must be preferred or required")
            budgets.append(Budget(tier, quantity, per_domain, mode == "required"))
    return tuple(budgets)


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
