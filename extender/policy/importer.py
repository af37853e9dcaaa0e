"""`gangplank policy import`: Kueue and Volcano queue manifests → a gangplank policy.

What is carried over keeps its meaning, and the output says how (`Imported.mapped`); what has no
counterpart, or would change meaning, is listed (`Imported.notes`), never dropped silently.

Kueue: a ClusterQueue becomes a queue: guarantee = its nominal quotas summed over flavors; max =
nominal + borrowingLimit where every flavor sets one, and nominal alone for a ClusterQueue in no
cohort (Kueue lets it borrow nothing); `fairSharing.weight` → weight; `stopPolicy: Hold` →
closed (HoldAndDrain too, noted: Kueue also evicts what was admitted, gangplank lets it run); a
namespaceSelector on `kubernetes.io/metadata.name` → namespaces; `preemption` as Kueue means it:
`withinClusterQueue` (default Never) → `withinQueue`, and a queue's borrowed work is reclaimable
only if another ClusterQueue of its cohort tree reclaims (`reclaimWithinCohort`, default Never).
A Cohort (or a ClusterQueue's `cohort`) becomes the parent queue (its own quota added to its
children's; the top cohort's max is what its tree is guaranteed: Kueue admits nothing beyond
nominal quotas). A LocalQueue becomes an alias `namespace/name`, so pods keep their
`kueue.x-k8s.io/queue-name` label. `pods` quotas are kept (gangplank counts one `pods` per pod);
virtual resources (Kueue's resource transformations, like `cpu_credits`) no pod asks for are not.

Volcano: a Queue becomes a queue (weight; capability → max; deserved, else guarantee.resource →
guarantee; status Closed → closed, Closing → draining; `reclaimable: false` →
`preemption.reclaimable: false`), in the tree Volcano builds: `spec.parent` (default `root`) or
the `volcano.sh/hierarchy` / `volcano.sh/hierarchy-weights` annotations of hierarchical DRF,
whose inner levels become parent queues named by their path (`root/eng` → `root-eng`).

The same object twice (in two files, or one) is refused (`ImportRefused`), naming both places.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from extender.core.model.quantity import QuantityError, exact_quantity
from extender.core.model.resources import total
from extender.core.queues.policy_parse import API_VERSION, KIND
from extender.core.queues.policy_resources import resource_amount, unknown_resource

NAME_LABEL = "kubernetes.io/metadata.name"
HIERARCHY = "volcano.sh/hierarchy"
HIERARCHY_WEIGHTS = "volcano.sh/hierarchy-weights"
DEQUEUE = "volcano.sh/dequeue-strategy"
ROOT = "root"

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
COHORT_KEYS = {"parent", "parentName", "resourceGroups", "fairSharing"}
LOCAL_QUEUE_KEYS = {"clusterQueue"}
VOLCANO_KEYS = {"weight", "capability", "deserved", "guarantee", "parent", "reclaimable"}
# Why a field has no counterpart, where a word helps.
WHY_NOT = {
    "admissionScope": "gangplank orders a queue's jobs by priority, then age, not by usage",
    "flavorFungibility": "gangplank has no flavors",
    "admissionChecks": "gangplank admits on quota alone",
    "admissionChecksStrategy": "gangplank admits on quota alone",
}
RECLAIMERS = ("Any", "LowerPriority")
WITHIN = {"Never": False, "LowerPriority": True, "LowerOrNewerEqualPriority": True}


class ImportRefused(ValueError):
    """Input that cannot become one policy (an object defined twice, two objects one name)."""


@dataclass
class Imported:
    queues: dict[str, dict[str, Any]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # not carried over, or not with its meaning
    mapped: list[str] = field(default_factory=list)  # carried over, and how

    def policy(self) -> dict[str, Any]:
        return {"apiVersion": API_VERSION, "kind": KIND, "queues": list(self.queues.values())}

    def header(self, paths: Sequence[str]) -> list[str]:
        """The comment lines the imported policy starts with."""
        lines = ["# Imported by `gangplank policy import` from " + ", ".join(paths)]
        if self.mapped:
            lines.append("# Mapped (the meaning kept, and how):")
            lines += [f"#   - {line}" for line in self.mapped]
        if self.notes:
            lines.append("# Not mapped (check these by hand):")
            lines += [f"#   - {note}" for note in self.notes]
        return lines


@dataclass
class _Object:
    source: str
    kind: str
    name: str  # namespace/name for a LocalQueue
    spec: Mapping[str, Any]
    doc: Mapping[str, Any]

    @property
    def where(self) -> str:
        return f"{self.kind} {self.name}"


def _dns(name: str) -> str:
    cleaned = re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-")
    return cleaned[:63] or "queue"


def _add(into: dict[str, int], resource: str, amount: int) -> None:
    into[resource] = into.get(resource, 0) + amount


def _amount(resource: str, value: Any, where: str, out: Imported) -> int | None:
    """An amount as gangplank counts it, or None (and a note) when it cannot be one."""
    if "/" not in resource and unknown_resource(resource) is not None:
        out.notes.append(
            f"{where}: {resource} left out: no pod asks for it (a virtual resource, like those "
            "Kueue's resource transformations make, has no counterpart)"
        )
        return None
    try:
        amount = resource_amount(resource, value)
    except QuantityError as err:
        out.notes.append(f"{where}: {resource} {err}; left out")
        return None
    if resource == "pods":
        out.mapped.append(
            f"{where}: the pods quota is kept: gangplank counts one `pods` per pod of the queue, "
            "as Kueue counts admitted pods"
        )
    return amount


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


def _weight(value: Any) -> float | None:
    """A Kueue fairSharing.weight (a quantity: "2", "500m") as a number; None if not one."""
    try:
        weight = exact_quantity(value)
    except QuantityError:
        return None
    return int(weight) if weight == weight.to_integral_value() else float(weight)


def _unmapped(obj: _Object, handled: set[str], out: Imported) -> None:
    for key, value in obj.spec.items():
        if key not in handled and value not in (None, {}, [], ""):
            why = f" ({WHY_NOT[key]})" if key in WHY_NOT else ""
            out.notes.append(f"{obj.where}: {key} not mapped{why}")


def _put(out: Imported, queue: dict[str, Any], where: str) -> None:
    name = queue["name"]
    if name in out.queues:
        raise ImportRefused(f"{where} would be queue {name}, which another object already is")
    out.queues[name] = queue


# ---- Kueue -----------------------------------------------------------


def _kueue_groups(obj: _Object, out: Imported) -> tuple[dict[str, int], dict[str, int]]:
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
                amount = _amount(name, res.get("nominalQuota", 0), where, out)
                if amount is None:
                    continue
                _add(nominal, name, amount)
                limit = res.get("borrowingLimit")
                if limit is None:
                    unlimited.add(name)
                else:
                    _add(ceiling, name, amount + (_amount(name, limit, where, out) or 0))
                if res.get("lendingLimit") is not None:
                    out.notes.append(
                        f"{where}: lendingLimit of {name} not mapped (gangplank lends all unused "
                        "guarantee while its owner has no work waiting)"
                    )
    return nominal, {k: v for k, v in ceiling.items() if k not in unlimited}


def _namespaces(obj: _Object, out: Imported) -> list[str]:
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


def _fair_weight(obj: _Object, queue: dict[str, Any], out: Imported) -> None:
    raw = (obj.spec.get("fairSharing") or {}).get("weight")
    if raw is None:
        return
    weight = _weight(raw)
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


def _state(obj: _Object, queue: dict[str, Any], out: Imported) -> None:
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


def _strategy(obj: _Object, out: Imported) -> None:
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


def _cluster_queue(obj: _Object, out: Imported) -> tuple[dict[str, Any], dict[str, int]]:
    nominal, ceiling = _kueue_groups(obj, out)
    queue: dict[str, Any] = {"name": _dns(obj.name)}
    cohort = obj.spec.get("cohort") or obj.spec.get("cohortName")
    if cohort:
        queue["parent"] = str(cohort)  # a cohort's name; made a queue's name later
    elif nominal:
        ceiling = dict(nominal)
        out.mapped.append(
            f"{obj.where}: in no cohort, so Kueue lets it borrow nothing: max = its nominal quota"
        )
    _fair_weight(obj, queue, out)
    if nominal:
        queue["guarantee"] = _written(nominal)
    if ceiling:
        queue["max"] = _written(ceiling)
    _state(obj, queue, out)
    namespaces = _namespaces(obj, out)
    if namespaces:
        queue["namespaces"] = namespaces
    _strategy(obj, out)
    _unmapped(obj, CLUSTER_QUEUE_KEYS, out)
    return queue, nominal


@dataclass
class _Cohort:
    name: str
    where: str
    parent: str | None = None
    own: dict[str, int] = field(default_factory=dict)
    extra: dict[str, int] = field(default_factory=dict)  # borrowing limits, where all set
    queue: dict[str, Any] = field(default_factory=dict)


def _cohort(obj: _Object, out: Imported) -> _Cohort:
    own, ceiling = _kueue_groups(obj, out)
    parent = obj.spec.get("parentName") or obj.spec.get("parent")
    entry = _Cohort(obj.name, obj.where, str(parent) if parent else None, own)
    entry.extra = {k: v - own.get(k, 0) for k, v in ceiling.items()}
    _fair_weight(obj, entry.queue, out)
    _unmapped(obj, COHORT_KEYS, out)
    return entry


def _reclaim(obj: _Object) -> Any:
    return (obj.spec.get("preemption") or {}).get("reclaimWithinCohort")


def _preemption(
    cqs: list[tuple[_Object, dict[str, Any]]], top: Mapping[str, str | None], out: Imported
) -> None:
    """Kueue's preemption rules, as Kueue means them, on gangplank's queues: `withinQueue` from
    the queue's own `withinClusterQueue`; `reclaimable` (what it borrows may be taken back) if
    another ClusterQueue of its cohort tree reclaims (`reclaimWithinCohort`). Both default to
    Never in Kueue."""
    trees: dict[str | None, list[_Object]] = {}
    for obj, _ in cqs:
        trees.setdefault(top[obj.name], []).append(obj)
    for obj, queue in cqs:
        rules = obj.spec.get("preemption") or {}
        within = str(rules.get("withinClusterQueue") or "Never")
        tree = top[obj.name]
        others = [o for o in trees[tree] if o is not obj] if tree is not None else []
        reclaimers = [o for o in others if _reclaim(o) in RECLAIMERS]
        by = ", ".join(f"{o.name} {_reclaim(o)}" for o in reclaimers)
        queue["preemption"] = {"withinQueue": WITHIN.get(within, False), "reclaimable": bool(by)}
        default = "" if "withinClusterQueue" in rules else ", Kueue's default"
        if by:
            reclaim = f"reclaimable: true (reclaimWithinCohort of {by})"
        elif tree is not None:
            reclaim = "reclaimable: false (no other ClusterQueue of its cohort reclaims: Never)"
        else:
            reclaim = "reclaimable: false (in no cohort)"
        out.mapped.append(
            f"{obj.where}: withinQueue: {str(WITHIN.get(within, False)).lower()} "
            f"(withinClusterQueue {within}{default}), {reclaim}"
        )
        if within == "LowerOrNewerEqualPriority":
            out.notes.append(
                f"{obj.where}: withinClusterQueue LowerOrNewerEqualPriority: gangplank preempts "
                "lower priority only, not newer jobs of equal priority"
            )
        elif within not in WITHIN:
            out.notes.append(f"{obj.where}: withinClusterQueue {within} not mapped")
        if by and (len(reclaimers) < len(others) or "LowerPriority" in by):
            out.notes.append(
                f"{obj.where}: reclaim differs: in gangplank every queue reclaims what this one "
                f"borrows, at any priority; in Kueue only {by}"
            )
        borrow = (rules.get("borrowWithinCohort") or {}).get("policy")
        if borrow and borrow != "Never":
            out.notes.append(
                f"{obj.where}: borrowWithinCohort {borrow} not mapped (gangplank never preempts "
                "for a job to borrow)"
            )
        for key, value in rules.items():
            if key not in ("withinClusterQueue", "reclaimWithinCohort", "borrowWithinCohort"):
                out.notes.append(f"{obj.where}: preemption.{key} {value} not mapped")


def _kueue(objects: list[_Object], out: Imported) -> None:
    cqs: list[tuple[_Object, dict[str, Any]]] = []
    nominals: dict[str, dict[str, int]] = {}
    members: dict[str, list[str]] = {}  # cohort -> its ClusterQueues' queues
    cohorts: dict[str, _Cohort] = {}
    for obj in objects:
        if obj.kind == "ClusterQueue":
            queue, nominal = _cluster_queue(obj, out)
            cqs.append((obj, queue))
            nominals[queue["name"]] = nominal
            if "parent" in queue:
                members.setdefault(queue["parent"], []).append(queue["name"])
            _put(out, queue, obj.where)
        elif obj.kind == "Cohort":
            cohorts[obj.name] = _cohort(obj, out)
    for name in members:  # cohorts named only by a ClusterQueue
        cohorts.setdefault(name, _Cohort(name, f"Cohort {name}"))
    for entry in list(cohorts.values()):  # and parents named only by a Cohort
        if entry.parent is not None:
            cohorts.setdefault(entry.parent, _Cohort(entry.parent, f"Cohort {entry.parent}"))
    names = _cohort_names(cohorts, out)
    for _, queue in cqs:
        if "parent" in queue:
            queue["parent"] = names[queue["parent"]]
    top = {obj.name: _top(cohorts, _cohort_of(obj)) for obj, _ in cqs}
    _preemption(cqs, top, out)
    _add_cohorts(cohorts, names, {c: [nominals[q] for q in qs] for c, qs in members.items()}, out)
    for obj in objects:
        if obj.kind == "LocalQueue":
            _local_queue(obj, out)


def _cohort_of(obj: _Object) -> str | None:
    cohort = obj.spec.get("cohort") or obj.spec.get("cohortName")
    return str(cohort) if cohort else None


def _cohort_names(cohorts: Mapping[str, _Cohort], out: Imported) -> dict[str, str]:
    names: dict[str, str] = {}
    for name in cohorts:
        queue = _dns(name)
        if queue in out.queues:
            out.notes.append(f"Cohort {name}: another queue has the same name; cohort renamed")
            queue = f"{queue}-cohort"
        names[name] = queue
    return names


def _top(cohorts: Mapping[str, _Cohort], name: str | None) -> str | None:
    """The top of a cohort tree (None: in no cohort)."""
    if not name:
        return None
    seen = [name]
    while (parent := cohorts[seen[-1]].parent) is not None and parent not in seen:
        seen.append(parent)
    return seen[-1]


def _add_cohorts(
    cohorts: Mapping[str, _Cohort],
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
            queue["guarantee"] = _written(guaranteed)
        if entry.parent is None and guaranteed:
            queue["max"] = _written(guaranteed)
            out.mapped.append(
                f"{entry.where}: max = what its tree is guaranteed (Kueue admits nothing beyond "
                "nominal quotas)"
            )
        elif entry.extra:
            queue["max"] = _written(total((guaranteed, entry.extra)))
            out.mapped.append(f"{entry.where}: max = its tree's quota + borrowingLimit")
        _put(out, queue, entry.where)


def _local_queue(obj: _Object, out: Imported) -> None:
    target = _dns(str(obj.spec.get("clusterQueue", "")))
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
    _unmapped(obj, LOCAL_QUEUE_KEYS | {"fairSharing", "stopPolicy"}, out)


# ---- Volcano ---------------------------------------------------------


def _volcano_amounts(obj: _Object, raw: Any, out: Imported) -> dict[str, int]:
    found: dict[str, int] = {}
    for resource, value in (raw or {}).items():
        amount = _amount(str(resource), value, obj.where, out)
        if amount is not None:
            found[str(resource)] = amount
    return found


def _volcano_queue(obj: _Object, out: Imported) -> dict[str, Any]:
    spec = obj.spec
    queue: dict[str, Any] = {"name": _dns(obj.name)}
    if queue["name"] != obj.name:  # pods name the queue as Volcano spells it
        queue["aliases"] = [obj.name]
    weight = spec.get("weight")
    if isinstance(weight, int | float) and not isinstance(weight, bool) and weight > 0:
        queue["weight"] = weight
    deserved = _volcano_amounts(obj, spec.get("deserved"), out)
    guaranteed = _volcano_amounts(obj, (spec.get("guarantee") or {}).get("resource"), out)
    if deserved:
        queue["guarantee"] = _written(deserved)
        if guaranteed:
            out.notes.append(
                f"{obj.where}: guarantee.resource not mapped; deserved is used as the guarantee"
            )
    elif guaranteed:
        queue["guarantee"] = _written(guaranteed)
    capability = _volcano_amounts(obj, spec.get("capability"), out)
    if capability:
        queue["max"] = _written(capability)
    state = (obj.doc.get("status") or {}).get("state")
    if state in ("Closed", "Closing"):
        queue["state"] = "closed" if state == "Closed" else "draining"
    if spec.get("reclaimable") is False:
        queue["preemption"] = {"reclaimable": False}
    _unmapped(obj, VOLCANO_KEYS, out)
    annotations = (obj.doc.get("metadata") or {}).get("annotations") or {}
    for key, value in annotations.items():
        if key == DEQUEUE and value == "traverse":
            out.mapped.append(f"{obj.where}: {key} traverse is gangplank's order (with backfill)")
        elif key == DEQUEUE:
            out.notes.append(
                f"{obj.where}: {key} {value} not mapped (gangplank starts a later job that fits "
                "without delaying the first)"
            )
        elif "volcano.sh/" in key and key not in (HIERARCHY, HIERARCHY_WEIGHTS):
            out.notes.append(f"{obj.where}: annotation {key} not mapped")
    return queue


def _hierarchy(obj: _Object, out: Imported) -> tuple[tuple[str, ...], list[Decimal]] | None:
    """The levels below root and their weights from the hierarchical DRF annotations (Volcano
    reads them when both are set); None when they are not."""
    annotations = (obj.doc.get("metadata") or {}).get("annotations") or {}
    if not annotations.get(HIERARCHY) or not annotations.get(HIERARCHY_WEIGHTS):
        return None
    levels = str(annotations[HIERARCHY]).strip("/").split("/")
    raw = str(annotations[HIERARCHY_WEIGHTS]).split("/")
    if len(levels) < 2:
        out.notes.append(f"{obj.where}: {HIERARCHY} {levels[0]!r} names no level below root")
        return None
    try:
        weights = [max(Decimal(1), Decimal(w)) for w in raw]  # below 1 counts as 1 in Volcano
    except ArithmeticError:
        weights = []
    if len(weights) != len(levels):
        out.notes.append(
            f"{obj.where}: {HIERARCHY_WEIGHTS} {'/'.join(raw)!r} is not one number per level "
            f"of {HIERARCHY} {'/'.join(levels)!r}; weights of 1 used"
        )
        weights = [Decimal(1)] * len(levels)
    return tuple(levels[1:]), weights[1:]


def _number(value: Decimal) -> int | float:
    return int(value) if value == value.to_integral_value() else float(value)


@dataclass
class _Tree:
    """Volcano's queue tree: each queue's levels below root, and the weights annotations give."""

    by_name: dict[str, _Object]
    paths: dict[str, tuple[str, ...]] = field(default_factory=dict)
    weights: dict[tuple[str, ...], tuple[Decimal, str]] = field(default_factory=dict)
    annotated: bool = False

    def path(self, name: str, out: Imported, seen: tuple[str, ...] = ()) -> tuple[str, ...]:
        if name == ROOT:
            return ()
        if name not in self.paths:
            self.paths[name] = self._path(self.by_name[name], out, seen)
        return self.paths[name]

    def _path(self, obj: _Object, out: Imported, seen: tuple[str, ...]) -> tuple[str, ...]:
        hierarchy = _hierarchy(obj, out)
        if hierarchy is not None:
            self.annotated = True
            path, weights = hierarchy
            for depth, weight in enumerate(weights, 1):
                first = self.weights.setdefault(path[:depth], (weight, obj.name))
                if first[0] != weight:
                    out.notes.append(
                        f"{obj.where}: {HIERARCHY_WEIGHTS} gives {'/'.join((ROOT, *path[:depth]))} "
                        f"weight {weight}, Queue {first[1]} gives it {first[0]}; {first[0]} used"
                    )
            if obj.spec.get("parent"):
                out.notes.append(f"{obj.where}: parent not used ({HIERARCHY} is, as in Volcano)")
            return path
        parent = str(obj.spec.get("parent") or ROOT)
        if parent != ROOT and (parent not in self.by_name or parent in seen):
            why = "is not in the input" if parent not in self.by_name else "is in a cycle"
            out.notes.append(f"{obj.where}: its parent {parent} {why}; placed under {ROOT}")
            parent = ROOT
        return (*self.path(parent, out, (*seen, obj.name)), obj.name)


def _volcano(objects: list[_Object], out: Imported) -> None:
    """Volcano queues in the tree Volcano builds: `spec.parent` (default `root`), or the
    hierarchical DRF annotations, whose inner levels become parent queues named by their path."""
    tree = _Tree({obj.name: obj for obj in objects})
    for name in tree.by_name:
        tree.path(name, out)
    nested = ROOT in tree.by_name or tree.annotated  # else: flat queues, no root to speak of
    owner: dict[tuple[str, ...], str] = {(): ROOT}  # a level -> the Volcano queue that is it
    for name, path in tree.paths.items():
        if owner.setdefault(path, name) != name:
            raise ImportRefused(
                f"Queue {owner[path]} and Queue {name} are both {'/'.join((ROOT, *path))}"
            )
    first: dict[tuple[str, ...], int] = {}  # each level in the order the input names it
    for name in tree.by_name:
        path = tree.paths.get(name, ())
        for depth in range(len(path) + 1):
            first.setdefault(path[:depth], len(first))
    # parents before children, siblings in input order: the tree, top down
    levels = sorted(first, key=lambda level: [first[level[:d]] for d in range(1, len(level) + 1)])
    named = {level: _dns(owner.get(level) or "-".join((ROOT, *level))) for level in levels}
    for level in levels:
        if not level and not nested:
            continue
        obj = tree.by_name.get(owner.get(level, ""))
        queue: dict[str, Any] = (
            _volcano_queue(obj, out) if obj is not None else {"name": named[level]}
        )
        if level:
            if nested or len(level) > 1:
                queue = {"name": queue["name"], "parent": named[level[:-1]], **queue}
            if obj is None:
                kids = ", ".join(named[k] for k in levels if k[:-1] == level and k)
                out.mapped.append(
                    f"{HIERARCHY} {'/'.join((ROOT, *level))} -> parent queue {named[level]} "
                    f"of {kids}"
                )
        elif obj is None:
            out.mapped.append(f"{ROOT}: the top of Volcano's queue tree -> a parent queue")
        if level in tree.weights:
            weight = _number(tree.weights[level][0])
            queue["weight"] = weight
            written = obj.spec.get("weight") if obj is not None else None
            if obj is not None and written is not None and written != weight:
                out.mapped.append(
                    f"{obj.where}: weight {weight} from {HIERARCHY_WEIGHTS} "
                    f"(hierarchical DRF); spec.weight {written} (the proportion plugin's) not used"
                )
        _put(out, queue, obj.where if obj is not None else f"{HIERARCHY} level {'/'.join(level)}")


# ---- reading ---------------------------------------------------------

_KINDS = {
    ("kueue.x-k8s.io", "ClusterQueue"),
    ("kueue.x-k8s.io", "Cohort"),
    ("kueue.x-k8s.io", "LocalQueue"),
    ("scheduling.volcano.sh", "Queue"),
}


def _objects(source: str, documents: Iterable[Any], out: Imported) -> Iterable[_Object]:
    for doc in documents:
        if not isinstance(doc, Mapping):
            continue
        if doc.get("kind") == "List":
            yield from _objects(source, doc.get("items") or [], out)
            continue
        kind = str(doc.get("kind") or "")
        group = str(doc.get("apiVersion", "")).split("/")[0]
        meta = doc.get("metadata") or {}
        name = str(meta.get("name", ""))
        if (group, kind) not in _KINDS:
            out.notes.append(f"{kind or 'object'} {name or '?'} ({doc.get('apiVersion')}) skipped")
            continue
        if kind == "LocalQueue":
            name = f"{meta.get('namespace') or 'default'}/{name}"
        spec = doc.get("spec") or {}
        yield _Object(source, kind, name, spec if isinstance(spec, Mapping) else {}, doc)


def _refuse_twice(objects: list[_Object]) -> None:
    """The same object twice, or two objects that would be one queue: refused, naming both."""
    seen: dict[tuple[str, str], _Object] = {}
    queues: dict[str, _Object] = {}
    for obj in objects:
        first = seen.setdefault((obj.kind, obj.name), obj)
        if first is not obj:
            where = (
                f"twice in {obj.source}"
                if first.source == obj.source
                else f"in {first.source} and in {obj.source}"
            )
            raise ImportRefused(f"{obj.where} is defined {where}; import each object once")
        if obj.kind in ("ClusterQueue", "Queue"):
            other = queues.setdefault(_dns(obj.name), obj)
            if other is not obj:
                raise ImportRefused(
                    f"{other.where} ({other.source}) and {obj.where} ({obj.source}) would both "
                    f"be queue {_dns(obj.name)}"
                )


def import_sources(sources: Iterable[tuple[str, Iterable[Any]]]) -> Imported:
    """The policy for the Kueue and Volcano objects of each (file name, its documents)."""
    out = Imported()
    objects = [obj for source, documents in sources for obj in _objects(source, documents, out)]
    _refuse_twice(objects)
    _volcano([o for o in objects if o.kind == "Queue"], out)
    _kueue([o for o in objects if o.kind != "Queue"], out)
    out.notes = list(dict.fromkeys(out.notes))
    out.mapped = list(dict.fromkeys(out.mapped))
    return out


def import_manifests(documents: Iterable[Any], source: str = "input") -> Imported:
    return import_sources([(source, documents)])
