"""How a figure is written: runs grouped by variant, a value or its median and range over seeds,
aligned columns."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from typing import Any

from extender.sim.report.figures import Run
from extender.sim.runs import WAIT_CAUSES

NOT_MODELLED = "—"  # a figure a run does not have (the baseline's waste without faults)

REASON_WIDTH = 200  # characters of a reason shown in the summary, cut between words


def by_variant(runs: Sequence[Run]) -> list[list[Run]]:
    """The runs grouped by label, labels in the order they first come, seeds in order."""
    groups: dict[str, list[Run]] = {}
    for run in runs:
        groups.setdefault(run["label"], []).append(run)
    return list(groups.values())


def spread(values: Sequence[float | None]) -> tuple[float, float, float] | None:
    """(median, lowest, highest) of the values known; None when none is."""
    known = [v for v in values if v is not None]
    if not known:
        return None
    return statistics.median(known), min(known), max(known)


def fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e15:
            return f"{int(value):,}"
        return f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}"
    return f"{value:,}" if isinstance(value, int) else str(value)


def spread_text(values: Sequence[float | None], fmt: Callable[[Any], str] = fmt) -> str:
    """One value as it is; several as the median and the range: `0.35 (0.1-0.9)`."""
    if len(values) == 1:
        return fmt(values[0])
    found = spread(values)
    if found is None:
        return "-"
    median, low, high = found
    if low == high:
        return fmt(median)
    return f"{fmt(median)} ({fmt(low)}-{fmt(high)})"


def pct(value: Any) -> str:
    return "-" if value is None else f"{value:.0%}"


def table(rows: Sequence[Sequence[str]], left: Sequence[int] = (0,)) -> str:
    """Columns aligned: those in `left` to the left (words), the others to the right."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for n, row in enumerate(rows):
        cells = [
            c.ljust(w) if i in left else c.rjust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append("  ".join(cells).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def cause_hours(group: Sequence[Run], queue: str | None) -> tuple[dict[str, float], float]:
    """Median job-hours waited per cause over the group's seeds, and the median total."""
    scopes = [r if queue is None else r["queues"].get(queue) for r in group]
    found = [s for s in scopes if s is not None]
    by_cause = {
        c: statistics.median([s["wait_by_cause_h"].get(c, 0.0) for s in found]) for c in WAIT_CAUSES
    }
    return by_cause, statistics.median([s["waited_h"] for s in found]) if found else 0.0
