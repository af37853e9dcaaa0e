"""Reading a policy document: `parse_policy` turns the loaded YAML (any mapping) into a `Policy`
or raises `PolicyError` with one message naming the file, the queue and the field.

The checks are the ones a person gets wrong: unknown keys, malformed or negative quantities, an
unknown parent, a cycle, children guaranteed more than their parent, a max below the guarantee, a
name, alias or namespace used twice, a fraction of a resource counted in whole units (GPUs, pods,
extended resources), and in the `lifecycle:` sections (`lifecycle_parse`) a bad duration, idle
action or limit. Resource names that look mistyped are warnings, not errors (`policy_resources`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import partial
from typing import Any

from extender.core.model.quantity import QuantityError, format_amount
from extender.core.placement.rules import parse_topology, parse_weights
from extender.core.queues.fairness import parse_fairness
from extender.core.queues.lifecycle import LifecycleRules
from extender.core.queues.lifecycle_parse import check_lifecycles, duration, parse_lifecycle
from extender.core.queues.policy import (
    MOVES_PER_MINUTE,
    ConsolidationRules,
    Policy,
    PreemptionRules,
    QueueSpec,
)
from extender.core.queues.policy_resources import queue_resource_warnings, resource_amount

API_VERSION = "gangplank.io/v1alpha1"
KIND = "Policy"
STATES = ("open", "closed", "draining")
TOP_KEYS = {
    "apiVersion",
    "kind",
    "queues",
    "preemption",
    "topology",
    "placement",
    "lifecycle",
    "fairness",
    "consolidation",
}
CONSOLIDATION_KEYS = {"allow"}
TOP_CONSOLIDATION_KEYS = {"allow", "movesPerMinute"}
PREEMPTION_KEYS = {"withinQueue", "reclaimable", "minRuntime", "gracePeriodSeconds"}
TOP_PREEMPTION_KEYS = {"evictionsPerMinute", "minRuntime", "gracePeriodSeconds"}
QUEUE_KEYS = {
    "name",
    "parent",
    "weight",
    "guarantee",
    "max",
    "state",
    "namespaces",
    "aliases",
    "description",
    "preemption",
    "lifecycle",
    "consolidation",
}
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_RESOURCE = re.compile(
    r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)
_NAMESPACE_PATTERN = re.compile(r"^[a-z0-9*?]([-a-z0-9*?]*[a-z0-9*?])?$")
_ALIAS = re.compile(r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?/)?[a-z0-9]([-.a-z0-9]*[a-z0-9])?$")


class PolicyError(ValueError):
    """A policy that cannot be used; the message names file, queue and field."""


def _fail(source: str, where: str, problem: str) -> PolicyError:
    return PolicyError(f"{source}: {where}: {problem}")


def _quantities(raw: Any, source: str, where: str) -> dict[str, int]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise _fail(source, where, f"must be a map of resource name to quantity, not {raw!r}")
    out: dict[str, int] = {}
    for name, value in raw.items():
        if not isinstance(name, str) or not _RESOURCE.match(name):
            raise _fail(source, where, f"{name!r} is not a resource name")
        try:
            out[name] = resource_amount(name, value)
        except QuantityError as err:
            raise _fail(source, f"{where}.{name}", str(err)) from None
    return out


def _names(
    raw: Any, source: str, where: str, pattern: re.Pattern[str], what: str
) -> tuple[str, ...]:
    if raw is None:
        return ()
    if isinstance(raw, str) or not isinstance(raw, list):
        raise _fail(source, where, f"must be a list of {what}s, not {raw!r}")
    for item in raw:
        if not isinstance(item, str) or not pattern.match(item):
            raise _fail(source, where, f"{item!r} is not a {what}")
    return tuple(raw)


def _known(raw: Mapping[Any, Any], source: str, where: str, keys: set[str]) -> None:
    """Refuse the first key of `raw` not among `keys`, naming the ones known."""
    unknown = sorted(str(k) for k in raw if k not in keys)
    if unknown:
        raise _fail(
            source, where, f"unknown field {unknown[0]!r} (known: {', '.join(sorted(keys))})"
        )


def _section(raw: Any, source: str, where: str, keys: set[str]) -> Mapping[str, Any]:
    """A map of `keys` (None: empty), or a refusal naming the field."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise _fail(source, where, f"must be a map ({', '.join(sorted(keys))})")
    _known(raw, source, where, keys)
    return raw


def _rules(
    raw: Any, source: str, where: str, keys: set[str], base: PreemptionRules
) -> tuple[PreemptionRules, Mapping[str, Any]]:
    if raw is None:
        return base, {}
    raw = _section(raw, source, where, keys)
    flags = {}
    for key in ("withinQueue", "reclaimable"):
        value = raw.get(key)
        if value is not None and not isinstance(value, bool):
            raise _fail(source, f"{where}.{key}", f"{value!r} must be true or false")
        flags[key] = value
    grace = raw.get("gracePeriodSeconds", base.grace_seconds)
    if grace is not None and (isinstance(grace, bool) or not isinstance(grace, int) or grace < 0):
        raise _fail(source, f"{where}.gracePeriodSeconds", f"{grace!r} must be a whole number >= 0")
    rules = PreemptionRules(
        within_queue=base.within_queue if flags["withinQueue"] is None else flags["withinQueue"],
        reclaimable=base.reclaimable if flags["reclaimable"] is None else flags["reclaimable"],
        min_runtime=duration(raw["minRuntime"], f"{where}.minRuntime", partial(_fail, source))
        if "minRuntime" in raw
        else base.min_runtime,
        grace_seconds=grace,
    )
    return rules, raw


def _consolidation(raw: Any, source: str, where: str, keys: set[str]) -> Mapping[str, Any]:
    """A `consolidation:` section, its keys and `allow` checked."""
    found = _section(raw, source, where, keys)
    allow = found.get("allow")
    if allow is not None and not isinstance(allow, bool):
        raise _fail(source, f"{where}.allow", f"{allow!r} must be true or false")
    return found


def _top_consolidation(raw: Any, source: str) -> ConsolidationRules:
    found = _consolidation(raw, source, "consolidation", TOP_CONSOLIDATION_KEYS)
    rate = found.get("movesPerMinute", MOVES_PER_MINUTE)
    if isinstance(rate, bool) or not isinstance(rate, int) or not 0 <= rate <= 1_000:
        raise _fail(source, "consolidation.movesPerMinute", f"{rate!r} must be 0 to 1000")
    return ConsolidationRules(bool(found.get("allow", False)), rate)


def _queue(raw: Any, index: int, source: str, defaults: PreemptionRules) -> QueueSpec:
    if not isinstance(raw, Mapping):
        raise _fail(source, f"queues[{index}]", "must be a map with at least a name")
    name = raw.get("name")
    if not isinstance(name, str) or not _DNS_LABEL.match(name):
        raise _fail(source, f"queues[{index}].name", f"{name!r} is not a DNS label (a-z, 0-9, '-')")
    where = f"queue {name}"
    _known(raw, source, where, QUEUE_KEYS)
    parent = raw.get("parent")
    if parent is not None and not isinstance(parent, str):
        raise _fail(source, f"{where}: parent", f"must be a queue name, not {parent!r}")
    weight = raw.get("weight", 1)
    if isinstance(weight, bool) or not isinstance(weight, int | float) or not 0 < weight <= 1e6:
        why = (
            f"{weight!r} is text: write the number without quotes"
            if isinstance(weight, str)
            else f"{weight!r} must be a number above 0 (at most 1000000)"
        )
        raise _fail(source, f"{where}: weight", why)
    state = raw.get("state", "open")
    if state not in STATES:
        raise _fail(source, f"{where}: state", f"{state!r} is not one of {', '.join(STATES)}")
    guarantee = _quantities(raw.get("guarantee"), source, f"{where}: guarantee")
    ceiling = _quantities(raw.get("max"), source, f"{where}: max")
    for resource, amount in ceiling.items():
        if amount < guarantee.get(resource, 0):
            raise _fail(
                source,
                f"{where}: max.{resource}",
                f"{format_amount(resource, amount)} is below its guarantee of "
                f"{format_amount(resource, guarantee[resource])}",
            )
    return QueueSpec(
        name=name,
        parent=parent or None,
        weight=float(weight),
        guarantee=guarantee,
        max=ceiling,
        state=state,
        namespaces=_names(
            raw.get("namespaces"), source, f"{where}: namespaces", _NAMESPACE_PATTERN, "namespace"
        ),
        aliases=_names(raw.get("aliases"), source, f"{where}: aliases", _ALIAS, "queue alias"),
        rules=_rules(
            raw.get("preemption"), source, f"{where}: preemption", PREEMPTION_KEYS, defaults
        )[0]
        if raw.get("preemption") is not None
        else None,
        lifecycle=parse_lifecycle(
            raw.get("lifecycle"), f"{where}: lifecycle", partial(_fail, source)
        ),
        movable=_consolidation(
            raw.get("consolidation"), source, f"{where}: consolidation", CONSOLIDATION_KEYS
        ).get("allow"),
    )


def parse_policy(data: Any, source: str = "policy") -> Policy:
    """A validated Policy from loaded YAML; raises PolicyError naming file, queue and field."""
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise _fail(source, "top level", "must be a map (apiVersion, kind, queues)")
    _known(data, source, "top level", TOP_KEYS)
    if data.get("apiVersion", API_VERSION) != API_VERSION:
        raise _fail(source, "apiVersion", f"{data.get('apiVersion')!r} is not {API_VERSION}")
    if data.get("kind", KIND) != KIND:
        raise _fail(source, "kind", f"{data.get('kind')!r} is not {KIND}")
    defaults, top = _rules(
        data.get("preemption"),
        source,
        "preemption",
        TOP_PREEMPTION_KEYS,
        PreemptionRules(),
    )
    rate = top.get("evictionsPerMinute", 10)
    if isinstance(rate, bool) or not isinstance(rate, int) or not 0 <= rate <= 10_000:
        raise _fail(source, "preemption.evictionsPerMinute", f"{rate!r} must be 0 to 10000")
    raw_queues = data.get("queues") or []
    if not isinstance(raw_queues, list):
        raise _fail(source, "queues", "must be a list of queues")
    queues: dict[str, QueueSpec] = {}
    for i, raw in enumerate(raw_queues):
        spec = _queue(raw, i, source, defaults)
        if spec.name in queues:
            raise _fail(source, f"queue {spec.name}", "name used twice")
        queues[spec.name] = spec
    _check_tree(queues, source)
    _check_claims(queues, source)
    fail = lambda where, problem: _fail(source, where, problem)  # noqa: E731
    topology = parse_topology(data.get("topology"), fail)
    weights = parse_weights(data.get("placement"), fail)
    warnings = queue_resource_warnings(queues, source, ())
    top_lifecycle = parse_lifecycle(data.get("lifecycle"), "lifecycle", fail)
    lifecycle = top_lifecycle.over(LifecycleRules()) if top_lifecycle is not None else None
    fairness = parse_fairness(data.get("fairness"), fail)
    consolidation = _top_consolidation(data.get("consolidation"), source)
    policy = Policy(
        queues,
        source,
        defaults,
        rate,
        topology,
        weights,
        warnings,
        lifecycle,
        fairness=fairness,
        consolidation=consolidation,
    )
    check_lifecycles(policy, fail)
    return policy


def _check_tree(queues: Mapping[str, QueueSpec], source: str) -> None:
    for spec in queues.values():
        if spec.parent is not None and spec.parent not in queues:
            raise _fail(source, f"queue {spec.name}: parent", f"no queue is named {spec.parent!r}")
    for spec in queues.values():
        seen = [spec.name]
        parent = spec.parent
        while parent is not None:
            if parent in seen:
                cycle = " -> ".join([*seen, parent])
                raise _fail(source, f"queue {spec.name}: parent", f"queues form a cycle ({cycle})")
            seen.append(parent)
            parent = queues[parent].parent
    children: dict[str, list[QueueSpec]] = {}
    for spec in queues.values():
        if spec.parent is not None:
            children.setdefault(spec.parent, []).append(spec)
    for parent_name, kids in children.items():
        parent_spec = queues[parent_name]
        if parent_spec.namespaces:
            raise _fail(
                source,
                f"queue {parent_name}: namespaces",
                "a queue with child queues holds no work of its own; give its namespaces to a "
                f"child ({', '.join(k.name for k in kids)})",
            )
        for resource, amount in parent_spec.guarantee.items():
            summed = sum(k.guarantee.get(resource, 0) for k in kids)
            if summed > amount:
                raise _fail(
                    source,
                    f"queue {parent_name}: guarantee.{resource}",
                    f"{format_amount(resource, amount)} is less than its children guarantee "
                    f"together ({format_amount(resource, summed)}: "
                    + ", ".join(
                        f"{k.name} {format_amount(resource, k.guarantee.get(resource, 0))}"
                        for k in kids
                    )
                    + ")",
                )


def _check_claims(queues: Mapping[str, QueueSpec], source: str) -> None:
    claimed: dict[str, str] = {}
    for spec in queues.values():
        for entry in spec.namespaces:
            if entry in claimed and claimed[entry] != spec.name:
                raise _fail(
                    source,
                    f"queue {spec.name}: namespaces",
                    f"{entry!r} is already claimed by queue {claimed[entry]}",
                )
            claimed[entry] = spec.name
    named: dict[str, str] = {}
    for spec in queues.values():
        for alias in spec.aliases:
            if alias in named and named[alias] == spec.name:
                raise _fail(source, f"queue {spec.name}: aliases", f"{alias!r} is listed twice")
            if alias in queues or alias in named:
                other = alias if alias in queues else named[alias]
                raise _fail(
                    source, f"queue {spec.name}: aliases", f"{alias!r} already names queue {other}"
                )
            named[alias] = spec.name
