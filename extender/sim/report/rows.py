"""Which figures the summary and the comparisons show, in their order, named as they read."""

from __future__ import annotations

from collections.abc import Sequence

from extender.sim.report.figures import Run

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
    ("allocated_at_end", "GPU allocation at the end"),
    ("allocated_at_first_no_room", "GPU allocation at first lack of room"),
    ("incomplete_gang_gpu_hours", "GPU-hours held by incomplete gangs"),
    ("preemptions", "jobs preempted"),
    ("gpu_hours_lost", "GPU-hours of work preempted"),
)

# Shown when the workload has faults or the policy lifecycle rules (`waste_figures`).
WASTE_ROWS = (
    ("jobs_completed", "jobs that ran their work to the end"),
    ("gpu_hours_not_ready", "GPU-hours held by jobs not ready"),
    ("gpu_hours_broken_gangs", "GPU-hours held by broken gangs"),
    ("gpu_hours_idle", "GPU-hours held by idle jobs"),
    ("gpu_hours_wasted", "GPU-hours held and not used (the three above)"),
    ("gpu_hours_freed", "GPU-hours freed by lifecycle evictions"),
    ("lifecycle_evictions", "jobs evicted by lifecycle rules"),
    ("jobs_held", "jobs held after their requeue limit"),
)

# Shown when a variant consolidates (`move_figures`).
MOVE_ROWS = (
    ("jobs_moved", "jobs moved to make room (consolidation)"),
    ("gpus_moved", "GPUs moved"),
    ("gpu_hours_lost_to_moves", "GPU-hours of work the moved jobs run again"),
    ("wait_8gpu_p50_h", "8-GPU job wait p50 (h)"),
    ("wait_8gpu_p95_h", "8-GPU job wait p95 (h)"),
)

# Shown when the workload has elastic jobs (`over_time.elastic_figures`).
ELASTIC_ROWS = (
    ("elastic_jobs", "elastic jobs"),
    ("elastic_workers_of_max", "elastic jobs' workers in use / their max (time-weighted)"),
    ("extras_started", "extra workers started"),
    ("extras_taken", "extra workers taken back"),
    ("elastic_stretch_p50", "elastic run time / its run at the max, p50"),
)

VARIANT_BARS = (
    ("preemptions", "jobs preempted"),
    ("never_started", "jobs not started by the end"),
    ("gang_start_p95_h", "gang time-to-start p95 (h)"),
)

# Meaningful only when no job leaves (FGD arrivals): how full the cluster got.
FILL_ROWS = frozenset({"allocated_at_end", "allocated_at_first_no_room"})


def summary_rows(runs: Sequence[Run]) -> list[tuple[str, str]]:
    """The rows that say something of these runs: how full the cluster got only when no job
    leaves (otherwise the end is a drain and gangs lack room at any allocation)."""
    fill = any(r.get("jobs_leave") is False for r in runs)
    rows = [(k, t) for k, t in SUMMARY_ROWS if fill or k not in FILL_ROWS]
    if any("gpu_hours_wasted" in r for r in runs):
        rows += WASTE_ROWS
    if any("jobs_moved" in r for r in runs):
        rows += MOVE_ROWS
    if any("elastic_jobs" in r for r in runs):
        rows += ELASTIC_ROWS
    return rows


QUEUE_ROWS = (
    ("wait_p50_h", "p50 wait (h)"),
    ("wait_p95_h", "p95 wait (h)"),
    ("share", "share of GPU-hours"),
)
