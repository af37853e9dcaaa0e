"""What a simulation shows: figures (JSON), a terminal summary, side-by-side comparisons and an
HTML page of plots (matplotlib, imported only when a page is written)."""

from __future__ import annotations

import base64
import html
import io
import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from extender.core.policy import Policy
from extender.sim.driver import Driver, JobRecord

HOUR = 3600.0


def _percentile(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _hours(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds / HOUR, 3)


def _job_figures(records: Sequence[JobRecord], end: float) -> dict[str, Any]:
    """Counts, waits and gang time-to-start of `records` (jobs that arrived by `end`)."""
    waits = [(r.started if r.started is not None else end) - r.spec.arrival for r in records]
    gangs = [
        r.started - r.spec.arrival for r in records if r.spec.members > 1 and r.started is not None
    ]
    return {
        "jobs": len(records),
        "started": sum(1 for r in records if r.started is not None),
        "never_started": sum(1 for r in records if r.started is None),
        "wait_p50_h": _hours(_percentile(waits, 0.5)),
        "wait_p95_h": _hours(_percentile(waits, 0.95)),
        "gang_start_p50_h": _hours(_percentile(gangs, 0.5)),
        "gang_start_p95_h": _hours(_percentile(gangs, 0.95)),
    }


def figures(driver: Driver, label: str, policy: Policy | None = None) -> dict[str, Any]:
    """Every figure of one run. Waits are from arrival to the job's first start; a job that
    never started counts with the wait it had when the run ended (a lower bound)."""
    end = driver.now
    queues = sorted({r.spec.queue for r in driver.records})
    weights = {
        q: (policy.queues[q].weight if policy is not None and q in policy.queues else 1.0)
        for q in queues
    }
    total_weight = sum(weights.values()) or 1.0
    total_gpu_seconds = sum(driver.queue_gpu_seconds.values()) or 1.0
    per_queue: dict[str, Any] = {}
    for queue in queues:
        records = [r for r in driver.records if r.spec.queue == queue and r.spec.arrival <= end]
        per_queue[queue or "(none)"] = {
            **_job_figures(records, end),
            "gpu_hours": round(driver.queue_gpu_seconds.get(queue, 0.0) / HOUR, 1),
            "share": round(driver.queue_gpu_seconds.get(queue, 0.0) / total_gpu_seconds, 3),
            "weight_share": round(weights[queue] / total_weight, 3),
            "preempted": sum(r.preempted for r in records),
        }
    arrived = [r for r in driver.records if r.spec.arrival <= end]
    capacity = driver.capacity_gpus * end or 1.0
    return {
        "label": label,
        "extender": driver.extender.name,
        "nodes": len(driver.nodes),
        "gpus": driver.capacity_gpus,
        "simulated_hours": round(end / HOUR, 2),
        "wall_seconds": round(driver.wall_seconds, 1),
        **_job_figures(arrived, end),
        "utilisation": round(driver.gpu_seconds / capacity, 3),
        "useful_utilisation": round(
            (driver.gpu_seconds - driver.incomplete_gpu_seconds) / capacity, 3
        ),
        "incomplete_gang_gpu_hours": round(driver.incomplete_gpu_seconds / HOUR, 1),
        "preemptions": driver.preemptions,
        "evicted_by_gangplank": driver.evictions_by_extender,
        "gpu_hours_lost": round(sum(r.gpu_seconds_lost for r in driver.records) / HOUR, 1),
        "never_started_reasons": _reasons(driver),
        "scheduling_cycles": driver.cycles,
        "extender_calls": dict(driver.extender_calls),
        "queues": per_queue,
        "series": {
            "t_h": [round(s.t / HOUR, 3) for s in driver.samples],
            "allocated": [s.allocated for s in driver.samples],
            "incomplete": [s.incomplete for s in driver.samples],
            "stranded": [s.stranded for s in driver.samples],
            "running": {
                q or "(none)": [s.running.get(q, 0) for s in driver.samples] for q in queues
            },
            "waiting": {
                q or "(none)": [s.waiting.get(q, 0) for s in driver.samples] for q in queues
            },
        },
    }


def _reasons(driver: Driver, top: int = 5) -> list[list[Any]]:
    """The commonest last reasons of jobs that never started (job names and amounts blurred
    into one), with how many jobs gave each."""
    counts: Counter[str] = Counter()
    for record in driver.records:
        if record.started is None and record.spec.arrival <= driver.now:
            reason = driver.reasons.get(record.spec.name, "no node had room")
            counts[re.sub(r"\d+", "N", reason)] += 1
    return [[reason, n] for reason, n in counts.most_common(top)]


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}"
    return f"{value:,}" if isinstance(value, int) else str(value)


SUMMARY_ROWS = (
    ("jobs", "jobs arrived"),
    ("started", "jobs started"),
    ("never_started", "jobs not started by the end"),
    ("wait_p50_h", "wait p50 (h)"),
    ("wait_p95_h", "wait p95 (h)"),
    ("gang_start_p50_h", "gang time-to-start p50 (h)"),
    ("gang_start_p95_h", "gang time-to-start p95 (h)"),
    ("utilisation", "GPU allocation"),
    ("useful_utilisation", "GPU allocation to jobs running whole"),
    ("incomplete_gang_gpu_hours", "GPU-hours held by incomplete gangs"),
    ("preemptions", "jobs preempted"),
    ("gpu_hours_lost", "GPU-hours of work preempted"),
)


def table(rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for n, row in enumerate(rows):
        cells = [row[0].ljust(widths[0])] + [
            c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)
        ]
        lines.append("  ".join(cells).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def summary(runs: Sequence[Mapping[str, Any]]) -> str:
    """The runs side by side, then each queue's waits and share."""
    first = runs[0]
    out = [
        f"{first['nodes']:,} nodes, {first['gpus']:,} GPUs, {first['jobs']:,} jobs, "
        f"{first['simulated_hours']} simulated hours"
    ]
    rows = [["", *(r["label"] for r in runs)]]
    rows += [[text, *(_fmt(r[key]) for r in runs)] for key, text in SUMMARY_ROWS]
    rows.append(["wall time (s)", *(_fmt(r["wall_seconds"]) for r in runs)])
    out.append(table(rows))
    why = [
        f"{run['label']}: {count} not started by the end: {reason[:200]}"
        for run in runs
        for reason, count in run.get("never_started_reasons", [])
    ]
    if why:
        out.append("\n".join(why))
    queues = sorted({q for r in runs for q in r["queues"]})
    if len(queues) > 1 or queues != ["(none)"]:
        rows = [["queue", *(f"{r['label']}: p50/p95 wait (h), share/weight" for r in runs)]]
        for queue in queues:
            cells = [queue]
            for r in runs:
                q = r["queues"].get(queue)
                cells.append(
                    "-"
                    if q is None
                    else f"{_fmt(q['wait_p50_h'])} / {_fmt(q['wait_p95_h'])}, "
                    f"{q['share']:.0%} / {q['weight_share']:.0%}"
                )
            rows.append(cells)
        out.append(table(rows))
    return "\n\n".join(out)


def differences(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    """What changes from run `a` to run `b`, one line each ("research p95 wait 4.1 h → 1.2 h")."""
    lines = []
    for queue, qa in a["queues"].items():
        qb = b["queues"].get(queue)
        if qb is None:
            continue
        for key, text in (("wait_p95_h", "p95 wait"), ("wait_p50_h", "p50 wait")):
            if qa[key] != qb[key]:
                lines.append(f"{queue} {text} {_fmt(qa[key])} h → {_fmt(qb[key])} h")
    for key, text in SUMMARY_ROWS[2:]:
        if a[key] != b[key]:
            lines.append(f"{text}: {_fmt(a[key])} → {_fmt(b[key])}")
    return [f"{b['label']} (against {a['label']}): {line}" for line in lines]


# ---- the HTML page ------------------------------------------------------------------------
def _png(figure: Any) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
    return base64.b64encode(buffer.getvalue()).decode()


def plots(runs: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """(title, base64 PNG) for each plot."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = []
    fig, axes = plt.subplots(1, len(runs), figsize=(5.5 * len(runs), 3.2), squeeze=False)
    for ax, run in zip(axes[0], runs, strict=True):
        s = run["series"]
        ax.plot(s["t_h"], s["allocated"], label="allocated")
        ax.plot(s["t_h"], s["incomplete"], label="held by incomplete gangs")
        ax.plot(s["t_h"], s["stranded"], label="stranded")
        ax.axhline(run["gpus"], color="grey", linewidth=0.8, linestyle=":")
        ax.set_title(run["label"])
        ax.set_xlabel("hours")
        ax.set_ylabel("GPUs")
        ax.legend(fontsize=7)
    out.append(("GPU allocation, GPUs held by incomplete gangs, stranded GPUs", _png(fig)))
    plt.close(fig)

    fig, axes = plt.subplots(1, len(runs), figsize=(5.5 * len(runs), 3.2), squeeze=False)
    for ax, run in zip(axes[0], runs, strict=True):
        s = run["series"]
        names = list(s["running"])
        if s["t_h"] and names:
            ax.stackplot(s["t_h"], *[s["running"][q] for q in names], labels=names)
        ax.set_title(run["label"])
        ax.set_xlabel("hours")
        ax.set_ylabel("GPUs running")
        ax.legend(fontsize=7, loc="upper left")
    out.append(("GPUs of running jobs by queue", _png(fig)))
    plt.close(fig)

    queues = sorted({q for r in runs for q in r["queues"]})
    width = 0.8 / len(runs)
    for key, title in (
        ("wait_p95_h", "Queue wait p95 (hours; p50 hatched)"),
        ("share", "Share of GPU-hours by queue (the bar) against its weight's share (the dot)"),
    ):
        fig, ax = plt.subplots(figsize=(max(5.0, 1.4 * len(queues) * len(runs)), 3.2))
        for i, run in enumerate(runs):
            xs = [n + i * width for n in range(len(queues))]
            values = [(run["queues"].get(q) or {}).get(key) or 0 for q in queues]
            ax.bar(xs, values, width, label=run["label"])
            if key == "wait_p95_h":
                p50 = [(run["queues"].get(q) or {}).get("wait_p50_h") or 0 for q in queues]
                ax.bar(xs, p50, width, fill=False, hatch="//")
            else:
                weights = [(run["queues"].get(q) or {}).get("weight_share") or 0 for q in queues]
                ax.plot(xs, weights, "ko", markersize=4)
        ax.set_xticks([n + width * (len(runs) - 1) / 2 for n in range(len(queues))], queues)
        ax.legend(fontsize=7)
        out.append((title, _png(fig)))
        plt.close(fig)

    fig, ax = plt.subplots(figsize=(5.5, 3.2))
    labels = [r["label"] for r in runs]
    ax.bar(labels, [r["preemptions"] for r in runs], label="jobs preempted")
    ax.bar(
        labels,
        [r["never_started"] for r in runs],
        bottom=[r["preemptions"] for r in runs],
        label="jobs not started by the end",
    )
    ax.legend(fontsize=7)
    out.append(("Jobs preempted and jobs not started by the end", _png(fig)))
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(5.5, 3.2))
    ax.bar(labels, [r["gang_start_p95_h"] or 0 for r in runs], label="p95")
    ax.bar(labels, [r["gang_start_p50_h"] or 0 for r in runs], label="p50")
    ax.set_ylabel("hours")
    ax.legend(fontsize=7)
    out.append(("Gang time-to-start (arrival to every member bound)", _png(fig)))
    plt.close(fig)
    return out


def write_html(
    runs: Sequence[Mapping[str, Any]], path: Path, title: str, notes: Sequence[str]
) -> None:
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>{html.escape(title)}</title>",
        "<style>body{font-family:sans-serif;max-width:1200px;margin:2em auto;color:#222}"
        "pre{background:#f6f6f6;padding:1em;overflow:auto}img{max-width:100%}</style>",
        f"</head><body><h1>{html.escape(title)}</h1>",
        "<h2>Summary</h2><pre>" + html.escape(summary(runs)) + "</pre>",
    ]
    if notes:
        parts.append("<ul>" + "".join(f"<li>{html.escape(n)}</li>" for n in notes) + "</ul>")
    for heading, png in plots(runs):
        parts.append(
            f"<h2>{html.escape(heading)}</h2><img alt='{html.escape(heading)}' "
            f"src='data:image/png;base64,{png}'>"
        )
    parts.append("</body></html>")
    path.write_text("\n".join(parts))


def write_json(runs: Sequence[Mapping[str, Any]], path: Path) -> None:
    path.write_text(json.dumps({"runs": list(runs)}, indent=1))
