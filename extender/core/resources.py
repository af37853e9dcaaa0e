"""Resource lists as plain mappings of resource name to integer amount.

`cpu` is in millicores, everything else in base units (see `quantity`). The count of pods a node
takes is the resource `pods`, one per pod, as kube-scheduler counts it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

Resources = Mapping[str, int]

EMPTY: Resources = {}


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


def shortfall(request: Resources, free: Resources) -> dict[str, int]:
    """What `request` needs beyond `free`, per resource (empty when it fits)."""
    return {
        name: amount - free.get(name, 0)
        for name, amount in request.items()
        if amount > free.get(name, 0)
    }


def subtract(a: Resources, b: Resources) -> dict[str, int]:
    """`a - b` for every resource in `a` (may go negative: over-committed nodes exist)."""
    return {name: amount - b.get(name, 0) for name, amount in a.items()}
