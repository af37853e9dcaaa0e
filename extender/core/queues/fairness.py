"""The policy's `fairness:` section: how long the fair order remembers what queues used.

`fairness: {halfLife: 24h, window: 7d}` at the top level. `halfLife` is how long until a
GPU-hour used counts half (0, or no section: no history, today's fair order exactly); `window`
how far back usage is kept at all (at least the half-life; default 7d). docs/fairness.md.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from extender.core.queues.lifecycle import format_duration, parse_duration

Fail = Callable[[str, str], Exception]

FAIRNESS_KEYS = ("halfLife", "window")
DEFAULT_WINDOW = 7 * 86400.0


@dataclass(frozen=True, slots=True)
class Fairness:
    half_life: float = 0.0  # seconds; 0: no usage history
    window: float = DEFAULT_WINDOW  # seconds of history kept

    @property
    def on(self) -> bool:
        return self.half_life > 0


def parse_fairness(raw: Any, fail: Fail) -> Fairness:
    """The `fairness:` section (none: history off), or `fail(where, problem)`."""
    if raw is None:
        return Fairness()
    if not isinstance(raw, Mapping):
        raise fail("fairness", "must be a map (halfLife, window)")
    unknown = sorted(str(k) for k in raw if k not in FAIRNESS_KEYS)
    if unknown:
        raise fail("fairness", f"unknown field {unknown[0]!r} (known: {', '.join(FAIRNESS_KEYS)})")
    seconds: dict[str, float] = {}
    for key in FAIRNESS_KEYS:
        if key in raw:
            try:
                seconds[key] = parse_duration(raw[key])
            except ValueError as err:
                raise fail(f"fairness.{key}", str(err)) from None
    half_life = seconds.get("halfLife", 0.0)
    window = seconds.get("window", DEFAULT_WINDOW)
    if half_life > 0 and window < half_life:
        raise fail(
            "fairness.window",
            f"{format_duration(window)} is shorter than the half-life "
            f"({format_duration(half_life)}): keep at least one half-life of usage",
        )
    return Fairness(half_life, window)
