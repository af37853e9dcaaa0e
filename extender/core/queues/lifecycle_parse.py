"""Reading `lifecycle:` sections (the top level's and each queue's) into `LifecycleOverride`s.

`policy_parse` calls these with its `fail(where, problem)`, so that every mistake is refused the
way the rest of the policy is, naming file, queue and field: an unknown key, a negative or
malformed duration, an unknown idle action, `below` outside 0-100 or written as a fraction (0.1
for 10%), a negative limit, a `maxBackoff` below the `backoff` it caps (also where the two are
written in different sections: the check runs on each queue's merged rules).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from extender.core.queues.lifecycle import (
    IDLE_ACTIONS,
    LifecycleOverride,
    LifecycleRules,
    Value,
    format_duration,
    parse_duration,
)
from extender.core.queues.policy import Policy

Fail = Callable[[str, str], Exception]

LIFECYCLE_KEYS = (
    "readyTimeout",
    "requeue",
    "staleGangGrace",
    "maxRuntime",
    "restartLimit",
    "idleGpu",
)
DURATIONS = {
    "readyTimeout": "ready_timeout",
    "staleGangGrace": "stale_gang_grace",
    "maxRuntime": "max_runtime",
    "requeue.backoff": "requeue.backoff",
    "requeue.maxBackoff": "requeue.max_backoff",
    "idleGpu.for": "idle_gpu.window",
}
COUNTS = {"restartLimit": "restart_limit", "requeue.limit": "requeue.limit"}
REQUEUE_KEYS = ("backoff", "maxBackoff", "limit")
IDLE_KEYS = ("below", "for", "action")


def duration(value: Any, where: str, fail: Fail) -> float:
    """Seconds from a policy's duration (`parse_duration`), or `fail` naming `where`."""
    try:
        return parse_duration(value)
    except ValueError as err:
        raise fail(where, str(err)) from None


def parse_lifecycle(raw: Any, where: str, fail: Fail) -> LifecycleOverride | None:
    """The fields a `lifecycle:` section writes; None when there is no section. `where` is
    `lifecycle` at the top level, `queue NAME: lifecycle` in a queue."""
    if raw is None:
        return None
    section = _section(raw, where, LIFECYCLE_KEYS, fail)
    written: dict[str, Any] = dict(section)
    requeue = section.get("requeue")
    if requeue is not None:
        written.update(
            (f"requeue.{k}", v)
            for k, v in _section(requeue, f"{where}.requeue", REQUEUE_KEYS, fail).items()
        )
    idle = section.get("idleGpu")
    if idle is not None and idle is not False:
        written.update(
            (f"idleGpu.{k}", v)
            for k, v in _section(idle, f"{where}.idleGpu", IDLE_KEYS, fail).items()
        )
    fields: dict[str, Value] = {}
    for key, name in DURATIONS.items():
        if written.get(key) is not None:
            fields[name] = duration(written[key], f"{where}.{key}", fail)
    for key, name in COUNTS.items():
        if written.get(key) is not None:
            fields[name] = _count(written[key], f"{where}.{key}", fail)
    if idle is not None:
        fields["idle_gpu"] = idle is not False
    if written.get("idleGpu.below") is not None:
        fields["idle_gpu.below"] = _percent(
            written["idleGpu.below"], f"{where}.idleGpu.below", fail
        )
    action = written.get("idleGpu.action")
    if action is not None:
        if action not in IDLE_ACTIONS:
            raise fail(
                f"{where}.idleGpu.action", f"{action!r} is not one of {', '.join(IDLE_ACTIONS)}"
            )
        fields["idle_gpu.action"] = action
    if fields.get("idle_gpu.window") == 0:
        raise fail(f"{where}.idleGpu.for", f"{written['idleGpu.for']!r} must be above 0")
    return LifecycleOverride(fields)


def check_lifecycles(policy: Policy, fail: Fail) -> None:
    """Refuse rules that only go wrong once merged: a `maxBackoff` below the `backoff` it caps,
    the two written at the top level or in different queues. Named where the last of them is."""
    if policy.lifecycle is not None:
        _check_backoff(policy.lifecycle, "lifecycle", fail)
    for name, spec in policy.queues.items():
        rules = policy.lifecycle_of(name)
        if spec.lifecycle is not None and spec.lifecycle.writes("requeue") and rules is not None:
            _check_backoff(rules, f"queue {name}: lifecycle", fail)


def _check_backoff(rules: LifecycleRules, where: str, fail: Fail) -> None:
    requeue = rules.requeue
    if requeue.max_backoff < requeue.backoff:
        raise fail(
            f"{where}.requeue.maxBackoff",
            f"{format_duration(requeue.max_backoff)} is below the backoff it caps "
            f"({format_duration(requeue.backoff)})",
        )


def _section(raw: Any, where: str, keys: tuple[str, ...], fail: Fail) -> Mapping[str, Any]:
    known = ", ".join(keys)
    if not isinstance(raw, Mapping):
        raise fail(where, f"must be a map ({known}), not {raw!r}")
    unknown = [str(k) for k in raw if k not in keys]
    if unknown:
        raise fail(where, f"unknown field {unknown[0]!r} (known: {known})")
    return raw


def _count(value: Any, where: str, fail: Fail) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise fail(where, f"{value!r} must be a whole number >= 0")
    return value


def _percent(value: Any, where: str, fail: Fail) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 100:
        raise fail(where, f"{value!r} must be a percentage, 0 to 100")
    if 0 < value < 1:
        # The utilisation read is a percent (dcgm-exporter's, 0-100, whole numbers): below a
        # fraction of one percent is "at 0%", which `1` says plainly; a fraction here is nearly
        # always 0.1 meant as 10%, and would never find a GPU idle.
        raise fail(
            where,
            f"{value!r} looks like a fraction; below is a percent (0-100): "
            f"write {value * 100:g} for {value * 100:g}%",
        )
    return float(value)
