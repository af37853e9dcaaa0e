"""How many gangs are in each state, for the metrics and `gangplank status`."""

from __future__ import annotations

from extender.core.engine import Engine
from extender.core.gangs.gang import resolve_gang
from extender.core.model.snapshot import Snapshot


def gang_counts(engine: Engine, snapshot: Snapshot) -> dict[str, int]:
    """Gangs waiting, planned, running (all members bound), and partial: running with fewer
    members than their size and no plan to complete them (should read zero)."""
    waiting = engine.waiting.gang_keys()
    running = partial_ = 0
    for key, pods in snapshot.groups.items():
        if key in engine.reservations or key in waiting:
            continue
        members = [p for p in pods if p.active]
        bound = [p for p in members if p.node_name]
        if members and len(bound) == len(members):
            running += 1
        if bound:
            gang = resolve_gang(snapshot, key)
            if not gang.problem and len(bound) < gang.size:
                partial_ += 1
    return {
        "waiting": len(waiting),
        "planned": len(engine.reservations),
        "running": running,
        "partial": partial_,
    }
