"""A Volcano Queue's own fields as a gangplank queue: weight; capability → max; deserved, else
guarantee.resource → guarantee; status Closed → closed, Closing → draining; `reclaimable: false`
→ `preemption.reclaimable: false`. (Where it sits in the tree is volcano_tree's.)"""

from __future__ import annotations

from typing import Any

from extender.policy.importing.result import Imported, Manifest, amount, dns, unmapped, written

HIERARCHY = "volcano.sh/hierarchy"
HIERARCHY_WEIGHTS = "volcano.sh/hierarchy-weights"
DEQUEUE = "volcano.sh/dequeue-strategy"
VOLCANO_KEYS = {
    "weight",
    "capability",
    "deserved",
    "guarantee",
    "parent",
    "reclaimable",
    "priority",
    "dequeueStrategy",
}
FIFO = (
    "in Volcano a job at the head of the queue that cannot start holds back every job behind "
    "it; gangplank starts a later job that fits without delaying the first"
)


def _amounts(obj: Manifest, raw: Any, out: Imported) -> dict[str, int]:
    found: dict[str, int] = {}
    for resource, value in (raw or {}).items():
        counted = amount(str(resource), value, obj.where, out)
        if counted is not None:
            found[str(resource)] = counted
    return found


def spec_weight(obj: Manifest) -> int | float | None:
    """`spec.weight` when it is a number above 0."""
    weight = obj.spec.get("weight")
    if isinstance(weight, int | float) and not isinstance(weight, bool) and weight > 0:
        return weight
    return None


def _order(obj: Manifest, out: Imported) -> None:
    """What a queue's priority and dequeueStrategy did in Volcano, and what gangplank does
    instead (traverse, the default, is gangplank's order)."""
    priority = obj.spec.get("priority")
    if isinstance(priority, int) and priority > 0:
        out.notes.append(
            f"{obj.where}: priority {priority} not mapped (in Volcano a queue of higher priority "
            "is scheduled first and reclaimed from last; gangplank orders queues by their share "
            "against their weight, and reclaims what any queue borrowed beyond its guarantee: "
            "give the queue a larger weight or a guarantee, and preemption.reclaimable: false to "
            "keep what it borrows)"
        )
    strategy = obj.spec.get("dequeueStrategy")
    if strategy and strategy != "traverse":
        out.notes.append(f"{obj.where}: dequeueStrategy {strategy} not mapped ({FIFO})")


def volcano_queue(obj: Manifest, out: Imported) -> dict[str, Any]:
    spec = obj.spec
    queue: dict[str, Any] = {"name": dns(obj.name)}
    if queue["name"] != obj.name:  # pods name the queue as Volcano spells it
        queue["aliases"] = [obj.name]
    weight = spec_weight(obj)
    if weight is not None:
        queue["weight"] = weight
    elif spec.get("weight") is not None:  # dropped without a word before
        out.notes.append(
            f"{obj.where}: weight {spec['weight']!r} not mapped (a weight is a number above 0): "
            "the queue gets gangplank's default weight, 1"
        )
    deserved = _amounts(obj, spec.get("deserved"), out)
    guaranteed = _amounts(obj, (spec.get("guarantee") or {}).get("resource"), out)
    if deserved:
        queue["guarantee"] = written(deserved)
        if guaranteed:
            out.notes.append(
                f"{obj.where}: guarantee.resource not mapped; deserved is used as the guarantee"
            )
    elif guaranteed:
        queue["guarantee"] = written(guaranteed)
    capability = _amounts(obj, spec.get("capability"), out)
    if capability:
        queue["max"] = written(capability)
    state = (obj.doc.get("status") or {}).get("state")
    if state in ("Closed", "Closing"):
        queue["state"] = "closed" if state == "Closed" else "draining"
    if spec.get("reclaimable") is False:
        queue["preemption"] = {"reclaimable": False}
    _order(obj, out)
    unmapped(obj, VOLCANO_KEYS, out)
    for key, value in obj.annotations.items():
        if key == DEQUEUE and value == "traverse":
            out.mapped.append(f"{obj.where}: {key} traverse is gangplank's order (with backfill)")
        elif key == DEQUEUE:
            out.notes.append(f"{obj.where}: {key} {value} not mapped ({FIFO})")
        elif "volcano.sh/" in key and key not in (HIERARCHY, HIERARCHY_WEIGHTS):
            out.notes.append(f"{obj.where}: annotation {key} not mapped")
    return queue
