"""Kueue's cohort tree as gangplank's parent queues: a Cohort (or the cohort a ClusterQueue
names) becomes a parent queue whose guarantee is its own quota plus its children's; the top of a
tree may use no more than what the tree is guaranteed (Kueue admits nothing beyond nominal
quotas)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from extender.core.model.resources import total
from extender.policy.importing.kueue_quota import kueue_groups
from extender.policy.importing.result import (
    Imported,
    ImportRefused,
    Manifest,
    dns,
    number,
    put,
    unmapped,
    written,
)

COHORT_KEYS = {"parent", "parentName", "resourceGroups", "fairSharing"}


def fair_weight(obj: Manifest, queue: dict[str, Any], out: Imported) -> None:
    raw = (obj.spec.get("fairSharing") or {}).get("weight")
    if raw is None:
        return
    weight = number(raw)
    if weight is None or weight <= 0:
        out.notes.append(
            f"{obj.where}: fairSharing.weight {raw} not mapped (gangplank's weight is above 0; "
            "Kueue's 0 means borrow last and be preempted first)"
        )
        return
    queue["weight"] = weight
    out.mapped.append(
        f"{obj.where}: fairSharing.weight {raw} -> weight {weight} (its share among its siblings)"
    )


@dataclass
class Cohort:
    name: str
    where: str
    parent: str | None = None
    own: dict[str, int] = field(default_factory=dict)
    extra: dict[str, int] = field(default_factory=dict)  # borrowing limits, where all set
    queue: dict[str, Any] = field(default_factory=dict)


def cohort(obj: Manifest, out: Imported) -> Cohort:
    own, ceiling = kueue_groups(obj, out)
    parent = obj.spec.get("parentName") or obj.spec.get("parent")
    entry = Cohort(obj.name, obj.where, str(parent) if parent else None, own)
    entry.extra = {k: v - own.get(k, 0) for k, v in ceiling.items()}
    fair_weight(obj, entry.queue, out)
    unmapped(obj, COHORT_KEYS, out, {}, {})
    return entry


def cohort_of(obj: Manifest) -> str | None:
    cohort = obj.spec.get("cohort") or obj.spec.get("cohortName")
    return str(cohort) if cohort else None


def cohort_names(cohorts: Mapping[str, Cohort], out: Imported) -> dict[str, str]:
    names: dict[str, str] = {}
    for name in cohorts:
        queue = dns(name)
        if queue in out.queues:
            out.notes.append(f"Cohort {name}: another queue has the same name; cohort renamed")
            queue = f"{queue}-cohort"
        names[name] = queue
    return names


def tree_top(cohorts: Mapping[str, Cohort], name: str | None) -> str | None:
    """The top of a cohort tree (None: in no cohort)."""
    if not name:
        return None
    seen = [name]
    while (parent := cohorts[seen[-1]].parent) is not None and parent not in seen:
        seen.append(parent)
    return seen[-1]


def add_cohorts(
    cohorts: Mapping[str, Cohort],
    names: Mapping[str, str],
    members: Mapping[str, list[dict[str, int]]],
    out: Imported,
) -> None:
    """Cohorts become parent queues: each guarantees its own quota plus its children's; the top
    of a tree may use no more than that (Kueue admits nothing beyond the nominal quotas)."""
    totals: dict[str, dict[str, int]] = {}

    def tree_total(name: str, path: tuple[str, ...]) -> dict[str, int]:
        if name in path:
            cycle = " -> ".join([*path, name])
            raise ImportRefused(f"Cohort {name}: cohorts form a cycle ({cycle})")
        if name not in totals:
            kids = [tree_total(c, (*path, name)) for c, e in cohorts.items() if e.parent == name]
            totals[name] = total((cohorts[name].own, *kids, *members.get(name, ())))
        return totals[name]

    for name, entry in cohorts.items():
        queue: dict[str, Any] = {"name": names[name]}
        if entry.parent is not None:
            queue["parent"] = names[entry.parent]
        queue.update(entry.queue)
        guaranteed = tree_total(name, ())
        if entry.own:
            queue["guarantee"] = written(guaranteed)
        if entry.parent is None and guaranteed:
            queue["max"] = written(guaranteed)
            out.mapped.append(
                f"{entry.where}: max = what its tree is guaranteed (Kueue admits nothing beyond "
                "nominal quotas)"
            )
        elif entry.extra:
            queue["max"] = written(total((guaranteed, entry.extra)))
            out.mapped.append(f"{entry.where}: max = its tree's quota + borrowingLimit")
        put(out, queue, entry.where)
