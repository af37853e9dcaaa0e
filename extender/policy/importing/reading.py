"""The input: Kueue and Volcano objects of each file (in `kind: List`s too), each object once."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from extender.policy.importing.kueue import import_kueue
from extender.policy.importing.result import Imported, ImportRefused, Manifest, dns
from extender.policy.importing.volcano_tree import import_volcano

KINDS = {
    ("kueue.x-k8s.io", "ClusterQueue"),
    ("kueue.x-k8s.io", "Cohort"),
    ("kueue.x-k8s.io", "LocalQueue"),
    ("kueue.x-k8s.io", "ResourceFlavor"),
    ("kueue.x-k8s.io", "Topology"),
    ("scheduling.volcano.sh", "Queue"),
}


NODES = ("ResourceFlavor", "Topology")

# The fields the import reads whose type is not a scalar, per kind: a path in `spec` ("*": each
# item of a list) and the type it must have. A field of another type is refused, naming it.
_QUOTA: dict[str, type] = {
    "resourceGroups": list,
    "resourceGroups.*": Mapping,
    "resourceGroups.*.coveredResources": list,
    "resourceGroups.*.flavors": list,
    "resourceGroups.*.flavors.*": Mapping,
    "resourceGroups.*.flavors.*.resources": list,
    "resourceGroups.*.flavors.*.resources.*": Mapping,
    "fairSharing": Mapping,
    "preemption": Mapping,
    "excludeResourcePrefixes": list,
}
SHAPES: dict[str, dict[str, type]] = {
    "ClusterQueue": _QUOTA,
    "Cohort": _QUOTA,
    "LocalQueue": {"fairSharing": Mapping},
    "ResourceFlavor": {"nodeLabels": Mapping, "nodeTaints": list, "tolerations": list},
    "Topology": {"levels": list, "levels.*": Mapping},
    "Queue": {
        "capability": Mapping,
        "deserved": Mapping,
        "guarantee": Mapping,
        "guarantee.resource": Mapping,
    },
}
_TYPE_NAMES: dict[type, str] = {list: "a list", Mapping: "a map"}


def _misshapen(kind: str, spec: Mapping[str, Any]) -> str | None:
    """The first field of `spec` whose type is not the one `SHAPES` says, as people read it."""
    for path, wanted in SHAPES.get(kind, {}).items():
        for where, value in _at(spec, path.split("."), "spec"):
            if value is not None and not isinstance(value, wanted):
                return f"{where} is {type(value).__name__}, not {_TYPE_NAMES[wanted]}"
    return None


def _at(value: Any, steps: list[str], where: str) -> Iterable[tuple[str, Any]]:
    """The values at `steps` under `value` (each item where a step is "*"), with their paths."""
    if not steps:
        yield where, value
        return
    step, rest = steps[0], steps[1:]
    if step == "*":
        if isinstance(value, list):
            for i, item in enumerate(value):
                yield from _at(item, rest, f"{where}[{i}]")
    elif isinstance(value, Mapping) and step in value:
        yield from _at(value[step], rest, f"{where}.{step}")


def _objects(source: str, documents: Iterable[Any], out: Imported) -> Iterable[Manifest]:
    for doc in documents:
        if not isinstance(doc, Mapping):
            continue
        if doc.get("kind") == "List":
            yield from _objects(source, doc.get("items") or [], out)
            continue
        kind = str(doc.get("kind") or "")
        group = str(doc.get("apiVersion", "")).split("/")[0]
        meta = doc.get("metadata") or {}
        if not isinstance(meta, Mapping):
            raise ImportRefused(f"a {kind or 'object'} in {source}: metadata is not a map")
        name = meta.get("name")
        if (group, kind) not in KINDS:
            out.notes.append(f"{kind or 'object'} {name or '?'} ({doc.get('apiVersion')}) skipped")
            continue
        if not isinstance(name, str) or not name:
            raise ImportRefused(f"a {kind} in {source} has no metadata.name")
        if kind == "LocalQueue":
            name = f"{meta.get('namespace') or 'default'}/{name}"
        spec = doc.get("spec") or {}
        if not isinstance(spec, Mapping):
            raise ImportRefused(f"{kind} {name} ({source}): spec is not a map")
        problem = _misshapen(kind, spec)
        if problem is not None:
            raise ImportRefused(f"{kind} {name} ({source}): {problem}")
        yield Manifest(source, kind, name, spec, doc)


def _once(objects: list[Manifest]) -> list[Manifest]:
    """Each object once. The same queue or cohort twice, or two objects that would be one
    queue, is refused, naming both places; a ResourceFlavor or Topology given twice alike (every
    example of Kueue's has its `default-flavor`) is read once."""
    seen: dict[tuple[str, str], Manifest] = {}
    queues: dict[str, Manifest] = {}
    once: list[Manifest] = []
    for obj in objects:
        first = seen.setdefault((obj.kind, obj.name), obj)
        if first is not obj and obj.kind in NODES and first.spec == obj.spec:
            continue
        once.append(obj)
        if first is not obj:
            where = (
                f"twice in {obj.source}"
                if first.source == obj.source
                else f"in {first.source} and in {obj.source}"
            )
            raise ImportRefused(f"{obj.where} is defined {where}; import each object once")
        if obj.kind in ("ClusterQueue", "Queue"):
            other = queues.setdefault(dns(obj.name), obj)
            if other is not obj:
                raise ImportRefused(
                    f"{other.where} ({other.source}) and {obj.where} ({obj.source}) would both "
                    f"be queue {dns(obj.name)}"
                )
    return once


def import_sources(sources: Iterable[tuple[str, Iterable[Any]]]) -> Imported:
    """The policy for the Kueue and Volcano objects of each (file name, its documents)."""
    out = Imported()
    objects = [obj for source, documents in sources for obj in _objects(source, documents, out)]
    objects = _once(objects)
    import_volcano([o for o in objects if o.kind == "Queue"], out)
    import_kueue([o for o in objects if o.kind != "Queue"], out)
    out.notes = list(dict.fromkeys(out.notes))
    out.mapped = list(dict.fromkeys(out.mapped))
    return out


def import_manifests(documents: Iterable[Any], source: str = "input") -> Imported:
    return import_sources([(source, documents)])
