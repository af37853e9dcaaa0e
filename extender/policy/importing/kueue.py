"""Kueue's ClusterQueues and LocalQueues as gangplank's queues.

A ClusterQueue becomes a queue: guarantee = its nominal quotas summed over flavors; max = nominal
+ borrowingLimit where every flavor sets one, and nominal alone for a ClusterQueue in no cohort
(Kueue lets it borrow nothing), and 0 of each resource it does not cover (kueue_quota);
`fairSharing.weight` → weight; `stopPolicy: Hold` → closed (HoldAndDrain too, noted: Kueue also
evicts what was admitted, gangplank lets it run); no namespaceSelector (it matches no namespace)
→ closed, `{}` keeps no namespace out, one on `kubernetes.io/metadata.name` → namespaces;
`preemption` as Kueue means it (kueue_preemption). Its cohort is a parent queue
(kueue_cohorts). A LocalQueue becomes an alias `namespace/name`, so pods keep their
`kueue.x-k8s.io/queue-name` label. ResourceFlavors and a Topology: kueue_nodes. A field equal to
Kueue's default (a `kubectl get -o yaml` dump writes them all) is not reported.
"""

from __future__ import annotations

from typing import Any

from extender.policy.importing.kueue_cohorts import (
    add_cohorts,
    cohort_names,
    cohort_tree,
    fair_weight,
    tree_top,
)
from extender.policy.importing.kueue_nodes import import_nodes
from extender.policy.importing.kueue_preemption import preemption
from extender.policy.importing.kueue_quota import (
    credit_caps,
    kueue_groups,
    named_resources,
    not_covered,
)
from extender.policy.importing.result import (
    Imported,
    Manifest,
    cohort_of,
    dns,
    put,
    unmapped,
    written,
)

NAME_LABEL = "kubernetes.io/metadata.name"
# Spec fields each kind maps (any other is listed as not mapped).
CLUSTER_QUEUE_KEYS = {
    "excludeResourcePrefixes",
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
# What Kueue's API fills in (apis/kueue/v1beta1/clusterqueue_types.go): a dump has them all.
DEFAULTS: dict[str, Any] = {
    "flavorFungibility": {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"},
    "queueingStrategy": "BestEffortFIFO",
    "stopPolicy": "None",
}
OLD_NAMES = {"Borrow": "MayStopSearch", "Preempt": "MayStopSearch"}  # deprecated spellings
# Why a field has no counterpart, where a word helps.
WHY_NOT = {
    "admissionScope": "gangplank orders a queue's jobs by priority, then age, not by usage",
    "flavorFungibility": "gangplank has no flavors",
    "admissionChecks": "gangplank admits on quota alone",
    "admissionChecksStrategy": "gangplank admits on quota alone",
}


def _defaulted(key: str, value: Any) -> bool:
    """The value Kueue gives the field when it is not set (a missing half of flavorFungibility
    being its default too)."""
    default = DEFAULTS.get(key)
    if isinstance(default, dict) and isinstance(value, dict):
        return {**default, **{k: OLD_NAMES.get(v, v) for k, v in value.items()}} == default
    return default is not None and value == default


def _namespaces(obj: Manifest, queue: dict[str, Any], out: Imported) -> None:
    """Kueue's namespaceSelector: missing matches no namespace (nothing is admitted: closed),
    `{}` every namespace (nothing to keep out), `kubernetes.io/metadata.name` -> namespaces."""
    if "namespaceSelector" not in obj.spec or obj.spec["namespaceSelector"] is None:
        queue["state"] = "closed"
        out.mapped.append(
            f"{obj.where}: no namespaceSelector, so Kueue admits workloads from no namespace (a "
            "missing selector matches none): state closed"
        )
        return
    selector = obj.spec["namespaceSelector"]
    if selector == {}:
        out.mapped.append(
            f"{obj.where}: namespaceSelector {{}} (every namespace): no namespace is kept out, "
            "as in Kueue"
        )
        return
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
    if found:
        queue["namespaces"] = found


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


def _cluster_queue(
    obj: Manifest, named: set[str], out: Imported
) -> tuple[dict[str, Any], dict[str, int]]:
    quota = kueue_groups(obj, out)
    nominal, ceiling = quota.nominal, quota.ceiling
    queue: dict[str, Any] = {"name": dns(obj.name)}
    cohort = cohort_of(obj)
    if cohort:
        queue["parent"] = cohort  # a cohort's name; made a queue's name later
    elif nominal:
        ceiling = dict(nominal)
        out.mapped.append(
            f"{obj.where}: in no cohort, so Kueue lets it borrow nothing: max = its nominal quota"
        )
    not_covered(obj, quota, named, ceiling, out)
    credit_caps(obj, quota, ceiling, out)
    fair_weight(obj, queue, out)
    if nominal:
        queue["guarantee"] = written(nominal)
    if ceiling:
        queue["max"] = written(ceiling)
    _state(obj, queue, out)
    _namespaces(obj, queue, out)
    _strategy(obj, out)
    unmapped(obj, CLUSTER_QUEUE_KEYS, out, WHY_NOT, _defaulted)
    return queue, nominal


def import_kueue(objects: list[Manifest], out: Imported) -> None:
    named = named_resources(o for o in objects if o.kind in ("ClusterQueue", "Cohort"))
    named |= {r for q in out.queues.values() for k in ("guarantee", "max") for r in q.get(k, {})}
    cqs: list[tuple[Manifest, dict[str, Any]]] = []
    nominals: dict[str, dict[str, int]] = {}
    members: dict[str, list[str]] = {}  # cohort -> its ClusterQueues' queues
    for obj in objects:
        if obj.kind == "ClusterQueue":
            queue, nominal = _cluster_queue(obj, named, out)
            cqs.append((obj, queue))
            nominals[queue["name"]] = nominal
            if "parent" in queue:
                members.setdefault(queue["parent"], []).append(queue["name"])
            put(out, queue, obj.where)
    cohorts = cohort_tree([o for o in objects if o.kind == "Cohort"], members, out)
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
    import_nodes(objects, out)


def _local_queue(obj: Manifest, out: Imported) -> None:
    target = dns(str(obj.spec.get("clusterQueue", "")))
    if target not in out.queues:
        out.notes.append(f"{obj.where}: its ClusterQueue {target} is not in the input")
        return
    out.queues[target].setdefault("aliases", []).append(obj.name)
    if not (obj.doc.get("metadata") or {}).get("namespace"):
        namespace = obj.name.split("/")[0]
        out.notes.append(
            f"{obj.where}: no metadata.namespace: taken as namespace {namespace} (kubectl apply "
            "would put it in the namespace of your context); set metadata.namespace to the "
            "namespace of its pods"
        )
    weight = (obj.spec.get("fairSharing") or {}).get("weight")
    if weight is not None:
        out.notes.append(
            f"{obj.where}: fairSharing.weight {weight} not mapped (a LocalQueue becomes an alias "
            f"of queue {target}; gangplank orders a queue's jobs by priority, then age)"
        )
    stop = obj.spec.get("stopPolicy")
    if stop and stop != "None":
        out.notes.append(f"{obj.where}: stopPolicy {stop} not mapped (an alias has no state)")
    unmapped(obj, LOCAL_QUEUE_KEYS, out, WHY_NOT)
