"""A Kueue ClusterQueue's or Cohort's quota (its resourceGroups) as gangplank counts it, and what
the quota means beyond its figures: a ClusterQueue admits no workload that asks for a resource it
does not cover (max 0 of it), and a virtual resource (`cpu_credits` of a resource
transformation) capped what it is derived from."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from extender.core.model.quantity import QuantityError, exact_quantity
from extender.core.model.resources import GPU
from extender.policy.importing.result import (
    Imported,
    Manifest,
    add,
    amount,
    cohort_of,
    virtual,
    written,
)


@dataclass
class Quota:
    nominal: dict[str, int] = field(default_factory=dict)
    ceiling: dict[str, int] = field(default_factory=dict)  # + borrowingLimit, where all set one
    covered: set[str] = field(default_factory=set)  # every resource it names, virtual ones too
    credits: dict[str, Decimal] = field(default_factory=dict)  # virtual resource -> its nominal


def _names(group: Mapping[str, Any]) -> set[str]:
    names = {str(r) for r in group.get("coveredResources") or []}
    for flavor in group.get("flavors") or []:
        names |= {str(res.get("name")) for res in flavor.get("resources") or []}
    return names


def named_resources(objects: Iterable[Manifest]) -> set[str]:
    """The resources the resourceGroups of `objects` name that gangplank counts per pod."""
    return {
        name
        for obj in objects
        for group in obj.spec.get("resourceGroups") or []
        for name in _names(group)
        if not virtual(name)
    }


def _credit(value: Any) -> Decimal:
    try:
        return exact_quantity(value)
    except QuantityError:
        return Decimal(0)


def kueue_groups(obj: Manifest, out: Imported) -> Quota:
    """Nominal quotas summed over flavors, and nominal + borrowing limit where every flavor of a
    resource sets one; virtual resources are kept aside (`credits`)."""
    quota = Quota()
    unlimited: set[str] = set()
    where = obj.where
    for group in obj.spec.get("resourceGroups") or []:
        quota.covered |= _names(group)
        flavors = group.get("flavors") or []
        if len(flavors) > 1:
            names = ", ".join(str(f.get("name")) for f in flavors)
            out.notes.append(
                f"{where}: flavors {names} merged into one quota (gangplank has no flavors; "
                "steer pods to node types with node selectors)"
            )
        for flavor in flavors:
            for res in flavor.get("resources") or []:
                name = str(res.get("name"))
                if virtual(name):
                    quota.credits[name] = quota.credits.get(name, Decimal(0)) + _credit(
                        res.get("nominalQuota", 0)
                    )
                counted = amount(name, res.get("nominalQuota", 0), where, out)
                if counted is None:
                    continue
                add(quota.nominal, name, counted)
                limit = res.get("borrowingLimit")
                if limit is None:
                    unlimited.add(name)
                else:
                    add(quota.ceiling, name, counted + (amount(name, limit, where, out) or 0))
                if res.get("lendingLimit") is not None:
                    out.notes.append(
                        f"{where}: lendingLimit of {name} not mapped (gangplank lends all unused "
                        "guarantee while its owner has no work waiting)"
                    )
    quota.ceiling = {k: v for k, v in quota.ceiling.items() if k not in unlimited}
    return quota


def _excluded(resource: str, prefixes: Iterable[str]) -> bool:
    return any(resource == p or resource.startswith(p.rstrip("/") + "/") for p in prefixes)


def not_covered(
    obj: Manifest, quota: Quota, named: set[str], ceiling: dict[str, int], out: Imported
) -> None:
    """Max 0 of each resource the import names (and GPUs) that the ClusterQueue does not cover:
    Kueue admits no workload that asks for one (`pods` counts only where covered; resources of
    its excludeResourcePrefixes are not counted at all)."""
    prefixes = [str(p) for p in obj.spec.get("excludeResourcePrefixes") or []]
    missing = sorted(
        r
        for r in (named | {GPU}) - quota.covered - {"pods"}
        if not virtual(r) and not _excluded(r, prefixes)
    )
    if not missing:
        return
    for resource in missing:
        ceiling[resource] = 0
    if prefixes:
        out.mapped.append(
            f"{obj.where}: excludeResourcePrefixes {', '.join(prefixes)}: not held to a max"
        )
    covers = sorted(quota.covered - {r for r in quota.covered if virtual(r)})
    if not covers:
        out.mapped.append(
            f"{obj.where}: no resourceGroups, so Kueue admits nothing to it: max 0 of "
            f"{', '.join(missing)}"
        )
        return
    lends = ", nor lends it one from its cohort" if cohort_of(obj) else ""
    out.mapped.append(
        f"{obj.where}: covers {', '.join(covers)} only: max 0 of {', '.join(missing)} (Kueue "
        f"admits no workload that asks for a resource its ClusterQueue does not cover{lends})"
    )


def _derived_from(credit: str, covered: Iterable[str]) -> str | None:
    """The counted resource a virtual one is named after (`cpu_credits` -> cpu), if any."""
    found = [r for r in covered if not virtual(r) and credit.startswith(r.rsplit("/", 1)[-1])]
    return max(found, key=len) if found else None


def credit_caps(obj: Manifest, quota: Quota, ceiling: Mapping[str, int], out: Imported) -> None:
    """What dropping a virtual resource does to the cap on what it is derived from: the figure
    Kueue admitted and the one the imported queue has."""
    for credit, cap in quota.credits.items():
        source = _derived_from(credit, quota.covered)
        if source is None:
            out.notes.append(
                f"{obj.where}: dropping {credit} lifts the cap it put on the resources Kueue's "
                "resource transformation (in its Configuration, not in this input) derives it from"
            )
            continue
        kueue = written({source: int(cap * 1000) if source == "cpu" else int(cap)})[source]
        if source in ceiling:
            now = f"max {source} is {written({source: ceiling[source]})[source]}"
        else:
            now = f"{source} has no max of its own, only its cohort's"
        out.notes.append(
            f"{obj.where}: dropping {credit} raises the cap on {source}: with one {credit} per "
            f"{source} (Kueue's resource transformation, in its Configuration, not in this "
            f"input), Kueue admitted {source} {kueue} over all flavors together; imported, {now} "
            f"(set max {source}: {kueue} to keep Kueue's cap)"
        )
