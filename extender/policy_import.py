"""`gangplank policy import`: Kueue and Volcano queue manifests → a gangplank policy.

Kueue: a ClusterQueue becomes a queue (guarantee = its nominal quotas summed over flavors; max =
nominal + borrowingLimit where every flavor sets one; `stopPolicy` Hold → closed, HoldAndDrain →
draining; a namespaceSelector on `kubernetes.io/metadata.name` → namespaces); its cohort becomes
the parent queue (a Cohort's own nominal quota is added to its children's); a LocalQueue becomes
an alias `namespace/name` of its ClusterQueue's queue, so pods keep their
`kueue.x-k8s.io/queue-name` label. Volcano: a Queue becomes a queue (weight; capability → max;
deserved, else guarantee.resource → guarantee; `parent`; status Closed → closed, Closing →
draining; `reclaimable: false` → `preemption.reclaimable: false`). What has no counterpart
(flavors, lending limits, Kueue's preemption settings, other selectors) is listed in the notes,
never dropped silently.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from extender.core.policy import API_VERSION, KIND
from extender.core.quantity import QuantityError, parse_quantity

NAME_LABEL = "kubernetes.io/metadata.name"


@dataclass
class Imported:
    queues: dict[str, dict[str, Any]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def policy(self) -> dict[str, Any]:
        return {"apiVersion": API_VERSION, "kind": KIND, "queues": list(self.queues.values())}


def _dns(name: str) -> str:
    cleaned = re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-")
    return cleaned[:63] or "queue"


def _add(into: dict[str, int], resource: str, amount: int) -> None:
    into[resource] = into.get(resource, 0) + amount


def _amount(resource: str, value: Any, where: str, notes: list[str]) -> int | None:
    try:
        return parse_quantity(value, milli=(resource == "cpu"))
    except QuantityError as err:
        notes.append(f"{where}: {resource} {err}; left out")
        return None


def _written(amounts: Mapping[str, int]) -> dict[str, str]:
    """Amounts as a person writes them: cpu in cores or millicores, bytes in Gi/Mi when whole."""
    out: dict[str, str] = {}
    for resource, amount in sorted(amounts.items()):
        if resource == "cpu":
            out[resource] = str(amount // 1000) if amount % 1000 == 0 else f"{amount}m"
            continue
        text = str(amount)
        if resource in ("memory", "ephemeral-storage") and amount:
            for suffix, unit in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20)):
                if amount % unit == 0:
                    text = f"{amount // unit}{suffix}"
                    break
        out[resource] = text
    return out


def _kueue_groups(
    spec: Mapping[str, Any], where: str, notes: list[str]
) -> tuple[dict[str, int], dict[str, int]]:
    """(nominal, nominal + borrowing limit where every flavor of a resource sets one)."""
    nominal: dict[str, int] = {}
    ceiling: dict[str, int] = {}
    unlimited: set[str] = set()
    for group in spec.get("resourceGroups") or []:
        flavors = group.get("flavors") or []
        if len(flavors) > 1:
            names = ", ".join(str(f.get("name")) for f in flavors)
            notes.append(
                f"{where}: flavors {names} merged into one quota (gangplank has no flavors; "
                "steer pods to node types with node selectors)"
            )
        for flavor in flavors:
            for res in flavor.get("resources") or []:
                name = str(res.get("name"))
                amount = _amount(name, res.get("nominalQuota", 0), where, notes)
                if amount is None:
                    continue
                _add(nominal, name, amount)
                limit = res.get("borrowingLimit")
                if limit is None:
                    unlimited.add(name)
                else:
                    extra = _amount(name, limit, where, notes) or 0
                    _add(ceiling, name, amount + extra)
                if res.get("lendingLimit") is not None:
                    notes.append(
                        f"{where}: lendingLimit of {name} not mapped (gangplank lends all unused "
                        "guarantee while its owner has no work waiting)"
                    )
    return nominal, {k: v for k, v in ceiling.items() if k not in unlimited}


def _namespaces(selector: Any, where: str, notes: list[str]) -> list[str]:
    if selector is None:
        return []
    if selector == {}:
        notes.append(
            f"{where}: namespaceSelector {{}} (every namespace) not mapped; pods name the queue "
            "by label, or list namespaces under `namespaces`"
        )
        return []
    out: list[str] = []
    labels = selector.get("matchLabels") or {}
    for key, value in labels.items():
        if key == NAME_LABEL:
            out.append(str(value))
        else:
            notes.append(f"{where}: namespaceSelector label {key}={value} not mapped")
    for expr in selector.get("matchExpressions") or []:
        if expr.get("key") == NAME_LABEL and expr.get("operator") == "In":
            out += [str(v) for v in expr.get("values") or []]
        else:
            notes.append(f"{where}: namespaceSelector expression {expr} not mapped")
    return out


def import_manifests(documents: Iterable[Any]) -> Imported:
    out = Imported()
    cohorts: dict[str, dict[str, Any]] = {}
    cohort_own: dict[str, dict[str, int]] = {}
    local: list[tuple[str, str, str]] = []
    volcano: list[Mapping[str, Any]] = []
    for doc in documents:
        if not isinstance(doc, Mapping):
            continue
        if doc.get("kind") == "List":
            out_items = import_manifests(doc.get("items") or [])
            out.queues.update(out_items.queues)
            out.notes += out_items.notes
            continue
        kind = doc.get("kind")
        group = str(doc.get("apiVersion", "")).split("/")[0]
        meta = doc.get("metadata") or {}
        spec = doc.get("spec") or {}
        name = str(meta.get("name", ""))
        where = f"{kind} {name}"
        if group == "kueue.x-k8s.io" and kind == "ClusterQueue":
            nominal, ceiling = _kueue_groups(spec, where, out.notes)
            queue: dict[str, Any] = {"name": _dns(name)}
            cohort = spec.get("cohort") or spec.get("cohortName")
            if cohort:
                queue["parent"] = _dns(str(cohort))
                cohorts.setdefault(_dns(str(cohort)), {"name": _dns(str(cohort))})
            if nominal:
                queue["guarantee"] = _written(nominal)
            if ceiling:
                queue["max"] = _written(ceiling)
            stop = spec.get("stopPolicy")
            if stop in ("Hold", "HoldAndDrain"):
                queue["state"] = "closed" if stop == "Hold" else "draining"
            namespaces = _namespaces(spec.get("namespaceSelector"), where, out.notes)
            if namespaces:
                queue["namespaces"] = namespaces
            for key in ("preemption", "fairSharing", "admissionChecks", "admissionChecksStrategy"):
                if spec.get(key):
                    out.notes.append(f"{where}: {key} not mapped")
            out.queues[queue["name"]] = queue
        elif group == "kueue.x-k8s.io" and kind == "Cohort":
            cname = _dns(name)
            entry = cohorts.setdefault(cname, {"name": cname})
            parent = spec.get("parent") or spec.get("parentName")
            if parent:
                entry["parent"] = _dns(str(parent))
                cohorts.setdefault(_dns(str(parent)), {"name": _dns(str(parent))})
            own, _ = _kueue_groups(spec, where, out.notes)
            cohort_own[cname] = own
        elif group == "kueue.x-k8s.io" and kind == "LocalQueue":
            namespace = str(meta.get("namespace") or "default")
            local.append((namespace, name, _dns(str(spec.get("clusterQueue", "")))))
        elif group == "scheduling.volcano.sh" and kind == "Queue":
            volcano.append(doc)
        else:
            out.notes.append(f"{kind or 'object'} {name or '?'} ({doc.get('apiVersion')}) skipped")
    for namespace, name, target in local:
        if target in out.queues:
            out.queues[target].setdefault("aliases", []).append(f"{namespace}/{name}")
        else:
            out.notes.append(
                f"LocalQueue {namespace}/{name}: its ClusterQueue {target} is not in the input"
            )
    for doc in volcano:
        _volcano_queue(doc, out)
    _add_cohorts(out, cohorts, cohort_own)
    return out


def _volcano_queue(doc: Mapping[str, Any], out: Imported) -> None:
    meta = doc.get("metadata") or {}
    spec = doc.get("spec") or {}
    name = str(meta.get("name", ""))
    where = f"Queue {name}"
    if name == "root":
        return  # Volcano's implicit top of the tree
    queue: dict[str, Any] = {"name": _dns(name)}
    if queue["name"] != name:  # pods name the queue as Volcano spells it
        queue["aliases"] = [name]
    weight = spec.get("weight")
    if isinstance(weight, int | float) and not isinstance(weight, bool) and weight > 0:
        queue["weight"] = weight
    parent = spec.get("parent")
    if parent and parent != "root":
        queue["parent"] = _dns(str(parent))

    def amounts(raw: Any) -> dict[str, int]:
        found: dict[str, int] = {}
        for resource, value in (raw or {}).items():
            amount = _amount(str(resource), value, where, out.notes)
            if amount is not None:
                found[str(resource)] = amount
        return found

    deserved = amounts(spec.get("deserved"))
    guaranteed = amounts((spec.get("guarantee") or {}).get("resource"))
    if deserved:
        queue["guarantee"] = _written(deserved)
        if guaranteed:
            out.notes.append(
                f"{where}: guarantee.resource not mapped; deserved is used as the guarantee"
            )
    elif guaranteed:
        queue["guarantee"] = _written(guaranteed)
    capability = amounts(spec.get("capability"))
    if capability:
        queue["max"] = _written(capability)
    state = (doc.get("status") or {}).get("state")
    if state in ("Closed", "Closing"):
        queue["state"] = "closed" if state == "Closed" else "draining"
    if spec.get("reclaimable") is False:
        queue["preemption"] = {"reclaimable": False}
    for key in ("affinity", "extendClusters", "type"):
        if spec.get(key):
            out.notes.append(f"{where}: {key} not mapped")
    out.queues[queue["name"]] = queue


def _add_cohorts(
    out: Imported, cohorts: dict[str, dict[str, Any]], own: dict[str, dict[str, int]]
) -> None:
    """Cohorts become parents; a cohort with its own quota guarantees that plus its children's."""
    for name, entry in cohorts.items():
        if name in out.queues:
            out.notes.append(f"Cohort {name}: a ClusterQueue has the same name; cohort renamed")
            name = entry["name"] = f"{name}-cohort"
            for q in out.queues.values():
                if q.get("parent") == entry["name"][: -len("-cohort")]:
                    q["parent"] = name
        out.queues[name] = entry
    for name in cohorts:
        extra = own.get(name)
        if not extra:
            continue
        total = dict(extra)
        for q in out.queues.values():
            if q.get("parent") == name:
                for resource, value in (q.get("guarantee") or {}).items():
                    amount = parse_quantity(value, milli=(resource == "cpu"))
                    _add(total, resource, amount)
        out.queues[name]["guarantee"] = _written(total)
