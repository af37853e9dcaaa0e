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
    describe,
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


def _cohort(obj: Manifest, out: Imported) -> Cohort:
    quota = kueue_groups(obj, out)
    for credit in quota.credits:
        out.notes.append(
            f"{obj.where}: dropping {credit} lifts the cap it put, in the cohort's tree, on the "
            "resources Kueue's resource transformation derives it from"
        )
    own, ceiling = quota.nominal, quota.ceiling
    parent = obj.spec.get("parentName") or obj.spec.get("parent")
    entry = Cohort(obj.name, obj.where, str(parent) if parent else None, own)
    entry.extra = {k: v - own.get(k, 0) for k, v in ceiling.items()}
    fair_weight(obj, entry.queue, out)
    unmapped(obj, COHORT_KEYS, out)
    return entry


def cohort_tree(
    objects: list[Manifest], members: Mapping[str, list[str]], out: Imported
) -> dict[str, Cohort]:
    """The cohorts that hold a ClusterQueue, in them or under them: the Cohort objects, the
    cohorts ClusterQueues name and the parents Cohorts name. A cohort that holds none admits
    nothing in Kueue (as a gangplank queue it would be a leaf that takes work with no max): it
    is dropped, its own quota added to the nearest cohort above it that is kept."""
    cohorts = {obj.name: _cohort(obj, out) for obj in objects}
    for name in members:  # cohorts named only by a ClusterQueue
        cohorts.setdefault(name, Cohort(name, f"Cohort {name}"))
    for entry in list(cohorts.values()):  # and parents named only by a Cohort
        if entry.parent is not None:
            cohorts.setdefault(entry.parent, Cohort(entry.parent, f"Cohort {entry.parent}"))
    kept = set(members)
    for name in members:  # and every cohort above one that holds a ClusterQueue
        while (name := cohorts[name].parent or "") and name not in kept:
            kept.add(name)
    parents = {name: entry.parent for name, entry in cohorts.items()}
    for name, entry in list(cohorts.items()):
        if name in kept:
            continue
        del cohorts[name]
        why = (
            f"{entry.where}: no ClusterQueue in it or under it, so nothing is admitted through "
            "it: dropped (as a queue it would take work with no max)"
        )
        above, seen = entry.parent, {name}
        while above is not None and above not in kept and above not in seen:
            seen.add(above)
            above = parents.get(above)
        if not entry.own:
            out.notes.append(why)
        elif above is not None and above in kept:
            cohorts[above].own = total((cohorts[above].own, entry.own))
            out.notes.append(
                f"{why}; its quota {describe(entry.own)} is added to Cohort {above}'s, which its "
                "tree borrows as in Kueue"
            )
        else:
            out.notes.append(f"{why}; its quota {describe(entry.own)} served no ClusterQueue")
    return cohorts


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
