"""What changes over a run, period by period (`Options.period_seconds`: a day, four hours): each
queue's share of the GPU-time used against its fair share (its weight's), and elastic jobs'
workers against their maximum (`elastic.py`), as report.json keeps them; `over_time_tables.py`
writes them.

A queue's share in a period is the GPU-seconds its running jobs held in it over those of every
queue: with every queue saturated it shows what the fair order gave each, and whether a queue
that ran alone before is held back after (the policy's `fairness:`, docs/fairness.md).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from extender.sim.driver import Driver
from extender.sim.runs import JobRecord

HOUR = 3600.0


def elastic_figures(driver: Driver, elastic: Sequence[JobRecord]) -> dict[str, Any]:
    """The elastic jobs' workers over the whole run: worker-seconds over what their maximum
    would have run in the same time, extras started and taken back, and how much longer than
    at their maximum the finished ones ran."""
    most = sum(r.run_seconds * r.spec.pods for r in elastic)
    stretch = [r.run_seconds / r.spec.duration for r in elastic if r.ended and r.spec.duration]
    return {
        "elastic_jobs": len(elastic),
        "elastic_workers_of_max": round(sum(r.worker_seconds for r in elastic) / most, 3)
        if most
        else None,
        "extras_started": driver.extras_started,
        "extras_taken": driver.extras_taken,
        "elastic_stretch_p50": round(statistics.median(stretch), 2) if stretch else None,
        "elastic_detail": [
            {
                "job": r.spec.name,
                "queue": r.spec.queue,
                "min": r.spec.members,
                "max": r.spec.pods,
                "fewest": r.fewest,
                "most": r.most,
                "mean": round(r.worker_seconds / r.run_seconds, 2) if r.run_seconds else None,
                "ran_h": round(r.run_seconds / HOUR, 2),
            }
            for r in elastic
        ],
    }


def over_time_figures(driver: Driver, queues: Sequence[str]) -> dict[str, Any]:
    """Elastic jobs' figures (when the workload has any), and with periods kept each queue's
    GPU-hours and share of the GPU-time by period, and elastic jobs' workers by period."""
    end = driver.now
    elastic = [r for r in driver.records if r.spec.elastic and r.spec.arrival <= end]
    out: dict[str, Any] = elastic_figures(driver, elastic) if elastic else {}
    found = driver.periods
    if found is None:
        return out
    n = found.periods(end)
    used = {q: found.row(f"queue:{q}", n) for q in queues}
    totals = [sum(used[q][i] for q in queues) for i in range(n)]
    lengths = [min(found.seconds, end - i * found.seconds) or found.seconds for i in range(n)]
    by_period: dict[str, Any] = {
        "gpu_hours": {q or "(none)": [round(v / HOUR, 1) for v in used[q]] for q in queues},
        "share": {
            q or "(none)": [
                round(v / t, 3) if t else None for v, t in zip(used[q], totals, strict=True)
            ]
            for q in queues
        },
    }
    if elastic:
        workers, most = found.row("elastic workers", n), found.row("elastic most", n)
        by_period["elastic"] = {
            "jobs_running": [
                round(v / s, 2) for v, s in zip(found.row("elastic jobs", n), lengths, strict=True)
            ],
            "workers_of_max": [
                round(w / m, 3) if m else None for w, m in zip(workers, most, strict=True)
            ],
            "extras_started": [int(v) for v in found.row("extras started", n)],
            "extras_taken": [int(v) for v in found.row("extras taken", n)],
        }
    return {**out, "period_s": found.seconds, "by_period": by_period}
