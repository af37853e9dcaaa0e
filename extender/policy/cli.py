"""`gangplank policy check|import`: the policy commands a person runs before deploying."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import yaml

from extender.core.placement.budgets import rate
from extender.core.queues.admission import check_state
from extender.core.queues.lifecycle import describe_lifecycle, format_duration
from extender.core.queues.policy import Policy, describe_amounts
from extender.core.queues.policy_parse import PolicyError, parse_policy
from extender.policy.file import (
    not_text,
    policy_from_text,
    policy_text,
    strict_load_all,
    yaml_message,
)
from extender.policy.importing import ImportRefused, import_sources


def summary(policy: Policy) -> list[str]:
    lines = []

    def walk(parent: str | None, depth: int) -> None:
        for name in policy.children.get(parent, ()):
            spec = policy.queues[name]
            state = "" if check_state(policy, name).ok else f" [{spec.state}]"
            extras = []
            if spec.namespaces:
                extras.append(f"namespaces {', '.join(spec.namespaces)}")
            if spec.weight != 1:
                extras.append(f"weight {spec.weight:g}")
            rules = policy.lifecycle_of(name)
            if spec.lifecycle is not None and rules is not None:
                extras.append(f"lifecycle: {describe_lifecycle(rules)}")
            if spec.movable is not None:
                extras.append("its jobs may be moved" if spec.movable else "its jobs stay")
            lines.append(
                f"{'  ' * depth}{name}{state}: guarantee {describe_amounts(spec.guarantee)}; "
                f"max {describe_amounts(spec.max)}" + (f"; {'; '.join(extras)}" if extras else "")
            )
            walk(name, depth + 1)

    walk(None, 1)
    if policy.lifecycle is not None:
        lines.append(f"  lifecycle (top level): {describe_lifecycle(policy.lifecycle)}")
    for budget in policy.topology.budgets:
        tier = budget.tier.name
        lines.append(
            f"  budget: {budget.quantity} {rate(budget.per_domain)} per {tier} "
            f"({'required' if budget.required else 'preferred'}; pods declare {budget.annotation})"
        )
    if policy.fairness.on:
        lines.append(
            f"  fairness: recent use counts in the fair order, halved every "
            f"{format_duration(policy.fairness.half_life)}, kept "
            f"{format_duration(policy.fairness.window)}"
        )
    moves = policy.consolidation
    if moves.allow or any(q.movable for q in policy.queues.values()):
        whose = "every queue's jobs" if moves.allow else "labelled jobs and the queues' above"
        lines.append(
            f"  consolidation (top level): {whose} may be moved to make room, at most "
            f"{moves.moves_per_minute} a minute"
        )
    return lines


IMPORTABLE = {"kueue.x-k8s.io": "Kueue", "scheduling.volcano.sh": "Volcano"}


def not_a_policy(path: str, text: str) -> str | None:
    """Why `text` (of `path`) is plainly not one policy document, in one line, or None. (What
    is in a policy document is policy_from_text's to judge.)"""
    try:
        documents = [d for d in yaml.safe_load_all(text) if d is not None]
    except (ValueError, yaml.YAMLError):
        return None  # policy_from_text says what is wrong with it
    groups = {str(d.get("apiVersion", "")).split("/")[0] for d in documents if isinstance(d, dict)}
    found = sorted(IMPORTABLE[g] for g in groups & IMPORTABLE.keys())
    if found:
        kinds = sorted({str(d.get("kind")) for d in documents if isinstance(d, dict)})
        return (
            f"{path}: {' and '.join(found)} manifests ({', '.join(kinds)}), not a gangplank "
            f"policy: convert them with `gangplank policy import {path} > policy.yaml`"
        )
    if len(documents) > 1:
        return f"{path}: {len(documents)} YAML documents; a gangplank policy is one"
    if not documents or documents == [{}]:
        return (
            f"{path}: empty: a policy names its queues under `queues:` (see policies/example.yaml)"
        )
    return None


def read_source(path: str) -> str:
    """The text of file `path` (`-`: standard input, read as UTF-8 bytes: the text stream's
    surrogate escapes ended in a traceback); PolicyError when it cannot be read or is not
    text."""
    if path != "-":
        return policy_text(path)
    try:
        return sys.stdin.buffer.read().decode("utf-8")
    except UnicodeDecodeError as err:
        raise PolicyError(not_text(path, err)) from None


def check_policy(path: str) -> int:
    """`gangplank policy check FILE` (`-`: standard input)."""
    try:
        text = read_source(path)
        problem = not_a_policy(path, text)
        if problem is not None:
            raise PolicyError(problem)
        policy = policy_from_text(text, path)
    except PolicyError as err:
        print(f"invalid: {' '.join(str(err).split())}", file=sys.stderr)
        return 2
    count = len(policy.queues)
    print(f"{path}: valid, {count} queue{'' if count == 1 else 's'}")
    for line in summary(policy):
        print(line)
    for warning in policy.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if not policy.queues:
        print(
            f"warning: {path} defines no queues: every pod that names a queue will be refused "
            "(queue ... does not exist)",
            file=sys.stderr,
        )
    return 0


def import_policy(paths: Sequence[str]) -> int:
    sources: list[tuple[str, list[Any]]] = []
    for path in paths:
        try:
            text = read_source(path)
        except PolicyError as err:
            print(f"gangplank policy import: {err}", file=sys.stderr)
            return 2
        try:
            sources.append((path, [d for d in strict_load_all(text) if d is not None]))
        except yaml.YAMLError as err:
            print(f"gangplank policy import: {yaml_message(path, text, err)}", file=sys.stderr)
            return 2
    try:
        imported = import_sources(sources)
    except ImportRefused as err:
        print(f"gangplank policy import: {err}", file=sys.stderr)
        return 2
    if not imported.queues:
        print(f"gangplank policy import: {_no_queues(sources)}", file=sys.stderr)
        return 2
    print("\n".join(imported.header(paths)))
    print(yaml.safe_dump(imported.policy(), sort_keys=False), end="")
    for note in imported.notes:
        print(f"not mapped: {note}", file=sys.stderr)
    try:
        parse_policy(imported.policy(), "imported policy")
    except PolicyError as err:
        print(f"the imported policy does not validate: {err}", file=sys.stderr)
        return 2
    return 0


def _no_queues(sources: Sequence[tuple[str, list[Any]]]) -> str:
    """Why an import found nothing: the kinds it was given instead, and what it reads."""
    kinds = sorted(
        {str(d["kind"]) for _, docs in sources for d in docs if isinstance(d, dict) and "kind" in d}
    )
    given = f" (given: {', '.join(kinds)})" if kinds else ""
    hint = (
        "; a gangplank Policy is checked with `gangplank policy check`" if "Policy" in kinds else ""
    )
    return (
        f"no Kueue or Volcano queues found{given}: it reads Kueue's ClusterQueue, Cohort, "
        f"LocalQueue, ResourceFlavor and Topology and Volcano's Queue{hint}"
    )
