"""The page's charts of what changes over a run, period by period (`over_time.py`): each queue's
share of the GPU-time against its fair share, and elastic jobs' workers against their maximum.
None when no run kept periods."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from extender.sim.report.cells import by_variant
from extender.sim.report.figures import Run
from extender.sim.report.over_time_tables import DAY, period_name


def _percents(ax: Any, run: Run, shares: Sequence[float | None], colour: dict[str, str]) -> None:
    """A run's shares by period as percents, one point a period (none where it has none)."""
    values = [100.0 * v if v is not None else float("nan") for v in shares]
    ax.plot(
        range(1, len(values) + 1),
        values,
        marker="o",
        color=colour[run["label"]],
        label=run["label"],
    )


def over_time_charts(runs: Sequence[Run], colour: dict[str, str]) -> list[tuple[str, Any]]:
    """(title, matplotlib Figure) for each chart; each variant's first seed."""
    import matplotlib.pyplot as plt

    firsts = [g[0] for g in by_variant(runs) if "by_period" in g[0]]
    if not firsts:
        return []
    seconds = firsts[0]["period_s"]
    unit = (
        "day" if seconds == DAY else f"period of {period_name(0, seconds).removeprefix('h 0-')} h"
    )
    queues = sorted({q for r in firsts for q in r["by_period"]["share"]})
    out: list[tuple[str, Any]] = []
    if len(queues) > 1:
        fig, axes = plt.subplots(1, len(queues), figsize=(11, 3.2), sharey=True, squeeze=False)
        for ax, queue in zip(axes[0], queues, strict=True):
            for run in firsts:
                _percents(ax, run, run["by_period"]["share"].get(queue, []), colour)
            fair = next(
                (r["queues"][queue]["fair_share"] for r in firsts if queue in r["queues"]), None
            )
            if fair is not None:
                ax.axhline(100 * fair, color="#555", linewidth=1, linestyle=":")
            ax.set_title(queue, loc="left")
            ax.set_ylim(0, 105)
            ax.grid(alpha=0.3)
            ax.set_xlabel(unit)
        axes[0][0].set_ylabel("% of the GPU-time used")
        axes[0][-1].legend(loc="upper right", frameon=False)
        fig.tight_layout()
        out.append(("Each queue's share of the GPU-time by period (dotted: its fair share)", fig))
    elastic = [r for r in firsts if "elastic" in r["by_period"]]
    if elastic:
        fig, ax = plt.subplots(figsize=(11, 3))
        for run in elastic:
            _percents(ax, run, run["by_period"]["elastic"]["workers_of_max"], colour)
        ax.set_ylim(0, 105)
        ax.set_ylabel("% of their maximum")
        ax.set_xlabel(unit)
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right", frameon=False)
        fig.tight_layout()
        out.append(("Elastic jobs' workers in use by period (time-weighted)", fig))
    return out
