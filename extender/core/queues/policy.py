"""The policy: queues in a tree, each with a guarantee, a ceiling, a weight, a state, namespaces.

`Policy` is what a validated policy document says (`policy_parse.parse_policy` reads one). It
answers the questions the core asks of it: a queue's preemption rules and lifecycle rules
(`lifecycle.py`), its children and path to the root, the resources quota governs, and which queue
a pod is in: its queue label (any source in the README's "Label a workload" table), looked up
among queue names and aliases (`ns/name` first, for Kueue LocalQueues), or else its namespace's
queue (an exact namespace entry before a pattern; the longest pattern first).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property

from extender.core.model.quantity import format_amount
from extender.core.placement.scoring import ScoreWeights
from extender.core.placement.topology import DEFAULT_TOPOLOGY, Topology
from extender.core.queues.fairness import Fairness
from extender.core.queues.lifecycle import LifecycleOverride, LifecycleRules, merged


@dataclass(frozen=True, slots=True)
class QueueSpec:
    name: str
    parent: str | None = None
    weight: float = 1.0
    guarantee: Mapping[str, int] = field(default_factory=dict)
    max: Mapping[str, int] = field(default_factory=dict)
    state: str = "open"
    namespaces: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    rules: PreemptionRules | None = None  # None: the policy's defaults
    lifecycle: LifecycleOverride | None = None  # its own `lifecycle:` fields, if any
    movable: bool | None = None  # its `consolidation.allow` (None: its parent's, or the top's)


@dataclass(frozen=True, slots=True)
class PreemptionRules:
    """Who may take a queue's running work away, and how gently."""

    within_queue: bool = True  # higher priority jobs of the queue may preempt its lower ones
    reclaimable: bool = True  # what it runs beyond its guarantee may be reclaimed
    min_runtime: float = 0.0  # seconds a job runs before it may be a victim
    grace_seconds: int | None = None  # eviction grace period; None: the pod's own


MOVES_PER_MINUTE = 2  # jobs moved per minute when the policy does not say


@dataclass(frozen=True, slots=True)
class ConsolidationRules:
    """The top-level `consolidation:`: whether running jobs may be moved to make room."""

    allow: bool = False  # jobs of every queue (and of none) may be moved, unless a queue says no
    moves_per_minute: int = MOVES_PER_MINUTE  # jobs moved per minute, at most


@dataclass(frozen=True, eq=False)
class Policy:
    queues: Mapping[str, QueueSpec]  # in the order written
    source: str = "policy"
    defaults: PreemptionRules = field(default_factory=PreemptionRules)
    evictions_per_minute: int = 10  # jobs gangplank evicts itself per minute, at most
    topology: Topology = DEFAULT_TOPOLOGY
    weights: ScoreWeights = field(default_factory=ScoreWeights)
    # Resource names that look mistyped, one message each (the policy is used all the same).
    warnings: tuple[str, ...] = ()
    lifecycle: LifecycleRules | None = None  # the top-level `lifecycle:`; None: none written
    fairness: Fairness = field(default_factory=Fairness)  # `fairness:`: usage history
    consolidation: ConsolidationRules = field(default_factory=ConsolidationRules)

    def movable_queue(self, queue: str | None) -> bool:
        """Whether `queue`'s running jobs may be moved to make room (`consolidation.allow`: the
        queue's own, else the nearest ancestor's, else the top level's)."""
        if queue is not None and queue in self.queues:
            for name in self.path(queue):
                allow = self.queues[name].movable
                if allow is not None:
                    return allow
        return self.consolidation.allow

    def idle_window(self) -> float:
        """The longest idle window any queue's rules name (0: no idle rule anywhere)."""
        rules = [self.lifecycle_of(None), *(self.lifecycle_of(q) for q in self.queues)]
        return max((r.idle_gpu.window for r in rules if r is not None and r.idle_gpu), default=0.0)

    def lifecycle_of(self, queue: str | None) -> LifecycleRules | None:
        """The lifecycle rules of a queue: the top level's, with its ancestors' `lifecycle:`
        fields and its own laid over them (the nearest wins); None when none of them writes a
        `lifecycle:` section. A pod in no queue (or one the policy does not name) gets the top
        level's."""
        if queue is None:
            return self.lifecycle
        return self._lifecycles.get(queue, self.lifecycle)

    @cached_property
    def _lifecycles(self) -> Mapping[str, LifecycleRules | None]:
        return {
            name: merged(
                self.lifecycle, [self.queues[q].lifecycle for q in reversed(self.path(name))]
            )
            for name in self.queues
        }

    def rules(self, queue: str | None) -> PreemptionRules:
        """The preemption rules of a queue (the policy's defaults for pods in no queue)."""
        spec = self.queues.get(queue) if queue is not None else None
        return spec.rules if spec is not None and spec.rules is not None else self.defaults

    @cached_property
    def children(self) -> Mapping[str | None, tuple[str, ...]]:
        """Children of each queue; `None` holds the top-level queues."""
        out: dict[str | None, list[str]] = {}
        for spec in self.queues.values():
            out.setdefault(spec.parent, []).append(spec.name)
        return {k: tuple(v) for k, v in out.items()}

    @cached_property
    def resources(self) -> frozenset[str]:
        """Resources some queue names: the ones quota governs. Others are not counted."""
        return frozenset(r for q in self.queues.values() for r in (*q.guarantee, *q.max))

    @cached_property
    def _aliases(self) -> Mapping[str, str]:
        return {alias: q.name for q in self.queues.values() for alias in q.aliases}

    @cached_property
    def _namespace_rules(self) -> tuple[dict[str, str], list[tuple[str, str]]]:
        exact: dict[str, str] = {}
        patterns: list[tuple[str, str]] = []
        for q in self.queues.values():
            for entry in q.namespaces:
                if any(c in entry for c in "*?"):
                    patterns.append((entry, q.name))
                else:
                    exact[entry] = q.name
        patterns.sort(key=lambda item: (-len(item[0].replace("*", "")), item[0]))
        return exact, patterns

    @cached_property
    def _by_namespace(self) -> dict[str, str | None]:
        return {}

    def is_leaf(self, name: str) -> bool:
        return name not in self.children

    def path(self, name: str) -> tuple[str, ...]:
        """The queue and its ancestors, the queue first."""
        out = [name]
        parent = self.queues[name].parent
        while parent is not None:
            out.append(parent)
            parent = self.queues[parent].parent
        return tuple(out)

    def namespace_queue(self, namespace: str) -> str | None:
        cache = self._by_namespace
        if namespace in cache:
            return cache[namespace]
        exact, patterns = self._namespace_rules
        found = exact.get(namespace)
        if found is None:
            found = next((q for p, q in patterns if fnmatch.fnmatchcase(namespace, p)), None)
        cache[namespace] = found
        return found

    def resolve(self, label: str, namespace: str, label_key: str = "") -> tuple[str | None, str]:
        """(queue, problem) for a pod with queue label value `label` ("" when none) in
        `namespace`. No label and no namespace queue: (None, "") — not a queued pod."""
        if not label:
            return self.namespace_queue(namespace), ""
        if label in self.queues:
            return label, ""
        found = self._aliases.get(f"{namespace}/{label}") or self._aliases.get(label)
        if found is not None:
            return found, ""
        where = f" (pod label {label_key})" if label_key else ""
        return None, f"queue {label!r} does not exist{where}"


def describe_amounts(amounts: Mapping[str, int]) -> str:
    return ", ".join(f"{n}: {format_amount(n, a)}" for n, a in sorted(amounts.items())) or "-"
