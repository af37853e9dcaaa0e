"""The summary's tables of what changes over a run (`over_time.py`'s figures): each queue's
share of the GPU-time by period against its fair share (`share_table`), elastic jobs' workers
by period (`elastic_table`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from extender.sim.report.cells import fmt, pct, spread_text, table
from extender.sim.report.figures import Run

HOUR = 3600.0
DAY = 24 * HOUR


def period_name(index: int, seconds: float) -> str:
    """`day 1`, or `h 0-4` for periods that are not days."""
    if seconds == DAY:
        return f"day {index + 1}"
    return (
        f"h {fmt(round(index * seconds / HOUR, 2))}-{fmt(round((index + 1) * seconds / HOUR, 2))}"
    )


def _periods(groups: Sequence[Sequence[Run]]) -> tuple[float, int] | None:
    """The period of the runs and the most periods any has (None: no periods kept)."""
    runs = [r for g in groups for r in g if "by_period" in r]
    if not runs:
        return None
    counts = [len(next(iter(r["by_period"]["share"].values()), [])) for r in runs]
    return runs[0]["period_s"], max(counts, default=0)


def _at(run: Run, key: str, name: str, index: int) -> Any:
    row = run.get("by_period", {}).get(key, {}).get(name) or []
    return row[index] if index < len(row) else None


def share_table(groups: Sequence[Sequence[Run]], queues: Sequence[str]) -> str:
    """Each queue's share of the GPU-time used, period by period and over the run, against its
    fair share; "" when no run kept periods or there is one queue."""
    found = _periods(groups)
    if found is None or len(queues) < 2:
        return ""
    seconds, n = found
    fair = {
        q: next((r["queues"][q]["fair_share"] for g in groups for r in g if q in r["queues"]), None)
        for q in queues
    }
    rows = [["period", "queue", "fair", *(g[0]["label"] for g in groups)]]
    for index in [*range(n), None]:
        for k, queue in enumerate(queues):
            cells = [
                (period_name(index, seconds) if index is not None else "all") if k == 0 else "",
                queue,
                pct(fair[queue]),
            ]
            for g in groups:
                values = [
                    r["queues"].get(queue, {}).get("share")
                    if index is None
                    else _at(r, "share", queue, index)
                    for r in g
                ]
                cells.append(spread_text(values, pct))
            rows.append(cells)
    return (
        "each queue's share of the GPU-time used, by period, against its fair share "
        "(its weight's, while every queue has work):\n" + table(rows, left=(0, 1))
    )


ELASTIC_PERIOD_ROWS = (
    ("jobs_running", "elastic jobs running (mean)", fmt),
    ("workers_of_max", "their workers in use / their max", pct),
    ("extras_started", "extra workers started", fmt),
    ("extras_taken", "extra workers taken back", fmt),
)


def elastic_table(groups: Sequence[Sequence[Run]]) -> str:
    """Elastic jobs' workers period by period (time-weighted); "" without elastic jobs or
    periods."""
    found = _periods(groups)
    if found is None or not any("elastic" in r.get("by_period", {}) for g in groups for r in g):
        return ""
    seconds, n = found
    rows = [["period", "", *(g[0]["label"] for g in groups)]]
    for index in range(n):
        for k, (key, text, form) in enumerate(ELASTIC_PERIOD_ROWS):
            cells = [period_name(index, seconds) if k == 0 else "", text]
            for g in groups:
                values = [_at(r, "elastic", key, index) for r in g]
                cells.append(spread_text(values, form))
            rows.append(cells)
    return "elastic jobs' workers by period (time-weighted):\n" + table(rows, left=(0, 1))
