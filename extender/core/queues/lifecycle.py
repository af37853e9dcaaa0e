"""The policy's `lifecycle:` rules: what gangplank does with jobs that hold GPUs and leave them
unused (never ready, a gang left broken, running too long, idle).

```yaml
lifecycle:                     # top level: the defaults of every queue
  readyTimeout: 10m            # every pod Running and Ready within this of the first bind; 0: off
  requeue: {backoff: 1m, maxBackoff: 1h, limit: 5}   # base x 2^n, capped; after `limit`: held
  staleGangGrace: 5m           # a gang left below its size, not completed within this; 0: off
  maxRuntime: 0                # 0: none
  restartLimit: 5              # a pod restarted more than this after start counts as not ready
  idleGpu: {below: 5, for: 30m, action: report}      # report | reclaim-first | evict
queues:
  - name: team-a
    lifecycle: {maxRuntime: 72h, idleGpu: {action: evict}}   # fields laid over the top level
```

Each `lifecycle:` section is a `LifecycleOverride`: the fields it writes, nothing else. A queue's
rules are the top level's with its ancestors' sections and then its own laid over them, field by
field, the nearest last (`merged`); `idleGpu: false` turns the idle rule off, a section that
writes `idleGpu` where it is off turns it on from the defaults. Durations are seconds, written
Go-style (`parse_duration`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

IDLE_ACTIONS = ("report", "reclaim-first", "evict")


@dataclass(frozen=True, slots=True)
class Requeue:
    backoff: float = 60.0  # seconds; the first requeue waits this, then x2 each time
    max_backoff: float = 3600.0  # cap
    limit: int = 5  # after `limit` requeues the job is held until a person acts


@dataclass(frozen=True, slots=True)
class IdleGpu:
    below: float = 5.0  # percent, 0-100
    window: float = 1800.0  # seconds (`for:` in YAML)
    action: str = "report"  # "report" | "reclaim-first" | "evict"


@dataclass(frozen=True, slots=True)
class LifecycleRules:
    ready_timeout: float = 0.0  # seconds; 0 = rule off
    requeue: Requeue = Requeue()
    stale_gang_grace: float = 0.0  # seconds; 0 = rule off
    max_runtime: float = 0.0  # seconds; 0 = none
    idle_gpu: IdleGpu | None = None  # None = rule off
    restart_limit: int = 5  # a pod restarted more than this after start counts as not ready


Value = float | int | str | bool


@dataclass(frozen=True, slots=True)
class LifecycleOverride:
    """The fields one `lifecycle:` section writes, by their name in `LifecycleRules`:
    `max_runtime`, `requeue.backoff`, `idle_gpu.action`. `idle_gpu` is True when the section
    writes an `idleGpu` map (the rule on), False for `idleGpu: false` (the rule off)."""

    fields: Mapping[str, Value] = field(default_factory=dict)

    def writes(self, group: str) -> bool:
        """Whether the section writes a field of `group` (`requeue`, `idle_gpu`)."""
        return any(name.startswith(f"{group}.") for name in self.fields)

    def over(self, base: LifecycleRules) -> LifecycleRules:
        """`base` with this section's fields laid over it."""
        changes: dict[str, Any] = {k: v for k, v in self.fields.items() if "." not in k}
        if self.writes("requeue"):
            changes["requeue"] = replace(base.requeue, **self._group("requeue"))
        idle = changes.pop("idle_gpu", None)
        if idle is False:
            changes["idle_gpu"] = None
        elif idle is True:
            changes["idle_gpu"] = replace(base.idle_gpu or IdleGpu(), **self._group("idle_gpu"))
        return replace(base, **changes)

    def _group(self, group: str) -> dict[str, Any]:
        prefix = f"{group}."
        return {k.removeprefix(prefix): v for k, v in self.fields.items() if k.startswith(prefix)}


def merged(
    top: LifecycleRules | None, sections: Iterable[LifecycleOverride | None]
) -> LifecycleRules | None:
    """The top level's rules with `sections` (the root queue's first, the queue's own last) laid
    over them; None when there is neither a top-level section nor any of `sections`."""
    rules = top
    for section in sections:
        if section is not None:
            rules = section.over(rules if rules is not None else LifecycleRules())
    return rules


_NUMBER = r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
_DURATION = re.compile(rf"[0-9]+|(?:{_NUMBER}(?:ms|d|h|m|s))+")
_PART = re.compile(rf"({_NUMBER})(ms|d|h|m|s)")
_UNIT = {"d": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
_LARGEST = 100 * 365 * 86400.0  # a century: more is a mistake, and beyond floats soon after


def parse_duration(value: object) -> float:
    """Seconds from a number of seconds (`90`, `"90"`) or a Go duration (`"90s"`, `"10m"`,
    `"1h30m"`, `"0"`, `"1.5h"`, `"500ms"`; `d` for days too, `"7d"`); ValueError saying why for
    anything else, a negative duration included."""
    malformed = ValueError(f"{value!r} is not a duration (seconds, or like 90s, 10m, 1h30m)")
    if isinstance(value, int | float) and not isinstance(value, bool):
        if value != value:  # NaN
            raise malformed
        seconds = float(min(value, _LARGEST + 1)) if value >= 0 else -1.0
    else:
        text = value.strip() if isinstance(value, str) else ""
        if not _DURATION.fullmatch(text.removeprefix("-")):
            raise malformed
        parts = _PART.findall(text) or [(text.removeprefix("-"), "s")]
        seconds = sum(float(number) * _UNIT[unit] for number, unit in parts)
        seconds = -1.0 if text.startswith("-") else seconds
    if seconds < 0:
        raise ValueError(f"{value!r} is negative")
    if seconds > _LARGEST:
        raise ValueError(f"{value!r} is more than a century")
    return seconds


def format_duration(seconds: float) -> str:
    """`90` -> "1m30s", `3600` -> "1h", `0` -> "0s": how messages write a duration."""
    if seconds <= 0:
        return "0s"
    whole = int(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    out = (f"{hours}h" if hours else "") + (f"{minutes}m" if minutes else "")
    rest_seconds = round(secs + seconds - whole, 3)
    if rest_seconds or not out:
        out += f"{rest_seconds:g}s"
    return out


def describe_lifecycle(rules: LifecycleRules) -> str:
    """The rules in a line, in the policy's words: `readyTimeout 10m, requeue 1m to 1h, held
    after 5, staleGangGrace off, maxRuntime none, restartLimit 5, idleGpu below 5% for 30m:
    report`."""
    requeue, idle = rules.requeue, rules.idle_gpu
    return ", ".join(
        (
            f"readyTimeout {_or(rules.ready_timeout, 'off')}",
            f"requeue {format_duration(requeue.backoff)} to {format_duration(requeue.max_backoff)}"
            f", held after {requeue.limit}",
            f"staleGangGrace {_or(rules.stale_gang_grace, 'off')}",
            f"maxRuntime {_or(rules.max_runtime, 'none')}",
            f"restartLimit {rules.restart_limit}",
            "idleGpu off"
            if idle is None
            else f"idleGpu below {idle.below:g}% for {format_duration(idle.window)}: {idle.action}",
        )
    )


def _or(seconds: float, zero: str) -> str:
    return format_duration(seconds) if seconds else zero
