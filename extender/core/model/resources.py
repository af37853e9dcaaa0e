"""Resource lists as plain mappings of resource name to integer amount.

`cpu` is in millicores, everything else in base units (see `quantity`). The count of pods a node
takes is the resource `pods`, one per pod, as kube-scheduler counts it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

Resources = Mapping[str, int]
GPU = "nvidia.com/gpu"  # the device plugin's resource name


def total(resource_lists: Iterable[Resources]) -> dict[str, int]:
    """Sum several resource lists."""
    out: dict[str, int] = {}
    for resources in resource_lists:
        for name, amount in resources.items():
            out[name] = out.get(name, 0) + amount
    return out


def maximum(a: Resources, b: Resources) -> dict[str, int]:
    """Per-resource maximum of two lists."""
    out = dict(a)
    for name, amount in b.items():
        if amount > out.get(name, 0):
            out[name] = amount
    return out
