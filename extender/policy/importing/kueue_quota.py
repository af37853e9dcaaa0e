"""A Kueue ClusterQueue's or Cohort's quota (its resourceGroups) as gangplank counts it."""

from __future__ import annotations

from extender.policy.importing.result import Imported, Manifest, add, amount


def kueue_groups(obj: Manifest, out: Imported) -> tuple[dict[str, int], dict[str, int]]:
    """(nominal, nominal + borrowing limit where every flavor of a resource sets one)."""
    nominal: dict[str, int] = {}
    ceiling: dict[str, int] = {}
    unlimited: set[str] = set()
    where = obj.where
    for group in obj.spec.get("resourceGroups") or []:
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
                counted = amount(name, res.get("nominalQuota", 0), where, out)
                if counted is None:
                    continue
                add(nominal, name, counted)
                limit = res.get("borrowingLimit")
                if limit is None:
                    unlimited.add(name)
                else:
                    add(ceiling, name, counted + (amount(name, limit, where, out) or 0))
                if res.get("lendingLimit") is not None:
                    out.notes.append(
                        f"{where}: lendingLimit of {name} not mapped (gangplank lends all unused "
                        "guarantee while its owner has no work waiting)"
                    )
    return nominal, {k: v for k, v in ceiling.items() if k not in unlimited}
