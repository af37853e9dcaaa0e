"""`gangplank policy check|import`: the policy commands a person runs before deploying."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from extender.core.admission import check_state
from extender.core.policy import Policy, PolicyError, describe_amounts, parse_policy
from extender.policy_file import load_policy, strict_load_all
from extender.policy_import import ImportRefused, import_sources


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
            lines.append(
                f"{'  ' * depth}{name}{state}: guarantee {describe_amounts(spec.guarantee)}; "
                f"max {describe_amounts(spec.max)}" + (f"; {'; '.join(extras)}" if extras else "")
            )
            walk(name, depth + 1)

    walk(None, 1)
    return lines


def check_policy(path: str) -> int:
    try:
        policy = load_policy(path)
    except PolicyError as err:
        print(f"invalid: {err}", file=sys.stderr)
        return 2
    print(f"{path}: valid, {len(policy.queues)} queues")
    for line in summary(policy):
        print(line)
    for warning in policy.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return 0


def import_policy(paths: Sequence[str]) -> int:
    sources: list[tuple[str, list[Any]]] = []
    for path in paths:
        try:
            text = sys.stdin.read() if path == "-" else Path(path).read_text()
            sources.append((path, [d for d in strict_load_all(text) if d is not None]))
        except (OSError, yaml.YAMLError) as err:
            print(f"gangplank policy import: {path}: {err}", file=sys.stderr)
            return 2
    try:
        imported = import_sources(sources)
    except ImportRefused as err:
        print(f"gangplank policy import: {err}", file=sys.stderr)
        return 2
    if not imported.queues:
        print("gangplank policy import: no Kueue or Volcano queues found", file=sys.stderr)
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
