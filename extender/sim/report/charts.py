"""The page's charts (matplotlib, imported only when they are drawn), each a base64 PNG.

A panel with nothing to draw (no job preempted, no gang held incomplete) says "none" instead of
an empty axis; bars and lines keep a margin under the frame; legends sit above the plot, off the
data; a title has at most one parenthesis (`title`)."""

from __future__ import annotations

import base64
import io
from collections.abc import Mapping, Sequence
from typing import Any

from extender.sim.report.cells import by_variant, cause_hours, spread
from extender.sim.report.charts_over_time import over_time_charts
from extender.sim.report.figures import HOUR, Run
from extender.sim.report.rows import VARIANT_BARS
from extender.sim.runs import WAIT_CAUSES


def _png(figure: Any) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
    return base64.b64encode(buffer.getvalue()).decode()


def colours(groups: Sequence[Sequence[Run]]) -> dict[str, str]:
    """One colour per variant, the same on every chart."""
    palette = ("#1f77b4", "#d62728", "#7f7f7f", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf")
    return {g[0]["label"]: palette[i % len(palette)] for i, g in enumerate(groups)}


CAUSE_COLOURS = {
    "scheduler": "#c7c7c7",
    "quota": "#f2b701",
    "room": "#8c564b",
    "hold": "#e377c2",
    "gang": "#17becf",
}


def time_unit(runs: Sequence[Run]) -> tuple[str, float]:
    """The unit that fits the runs' length: seconds for a short demo, minutes, hours for a day."""
    longest = max((r["series"]["t_s"][-1] for r in runs if r["series"]["t_s"]), default=0.0)
    if longest <= 600:
        return "seconds", 1.0
    if longest <= 3 * HOUR:
        return "minutes", 60.0
    return "hours", HOUR


def title(main: str, *notes: str) -> str:
    """`main (note; note)`: what a chart shows, then what to know to read it, in one pair of
    parentheses (the notes have none of their own)."""
    shown = [n for n in notes if n]
    return f"{main} ({'; '.join(shown)})" if shown else main


HEADROOM = 1.12  # the top of a panel, over its highest bar or line


def _none(ax: Any, axis: str = "y") -> None:
    """A panel with nothing to draw: "none" where the data would be, no scale of values."""
    ax.text(0.5, 0.5, "none", transform=ax.transAxes, ha="center", va="center", color="#777")
    getattr(ax, f"set_{axis}lim")(0, 1)
    getattr(ax, f"set_{axis}ticks")([])


def _scale(ax: Any, highest: float) -> None:
    """From 0 to a little over `highest`; "none" when there is nothing above 0."""
    if highest > 0:
        ax.set_ylim(0, highest * HEADROOM)
    else:
        _none(ax)


def _legend_above(ax: Any, count: int) -> None:
    ax.legend(
        loc="lower right", bbox_to_anchor=(1.0, 1.0), ncols=count, frameon=False, borderaxespad=0.3
    )


def _highest(values: Sequence[float | None]) -> float:
    return max((v for v in values if v is not None), default=0.0)


def charts(runs: Sequence[Run]) -> list[tuple[str, Any]]:
    """(title, matplotlib Figure) for each chart. Time series show each variant's first seed;
    bars the median over seeds, with the range as a line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"font.size": 10, "axes.titlesize": 11, "legend.fontsize": 9})
    groups = by_variant(runs)
    colour = colours(groups)
    firsts = [g[0] for g in groups]
    unit, per = time_unit(firsts)
    seeded = f"seed {firsts[0]['seed']}" if len(groups[0]) > 1 else ""
    over = "bars: the median over seeds, lines: the range" if len(groups[0]) > 1 else ""
    out = []

    def times(run: Run) -> list[float]:
        return [t / per for t in run["series"]["t_s"]]

    fig, axes = plt.subplots(3, 1, figsize=(11, 7.5), sharex=True)
    for ax, key, panel in (
        (axes[0], "allocated", "GPUs allocated (dotted: the cluster's GPUs)"),
        (axes[1], "incomplete", "GPUs held by gangs not all bound"),
        (
            axes[2],
            "stranded",
            "stranded GPUs (free, fewer on a node than the smallest pod waiting asks)",
        ),
    ):
        for run in firsts:
            ax.step(
                times(run),
                run["series"][key],
                where="post",
                color=colour[run["label"]],
                label=run["label"],
            )
            if key == "allocated":
                ax.axhline(run["gpus"], color=colour[run["label"]], linewidth=1, linestyle=":")
        highest = _highest([v for run in firsts for v in run["series"][key]])
        if key == "allocated":
            highest = max(highest, *(run["gpus"] for run in firsts))
        ax.set_title(panel, loc="left")
        ax.set_ylabel("GPUs")
        _scale(ax, highest)
        ax.grid(alpha=0.3)
    _legend_above(axes[0], len(firsts))
    axes[-1].set_xlabel(unit)
    fig.tight_layout()
    out.append((title("GPUs over time", seeded), fig))

    queues = sorted({q for r in firsts for q in r["series"]["running"]})
    for key, main, ylabel in (
        ("waiting", "Jobs waiting, by queue", "jobs"),
        ("running", "GPUs of running jobs, by queue", "GPUs"),
    ):
        cols = min(2, len(queues)) or 1
        rows = -(-len(queues) // cols) or 1
        height = 2.6 * rows + 0.8
        fig, axes = plt.subplots(rows, cols, figsize=(11, height), sharex=True, squeeze=False)
        for ax, queue in zip(axes.flat, queues, strict=False):
            highest = 0.0
            for run in firsts:
                values = run["series"][key].get(queue)
                if values is not None:
                    ax.step(
                        times(run),
                        values,
                        where="post",
                        color=colour[run["label"]],
                        label=run["label"],
                    )
                    highest = max(highest, _highest(values))
            ax.set_title(queue, loc="left")
            ax.set_ylabel(ylabel)
            _scale(ax, highest)
            ax.grid(alpha=0.3)
        for ax in axes.flat[len(queues) :]:
            ax.set_visible(False)
        for ax in axes[-1]:
            ax.set_xlabel(unit)
        # one legend over the panels, clear of their titles (the queues' names)
        handles, labels = axes.flat[0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="upper right", ncols=len(firsts), frameon=False)
        fig.tight_layout(rect=(0, 0, 1, 1 - 0.35 / height))
        out.append((title(main, seeded), fig))

    queues = sorted({q for r in runs for q in r["queues"]})
    out.append(
        (
            title("Queue waits, p95 in hours", "p50 hatched", over),
            _bars(plt, groups, colour, queues, "wait_p95_h", "hours", hatched="wait_p50_h"),
        )
    )
    out.append(
        (
            title(
                "Share of GPU-hours by queue against its fair share", "black: the fair share", over
            ),
            _bars(plt, groups, colour, queues, "share", "share of GPU-hours", target="fair_share"),
        )
    )
    out.append(
        (
            title(
                "What the jobs of each queue waited for, in job-hours",
                "the median over seeds" if len(groups[0]) > 1 else "",
            ),
            _causes(plt, groups, colour, queues),
        )
    )

    fig, axes = plt.subplots(1, 3, figsize=(11, 3.2))
    labels = [g[0]["label"] for g in groups]
    for ax, (key, panel) in zip(axes, VARIANT_BARS, strict=True):
        found = [spread([r[key] for r in g]) or (0.0, 0.0, 0.0) for g in groups]
        ax.bar(labels, [f[0] for f in found], color=[colour[x] for x in labels])
        if len(groups[0]) > 1:
            ax.vlines(labels, [f[1] for f in found], [f[2] for f in found], color="black")
        ax.set_title(panel, loc="left")
        ax.tick_params(axis="x", labelrotation=15)
        ax.grid(axis="y", alpha=0.3)
        ax.set_xlim(-0.75, len(labels) - 0.25)  # half a bar between the bars and the frame
        _scale(ax, _highest([f[2] for f in found]))
    fig.tight_layout()
    out.append((title("Preemptions, jobs not started, gang time-to-start", over), fig))
    return out


def plots(runs: Sequence[Run]) -> list[tuple[str, str]]:
    """(title, base64 PNG) for each chart (`charts`)."""
    import matplotlib.pyplot as plt

    out = []
    drawn = charts(runs) + over_time_charts(runs, colours(by_variant(runs)))
    for heading, figure in drawn:
        out.append((heading, _png(figure)))
        plt.close(figure)
    return out


def _bars(
    plt: Any,
    groups: Sequence[Sequence[Run]],
    colour: Mapping[str, str],
    queues: Sequence[str],
    key: str,
    ylabel: str,
    *,
    hatched: str = "",
    target: str = "",
) -> Any:
    fig, ax = plt.subplots(figsize=(11, 3.6))
    width = 0.8 / len(groups)
    highest = 0.0
    for i, group in enumerate(groups):
        label = group[0]["label"]
        xs = [n + (i - (len(groups) - 1) / 2) * width for n in range(len(queues))]
        found = [spread([(r["queues"].get(q) or {}).get(key) for r in group]) for q in queues]
        ax.bar(xs, [f[0] if f else 0 for f in found], width, color=colour[label], label=label)
        highest = max(highest, _highest([f[2] if f else 0 for f in found]))
        if len(group) > 1:
            ax.vlines(
                xs,
                [f[1] if f else 0 for f in found],
                [f[2] if f else 0 for f in found],
                color="black",
                linewidth=1,
            )
        if hatched:
            inner = [
                spread([(r["queues"].get(q) or {}).get(hatched) for r in group]) for q in queues
            ]
            ax.bar(
                xs,
                [f[0] if f else 0 for f in inner],
                width,
                fill=False,
                hatch="//",
                edgecolor="white",
            )
        if target:
            fair = [(group[0]["queues"].get(q) or {}).get(target) for q in queues]
            highest = max(highest, _highest(fair))
            ax.scatter(
                xs,
                [f if f is not None else float("nan") for f in fair],
                color="black",
                marker="_",
                s=400,
                linewidths=2,
                zorder=3,
            )
    ax.set_xticks(range(len(queues)), queues)
    ax.set_xlim(-0.6, len(queues) - 0.4)
    ax.set_ylabel(ylabel)
    ax.grid(axis="y", alpha=0.3)
    _scale(ax, highest)
    _legend_above(ax, len(groups))
    fig.tight_layout()
    return fig


def _causes(
    plt: Any, groups: Sequence[Sequence[Run]], colour: Mapping[str, str], queues: Sequence[str]
) -> Any:
    rows = [(q, g) for q in queues for g in groups]
    fig, ax = plt.subplots(figsize=(11, 0.45 * len(rows) + 1.2))
    ys = list(range(len(rows)))[::-1]
    longest = 0.0
    for cause in WAIT_CAUSES:
        lefts = []
        widths = []
        for queue, group in rows:
            by_cause, _ = cause_hours(group, queue)
            lefts.append(
                sum(
                    v
                    for c, v in by_cause.items()
                    if list(WAIT_CAUSES).index(c) < list(WAIT_CAUSES).index(cause)
                )
            )
            widths.append(by_cause[cause])
        longest = max(longest, *(a + b for a, b in zip(lefts, widths, strict=True)), 0.0)
        ax.barh(ys, widths, left=lefts, color=CAUSE_COLOURS[cause], label=cause, height=0.7)
    ax.set_yticks(ys, [f"{q} — {g[0]['label']}" for q, g in rows])
    for tick, (_, group) in zip(ax.get_yticklabels(), rows, strict=True):
        tick.set_color(colour[group[0]["label"]])
    ax.set_xlabel("job-hours waited")
    ax.grid(axis="x", alpha=0.3)
    if longest > 0:
        ax.set_xlim(0, longest * HEADROOM)
        ax.legend(
            loc="lower center", bbox_to_anchor=(0.5, 1.0), ncols=len(WAIT_CAUSES), frameon=False
        )
    else:
        _none(ax, "x")
    fig.tight_layout()
    return fig
