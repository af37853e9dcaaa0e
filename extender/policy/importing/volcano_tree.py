"""Volcano's queue tree as gangplank's: `spec.parent` (default `root`), or the
`volcano.sh/hierarchy` / `volcano.sh/hierarchy-weights` annotations of hierarchical DRF, whose
inner levels become parent queues named by their path (`root/eng` -> `root-eng`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from extender.policy.importing.result import Imported, ImportRefused, Manifest, dns, put
from extender.policy.importing.volcano import (
    HIERARCHY,
    HIERARCHY_WEIGHTS,
    spec_weight,
    volcano_queue,
)

ROOT = "root"


def _hierarchy(obj: Manifest, out: Imported) -> tuple[tuple[str, ...], list[Decimal]] | None:
    """The levels below root and their weights from the hierarchical DRF annotations (Volcano
    reads them when both are set); None when they are not."""
    annotations = obj.annotations
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

    by_name: dict[str, Manifest]
    paths: dict[str, tuple[str, ...]] = field(default_factory=dict)
    weights: dict[tuple[str, ...], tuple[Decimal, str]] = field(default_factory=dict)
    annotated: bool = False

    def path(self, name: str, out: Imported, seen: tuple[str, ...] = ()) -> tuple[str, ...]:
        if name == ROOT:
            return ()
        if name not in self.paths:
            self.paths[name] = self._path(self.by_name[name], out, seen)
        return self.paths[name]

    def _path(self, obj: Manifest, out: Imported, seen: tuple[str, ...]) -> tuple[str, ...]:
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


def _shares(tree: _Tree, objects: list[Manifest], out: Imported) -> None:
    """Volcano's proportion plugin makes a queue's weight its deserved share of the cluster
    among its siblings; gangplank's weight only orders admission. Said once per set of siblings
    (not where `deserved` is written: the capacity plugin's, whose weights give no share; nor for
    hierarchical DRF's weights, which are fair-share weights like gangplank's)."""
    if any(o.spec.get("deserved") for o in objects):
        return
    siblings: dict[tuple[str, ...], list[Manifest]] = {}
    for obj in objects:
        path = tree.paths.get(obj.name, ())
        annotated = obj.annotations.get(HIERARCHY) and obj.annotations.get(HIERARCHY_WEIGHTS)
        if path and not annotated:
            siblings.setdefault(path[:-1], []).append(obj)
    for parent, kids in siblings.items():
        if len(kids) < 2:
            continue
        weights = [spec_weight(o) or 1 for o in kids]  # 1: Volcano's default
        under = f" (under {'/'.join((ROOT, *parent))})" if parent else ""
        shares = ", ".join(f"{w}/{sum(weights)}" for w in weights)
        out.notes.append(
            f"Queues {', '.join(o.name for o in kids)}{under}: weights "
            f"{', '.join(str(w) for w in weights)} are shares of the cluster in Volcano's "
            f"proportion plugin (each queue deserved {shares} of it, up to its capability, and "
            "got back what others borrowed of that); in gangplank a weight orders admission "
            "between sibling queues (dominant share against weight) and guarantees nothing: give "
            "a queue a guarantee for the share it must get"
        )


def import_volcano(objects: list[Manifest], out: Imported) -> None:
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
    named = {level: dns(owner.get(level) or "-".join((ROOT, *level))) for level in levels}
    for level in levels:
        if not level and not nested:
            continue
        obj = tree.by_name.get(owner.get(level, ""))
        queue: dict[str, Any] = (
            volcano_queue(obj, out) if obj is not None else {"name": named[level]}
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
        put(out, queue, obj.where if obj is not None else f"{HIERARCHY} level {'/'.join(level)}")
    _shares(tree, objects, out)
