"""Guarantees: what each queue is guaranteed, and what of it the work waiting under it may keep
other queues from borrowing.

A parent that leaves a resource out of its guarantee guarantees its children's sum. A queue
protects the part of its guarantee its waiting work needs and does not have yet, but only while
some waiting job fits in what the guarantee has left (work that must borrow anyway is not
protected), and at least what its children protect together.
"""

from __future__ import annotations

from collections.abc import Mapping

from extender.core.model.resources import total
from extender.core.queues.policy import Policy


def guarantees(policy: Policy) -> dict[str, dict[str, int]]:
    """Each queue's guarantee; a parent that leaves a resource out guarantees its children's sum."""
    out: dict[str, dict[str, int]] = {}
    for name in _bottom_up(policy):
        spec = policy.queues[name]
        summed = total(out[kid] for kid in policy.children.get(name, ()))
        out[name] = {**summed, **spec.guarantee}
    return out


def protected(
    guarantee: Mapping[str, int],
    used: Mapping[str, int],
    demand: Mapping[str, int],
    smallest: Mapping[str, int],
    kids_protected: Mapping[str, int],
) -> dict[str, int]:
    """What a queue's guarantee holds back for the work waiting under it: per resource the part
    of its `demand` the guarantee has room for beyond `used`, when the `smallest` waiting job fits
    in that room; at least what its children protect."""
    out = dict(kids_protected)
    for resource, amount in demand.items():
        room = max(0, guarantee.get(resource, 0) - used.get(resource, 0))
        if smallest.get(resource, 0) > room:
            # Every job waiting here needs more than the guarantee has left: each will have to
            # borrow like anyone else, so the guarantee holds nothing back for them (holding it
            # would leave GPUs idle that nobody here can use, and two queues holding for each
            # other would wait forever).
            continue
        owed = min(amount, room)
        if owed > out.get(resource, 0):
            out[resource] = owed
    return {k: v for k, v in out.items() if v}


def _bottom_up(policy: Policy) -> list[str]:
    """Children before parents."""
    order: list[str] = []

    def visit(name: str) -> None:
        for kid in policy.children.get(name, ()):
            visit(kid)
        order.append(name)

    for top in policy.children.get(None, ()):
        visit(top)
    return order
