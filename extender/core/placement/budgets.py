"""Shared-link budgets: what the pods of one topology domain may use together of a named quantity.

The policy gives a tier a budget per domain (`topology.budgets.rack.storageRead: {perDomain:
200Gi, mode: preferred}`, bytes per second); pods declare their use per pod with the annotation
named after the quantity (`storageRead` → `gangplank.io/storage-read: 8Gi`). A domain's use is
the sum over its running pods (bound, not finished) and the reserved pods of plans in it. A job
whose whole use does not fit in a domain's budget next to that use is kept out of it: `preferred`
(default) tries the other domains first and uses it only when nothing else fits, `required`
refuses it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from extender.core.model.quantity import QuantityError, format_amount, parse_quantity
from extender.core.model.snapshot import PodInfo, Snapshot
from extender.core.placement.topology import Tier, domains

PREFIX = "gangplank.io/"


@dataclass(frozen=True, slots=True)
class Budget:
    tier: Tier
    quantity: str  # as the policy names it: storageRead
    per_domain: int  # bytes per second
    required: bool = False

    @property
    def annotation(self) -> str:
        """The pod annotation that declares a pod's use: storageRead → gangplank.io/storage-read."""
        return PREFIX + re.sub(r"(?<!^)([A-Z])", r"-\1", self.quantity).lower()

    def figures(self, domain: str, in_use: int, needs: int) -> str:
        """`rack r2 storageRead budget 200Gi/s: 192Gi/s in use, this job needs 24Gi/s`."""
        return (
            f"{self.tier.name} {domain} {self.quantity} budget {rate(self.per_domain)}: "
            f"{rate(in_use)} in use, this job needs {rate(needs)}"
        )


def rate(amount: int) -> str:
    return f"{format_amount('memory', amount)}/s"


def use_of(pod: PodInfo, budget: Budget) -> int:
    """What one pod declares it uses (0: nothing, or a value that is no quantity)."""
    text = pod.annotations.get(budget.annotation)
    if text is None:
        return 0
    try:
        return parse_quantity(text)
    except QuantityError:
        return 0


def declares(pod: PodInfo, budgets: Sequence[Budget]) -> bool:
    """Whether the pod declares a use of any budget (cheap: for the hot path)."""
    notes = pod.annotations
    return bool(budgets) and any(b.annotation in notes for b in budgets)


def demand(pods: Sequence[PodInfo], budgets: Sequence[Budget]) -> tuple[dict[Budget, int], str]:
    """What a job (its pods still to place) uses of each budget, and what is wrong with what its
    pods wrote ("" when nothing)."""
    needs: dict[Budget, int] = {}
    for budget in budgets:
        total = 0
        for pod in pods:
            text = pod.annotations.get(budget.annotation)
            if text is None:
                continue
            try:
                total += parse_quantity(text)
            except QuantityError as err:
                return {}, f"{budget.annotation} on pod {pod.name}: {err}"
        if total:
            needs[budget] = total
    return needs, ""


def use_by_domain(
    snapshot: Snapshot, budget: Budget, reserved: Iterable[tuple[PodInfo, str]]
) -> dict[str, int]:
    """Each domain's use of `budget`: its running pods' and its reserved pods' (pod, node)."""
    index = domains(snapshot, budget.tier)
    nodes = snapshot.nodes
    use: dict[str, int] = {}
    annotation = budget.annotation
    for domain, members in index.members.items():
        total = 0
        for name in members:
            for pod in nodes[name].pods:
                if annotation in pod.annotations and not pod.terminal:
                    total += use_of(pod, budget)
        if total:
            use[domain] = total
    for pod, node in reserved:
        where = index.of.get(node)
        if where is not None and annotation in pod.annotations:
            use[where] = use.get(where, 0) + use_of(pod, budget)
    return use


@dataclass(frozen=True, slots=True)
class Overrun:
    """A domain the job would take over its budget."""

    budget: Budget
    domain: str
    in_use: int
    needs: int

    def __str__(self) -> str:
        return self.budget.figures(self.domain, self.in_use, self.needs)


@dataclass(frozen=True, slots=True)
class Verdict:
    """Where a job's use fits the budgets: the nodes of domains it would overrun, split into
    those it must not use (`required` budgets) and those it should use last."""

    refused: frozenset[str]
    last: frozenset[str]
    overruns: tuple[Overrun, ...]
    domains_with_room: Mapping[Budget, int]  # per budget, domains where the job fits

    def why_refused(self) -> str:
        """For a job no domain of a required budget can take: the domain with the most room."""
        for budget, room in self.domains_with_room.items():
            if budget.required and not room:
                mine = [o for o in self.overruns if o.budget == budget]
                best = min(mine, key=lambda o: (o.in_use, o.domain))
                return f"no {budget.tier.name} has {budget.quantity} budget left ({best})"
        return ""


def judge(
    snapshot: Snapshot, needs: Mapping[Budget, int], reserved: Sequence[tuple[PodInfo, str]]
) -> Verdict:
    refused: set[str] = set()
    last: set[str] = set()
    overruns: list[Overrun] = []
    with_room: dict[Budget, int] = {}
    for budget, need in needs.items():
        index = domains(snapshot, budget.tier)
        use = use_by_domain(snapshot, budget, reserved)
        room = 0
        for domain, members in index.members.items():
            in_use = use.get(domain, 0)
            if in_use + need <= budget.per_domain:
                room += 1
                continue
            overruns.append(Overrun(budget, domain, in_use, need))
            (refused if budget.required else last).update(members)
        with_room[budget] = room
    return Verdict(frozenset(refused), frozenset(last - refused), tuple(overruns), with_room)
