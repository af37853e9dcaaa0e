"""What an import gives (`Imported`: the queues, what was mapped and how, what was not) and the
small rules every source shares: the objects read, queue names, amounts as gangplank counts
them and as a person writes them."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from extender.core.model.quantity import QuantityError, exact_quantity
from extender.core.queues.policy_parse import API_VERSION, KIND
from extender.core.queues.policy_resources import resource_amount, unknown_resource


class ImportRefused(ValueError):
    """Input that cannot become one policy (an object defined twice, two objects one name)."""


@dataclass
class Imported:
    queues: dict[str, dict[str, Any]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # not carried over, or not with its meaning
    mapped: list[str] = field(default_factory=list)  # carried over, and how
    topology: dict[str, Any] | None = None  # the policy's `topology`, when the input has one

    def policy(self) -> dict[str, Any]:
        policy: dict[str, Any] = {"apiVersion": API_VERSION, "kind": KIND}
        if self.topology is not None:
            policy["topology"] = self.topology
        policy["queues"] = list(self.queues.values())
        return policy

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
class Manifest:
    """One Kueue or Volcano object of the input."""

    source: str
    kind: str
    name: str  # namespace/name for a LocalQueue
    spec: Mapping[str, Any]
    doc: Mapping[str, Any]

    @property
    def where(self) -> str:
        return f"{self.kind} {self.name}"

    @property
    def annotations(self) -> Mapping[str, Any]:
        return (self.doc.get("metadata") or {}).get("annotations") or {}


def cohort_of(obj: Manifest) -> str | None:
    """The cohort a Kueue ClusterQueue names (`cohort`, v1beta2's `cohortName`)."""
    cohort = obj.spec.get("cohort") or obj.spec.get("cohortName")
    return str(cohort) if cohort else None


def dns(name: str) -> str:
    """A name as a queue's name (a DNS label)."""
    cleaned = re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-")
    return cleaned[:63] or "queue"


def add(into: dict[str, int], resource: str, amount: int) -> None:
    into[resource] = into.get(resource, 0) + amount


def virtual(resource: str) -> bool:
    """A resource no pod asks for (a name Kubernetes would not give a pod's resource)."""
    return "/" not in resource and unknown_resource(resource) is not None


def amount(resource: str, value: Any, where: str, out: Imported) -> int | None:
    """An amount as gangplank counts it, or None (and a note) when it cannot be one."""
    if virtual(resource):
        out.notes.append(
            f"{where}: {resource} left out: no pod asks for it (a virtual resource, like those "
            "Kueue's resource transformations make, has no counterpart)"
        )
        return None
    try:
        counted = resource_amount(resource, value)
    except QuantityError as err:
        out.notes.append(f"{where}: {resource} {err}; left out")
        return None
    if resource == "pods":
        out.mapped.append(
            f"{where}: the pods quota is kept: gangplank counts one `pods` per pod of the queue, "
            "as Kueue counts admitted pods"
        )
    return counted


def written(amounts: Mapping[str, int]) -> dict[str, str]:
    """Amounts as a person writes them: cpu in cores or millicores, bytes in Gi/Mi when whole."""
    out: dict[str, str] = {}
    for resource, value in sorted(amounts.items()):
        if resource == "cpu":
            out[resource] = str(value // 1000) if value % 1000 == 0 else f"{value}m"
            continue
        text = str(value)
        if resource in ("memory", "ephemeral-storage") and value:
            for suffix, unit in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20)):
                if value % unit == 0:
                    text = f"{value // unit}{suffix}"
                    break
        out[resource] = text
    return out


def describe(amounts: Mapping[str, int]) -> str:
    """Amounts in words: `cpu 8, nvidia.com/gpu 4`."""
    return ", ".join(f"{r} {v}" for r, v in written(amounts).items())


def number(value: Any) -> float | None:
    """A quantity ("2", "500m", 0.75) as a number, int when whole; None if not one."""
    try:
        exact = exact_quantity(value)
    except QuantityError:
        return None
    return int(exact) if exact == exact.to_integral_value() else float(exact)


def unmapped(
    obj: Manifest,
    handled: set[str],
    out: Imported,
    why_not: Mapping[str, str] | None = None,
    defaulted: Callable[[str, Any], bool] = lambda key, value: False,
) -> None:
    """A note for each spec field the importer does not handle, unless it is empty or the value
    the source's API gives it by default (a `kubectl get -o yaml` dump writes them all)."""
    why_not = why_not or {}
    for key, value in obj.spec.items():
        if key in handled or value in (None, {}, [], "") or defaulted(key, value):
            continue
        why = f" ({why_not[key]})" if key in why_not else ""
        out.notes.append(f"{obj.where}: {key} not mapped{why}")


def put(out: Imported, queue: dict[str, Any], where: str) -> None:
    name = queue["name"]
    if name in out.queues:
        raise ImportRefused(f"{where} would be queue {name}, which another object already is")
    out.queues[name] = queue
