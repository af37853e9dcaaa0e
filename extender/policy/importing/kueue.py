"""Kueue's ClusterQueues and LocalQueues as gangplank's queues.

A ClusterQueue becomes a queue: guarantee = its nominal quotas summed over flavors; max = nominal
+ borrowingLimit where every flavor sets one, and nominal alone for a ClusterQueue in no cohort
(Kueue lets it borrow nothing); `fairSharing.weight` → weight; `stopPolicy: Hold` → closed
(HoldAndDrain too, noted: Kueue also evicts what was admitted, gangplank lets it run); a
namespaceSelector on `kubernetes.io/metadata.name` → namespaces; `preemption` as Kueue means it
(kueue_preemption). Its cohort is a parent queue (kueue_cohorts). A LocalQueue becomes an alias
`namespace/name`, so pods keep their `kueue.x-k8s.io/queue-name` label.
"""

from __future__ import annotations

from typing import Any

from extender.policy.importing.kueue_cohorts import (
    Cohort,
    add_cohorts,
    cohort,
    cohort_names,
    cohort_of,
    fair_weight,
    tree_top,
)
from extender.policy.importing.kueue_preemption import preemption
from extender.policy.importing.kueue_quota import kueue_groups
from extender.policy.importing.result import Imported, Manifest, dns, put, unmapped, written

NAME_LABEL = "kubernetes.io/metadata.name"
# Spec fields each kind maps (any other is listed as not mapped).
CLUSTER_QUEUE_KEYS = {
    "cohort",
    "cohortName",
    "resourceGroups",
    "namespaceSelector",
    "stopPolicy",
    "fairSharing",
    "preemption",
    "queueingStrategy",
}
LOCAL_QUEUE_KEYS = {"clusterQueue", "fairSharing", "stopPolicy"}
# Why a field has no counterpart, where a word helps.
WHY_NOT = {
    "admissionScope": "gangplank orders a queue's jobs by priority, then age, not by usage",
    "flavorFungibility": "gangplank has no flavors",
    "admissionChecks": "gangplank admits on quota alone",
    "admissionChecksStrategy": "gangplank admits on quota alone",
}


def _namespaces(obj: Manifest, out: Imported) -> list[str]:
    selector = obj.spec.get("namespaceSelector")
    if selector is None:
        return []
    if selector == {}:
        out.notes.append(
            f"{obj.where}: namespaceSelector {{}} (every namespace) not mapped; pods name the "
            "queue by label, or list namespaces under `namespaces`"
        )
        return []
    found: list[str] = []
    for key, value in (selector.get("matchLabels") or {}).items():
        if key == NAME_LABEL:
            found.append(str(value))
        else:
            out.notes.append(f"{obj.where}: namespaceSelector label {key}={value} not mapped")
    for expr in selector.get("matchExpressions") or []:
        if expr.get("key") == NAME_LABEL and expr.get("operator") == "In":
            found += [str(v) for v in expr.get("values") or []]
        else:
            out.notes.append(f"{obj.where}: namespaceSelector expression {expr} not mapped")
    return found


def _state(obj: Manifest, queue: dict[str, Any], out: Imported) -> None:
    stop = obj.spec.get("stopPolicy")
    if stop == "Hold":
        queue["state"] = "closed"
        out.mapped.append(f"{obj.where}: stopPolicy Hold -> state closed (admitted work runs on)")
    elif stop == "HoldAndDrain":
        queue["state"] = "closed"
        out.notes.append(
            f"{obj.where}: stopPolicy HoldAndDrain became state closed: nothing new is admitted, "
            "but what runs is not evicted as Kueue would (evict it by hand)"
        )


def _strategy(obj: Manifest, out: Imported) -> None:
    strategy = obj.spec.get("queueingStrategy")
    if strategy == "StrictFIFO":
        out.notes.append(
            f"{obj.where}: queueingStrategy StrictFIFO not mapped (gangplank starts a later job "
            "that fits without delaying the first: BestEffortFIFO with a hold for the first)"
        )
    elif strategy:
        out.mapped.append(
            f"{obj.where}: queueingStrategy {strategy} is gangplank's order (priority, then age)"
        )


def _cluster_queue(obj: Manifest, out: Imported) -> tuple[dict[str, Any], dict[str, int]]:
    nominal, ceiling = kueue_groups(obj, out)
    queue: dict[str, Any] = {"name": dns(obj.name)}
    cohort = obj.spec.get("cohort") or obj.spec.get("cohortName")
    if cohort:
        queue["parent"] = str(cohort)  # a cohort's name; made a queue's name later
    elif nominal:
        ceiling = dict(nominal)
        out.mapped.append(
            f"{obj.where}: in no cohort, so Kueue lets it borrow nothing: max = its nominal quota"
        )
    fair_weight(obj, queue, out)
    if nominal:
        queue["guarantee"] = written(nominal)
    if ceiling:
        queue["max"] = written(ceiling)
    _state(obj, queue, out)
    namespaces = _namespaces(obj, out)
    if namespaces:
        queue["namespaces"] = namespaces
    _strategy(obj, out)
    unmapped(obj, CLUSTER_QUEUE_KEYS, out, WHY_NOT, {})
    return queue, nominal


def import_kueue(objects: list[Manifest], out: Imported) -> None:
    cqs: list[tuple[Manifest, dict[str, Any]]] = []
    nominals: dict[str, dict[str, int]] = {}
    members: dict[str, list[str]] = {}  # cohort -> its ClusterQueues' queues
    cohorts: dict[str, Cohort] = {}
    for obj in objects:
        if obj.kind == "ClusterQueue":
            queue, nominal = _cluster_queue(obj, out)
            cqs.append((obj, queue))
            nominals[queue["name"]] = nominal
            if "parent" in queue:
                members.setdefault(queue["parent"], []).append(queue["name"])
            put(out, queue, obj.where)
        elif obj.kind == "Cohort":
            cohorts[obj.name] = cohort(obj, out)
    for name in members:  # cohorts named only by a ClusterQueue
        cohorts.setdefault(name, Cohort(name, f"Cohort {name}"))
    for entry in list(cohorts.values()):  # and parents named only by a Cohort
        if entry.parent is not None:
            cohorts.setdefault(entry.parent, Cohort(entry.parent, f"Cohort {entry.parent}"))
    names = cohort_names(cohorts, out)
    for _, queue in cqs:
        if "parent" in queue:
            queue["parent"] = names[queue["parent"]]
    top = {obj.name: tree_top(cohorts, cohort_of(obj)) for obj, _ in cqs}
    preemption(cqs, top, out)
    add_cohorts(cohorts, names, {c: [nominals[q] for q in qs] for c, qs in members.items()}, out)
    for obj in objects:
        if obj.kind == "LocalQueue":
            _local_queue(obj, out)


def _local_queue(obj: Manifest, out: Imported) -> None:
    target = dns(str(obj.spec.get("clusterQueue", "")))
    if target not in out.queues:
        out.notes.append(f"{obj.where}: its ClusterQueue {target} is not in the input")
        return
    out.queues[target].setdefault("aliases", []).append(obj.name)
    weight = (obj.spec.get("fairSharing") or {}).get("weight")
    if weight is not None:
        out.notes.append(
            f"{obj.where}: fairSharing.weight {weight} not mapped (a LocalQueue becomes an alias "
            f"of queue {target}; gangplank orders a queue's jobs by priority, then age)"
        )
    stop = obj.spec.get("stopPolicy")
    if stop and stop != "None":
        out.notes.append(f"{obj.where}: stopPolicy {stop} not mapped (an alias has no state)")
    unmapped(obj, LOCAL_QUEUE_KEYS, out, WHY_NOT, {})
