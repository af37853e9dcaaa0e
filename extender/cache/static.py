"""An embedded cluster view read from a file, for `make demo` and offline use.

The file is what `kubectl get nodes,pods,namespaces,priorityclasses -A -o yaml` prints (a `List`
of objects), or any YAML stream of such objects or Lists; a `.json` file (`-o json`) is read with
orjson, which is much faster for large clusters.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson
import yaml

from extender.cache.handlers import handlers_for
from extender.cache.store import ClusterStore

_KINDS = {
    "Node": "nodes",
    "Pod": "pods",
    "Namespace": "namespaces",
    "PriorityClass": "priorityclasses",
}


class ClusterFileError(ValueError):
    pass


def load_cluster_file(path: Path, store: ClusterStore) -> dict[str, int]:
    """Fill `store` from the file; returns how many objects of each kind were loaded."""
    try:
        if path.suffix == ".json":
            documents = [orjson.loads(path.read_bytes())]
        else:
            loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
            documents = list(yaml.load_all(path.read_text(), Loader=loader))
    except UnicodeDecodeError as err:
        raise ClusterFileError(
            f"cannot read cluster file {path}: not a text file (byte {err.start} is not UTF-8)"
        ) from None
    except (OSError, yaml.YAMLError, orjson.JSONDecodeError) as err:
        # one line: PyYAML's message spans several
        raise ClusterFileError(
            f"cannot read cluster file {path}: {' '.join(str(err).split())}"
        ) from None
    by_kind: dict[str, list[Mapping[str, Any]]] = {plural: [] for plural in _KINDS.values()}
    pending = [doc for doc in documents if doc is not None]
    while pending:
        doc = pending.pop(0)
        if not isinstance(doc, Mapping):
            raise ClusterFileError(
                f"{path}: expected Kubernetes objects, found {type(doc).__name__}"
            )
        kind = doc.get("kind", "")
        if kind == "List" or str(kind).endswith("List"):
            items = doc.get("items") or []
            pending.extend(
                {**item, "kind": item.get("kind") or str(kind)[: -len("List")]} for item in items
            )
        elif kind in _KINDS:
            by_kind[_KINDS[kind]].append(doc)
        elif not kind:
            # `kubectl get -o json|yaml` always names each item's kind; without it the object
            # cannot be told apart, and leaving it out silently would serve an empty cluster.
            meta = doc.get("metadata")
            name = meta.get("name") if isinstance(meta, Mapping) else None
            raise ClusterFileError(
                f"{path}: object {name or '(no name)'} has no kind (give each item of a plain "
                "List its kind, as kubectl does)"
            )
    handlers = handlers_for(store)
    for plural, objects in by_kind.items():
        handlers[plural].replace(objects)
    return {plural: len(objects) for plural, objects in by_kind.items()}
