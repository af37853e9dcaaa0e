"""What one run measured: every figure of it, as report.json keeps it (`figures`), and what jobs
with faults wasted and the lifecycle rules freed (`waste_figures`)."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from extender.core.queues.fair_order import fair_shares
from extender.core.queues.policy import Policy
from extender.sim.driver import Driver
from extender.sim.report.over_time import over_time_figures
from extender.sim.runs import WAIT_CAUSES, JobRecord
from extender.sim.workload_faults import FAULTS

HOUR = 3600.0

Run = Mapping[str, Any]


def _percentile(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _hours(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds / HOUR, 3)


def waited_by_cause(record: JobRecord, end: float) -> dict[str, float]:
    """Seconds `record` waited before its first start (or the end), by cause."""
    out = dict(record.waited)
    if record.started is None and record.cause and end > record.cause_since:
        out[record.cause] = out.get(record.cause, 0.0) + end - record.cause_since
    return out


def _job_figures(records: Sequence[JobRecord], end: float) -> dict[str, Any]:
    """Counts, waits, what the waits were for and gang time-to-start of `records` (jobs that
    arrived by `end`)."""
    waits = [(r.started if r.started is not None else end) - r.spec.arrival for r in records]
    gangs = [
        r.started - r.spec.arrival for r in records if r.spec.pods > 1 and r.started is not None
    ]
    causes: Counter[str] = Counter()
    for record in records:
        causes.update(waited_by_cause(record, end))
    return {
        "jobs": len(records),
        "started": sum(1 for r in records if r.started is not None),
        "never_started": sum(1 for r in records if r.started is None),
        "wait_p50_h": _hours(_percentile(waits, 0.5)),
        "wait_p95_h": _hours(_percentile(waits, 0.95)),
        "gang_start_p50_h": _hours(_percentile(gangs, 0.5)),
        "gang_start_p95_h": _hours(_percentile(gangs, 0.95)),
        "waited_h": round(sum(waits) / HOUR, 2),
        "wait_by_cause_h": {c: round(causes[c] / HOUR, 2) for c in WAIT_CAUSES if causes[c]},
    }


def targets(policy: Policy | None, queues: Sequence[str]) -> dict[str, float]:
    """Each queue's fair share of the cluster while all of `queues` have work: the policy's fair
    order (`fair_shares`: down the tree by weight among siblings); without a policy, equal."""
    if policy is None:
        return {q: 1.0 / len(queues) for q in queues} if queues else {}
    shares = fair_shares(policy, queues)
    return {q: shares.get(q, 0.0) for q in queues}


def figures(
    driver: Driver,
    label: str,
    policy: Policy | None = None,
    *,
    cluster: str = "",
    seed: int | None = None,
    moves: bool = False,
) -> dict[str, Any]:
    """Every figure of one run. Waits are from arrival to the job's first start; a job that
    never started counts with the wait it had when the run ended (a lower bound). `policy` gives
    the queues' fair shares (the baseline is measured against the policy it is compared with);
    `cluster` and `seed` say what ran; `moves`: with what consolidation moved (`move_figures`)."""
    end = driver.now
    queues = sorted({r.spec.queue for r in driver.records})
    fair = targets(policy, [q for q in queues if q])
    total_gpu_seconds = sum(driver.queue_gpu_seconds.values()) or 1.0
    per_queue: dict[str, Any] = {}
    for queue in queues:
        records = [r for r in driver.records if r.spec.queue == queue and r.spec.arrival <= end]
        per_queue[queue or "(none)"] = {
            **_job_figures(records, end),
            "gpu_hours": round(driver.queue_gpu_seconds.get(queue, 0.0) / HOUR, 1),
            "share": round(driver.queue_gpu_seconds.get(queue, 0.0) / total_gpu_seconds, 3),
            "fair_share": round(fair.get(queue, 1.0), 3),
            "preempted": sum(r.preempted for r in records),
        }
    arrived = [r for r in driver.records if r.spec.arrival <= end]
    capacity = driver.capacity_gpus * end or 1.0
    out = {
        "label": label,
        "seed": seed,
        "cluster": cluster,
        "policy": policy.source if policy is not None else None,
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
        "allocated_at_end": round(
            (driver.samples[-1].allocated if driver.samples else 0) / (driver.capacity_gpus or 1),
            3,
        ),
        "allocated_at_first_no_room": driver.allocated_at_first_no_room,
        "jobs_leave": any(math.isfinite(r.spec.duration) for r in driver.records),
        "incomplete_gang_gpu_hours": round(driver.incomplete_gpu_seconds / HOUR, 1),
        "preemptions": driver.preemptions,
        "evicted_by_gangplank": driver.evictions_by_extender,
        "gpu_hours_lost": round(sum(r.gpu_seconds_lost for r in driver.records) / HOUR, 1),
        "never_started_reasons": _reasons(driver),
        "scheduling_cycles": driver.cycles,
        "extender_calls": dict(driver.extender_calls),
        "queues": per_queue,
        "series": {
            "t_s": [round(s.t, 1) for s in driver.samples],
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
    out.update(over_time_figures(driver, queues))  # elastic jobs, figures by period
    if driver.watching:  # jobs with faults, or lifecycle rules: what was wasted and freed
        out.update(waste_figures(driver, arrived))
    if moves:
        out.update(move_figures(driver, arrived, end))
    return out


def move_figures(driver: Driver, arrived: Sequence[JobRecord], end: float) -> dict[str, Any]:
    """What consolidation moved (`sim/moves.py`), what the moved jobs had run (their work
    restarts), and the waits of the jobs of 8 GPUs, which scattered free GPUs keep waiting."""
    eight = [
        (r.started if r.started is not None else end) - r.spec.arrival
        for r in arrived
        if r.spec.total_gpus == 8
    ]
    return {
        "consolidation": driver.options.consolidate,
        "jobs_moved": driver.jobs_moved,
        "gpus_moved": driver.gpus_moved,
        "gpu_hours_lost_to_moves": round(driver.move_lost_seconds / HOUR, 1),
        "jobs_8gpu": len(eight),
        "wait_8gpu_p50_h": _hours(_percentile(eight, 0.5)),
        "wait_8gpu_p95_h": _hours(_percentile(eight, 0.95)),
    }


def waste_figures(driver: Driver, arrived: Sequence[JobRecord]) -> dict[str, Any]:
    """The jobs with faults, how jobs ended, the GPU-hours each kind of waste held (`Run.wasting`),
    and what gangplank's lifecycle rules evicted and freed (the GPU-hours the jobs evicted would
    have gone on holding)."""
    faults = Counter(r.spec.fault for r in driver.records if r.spec.fault)
    ends = Counter(r.outcome or "not ended" for r in arrived)
    waste = driver.waste_seconds
    freed = driver.freed_seconds()
    evicted = driver.lifecycle_evictions
    held = [
        r for r in arrived if r.ended is None and " is held: " in driver.reasons.get(r.alias, "")
    ]
    return {
        "faults": {f: faults[f] for f in FAULTS if faults[f]},
        "jobs_completed": ends["completed"],
        "jobs_by_end": dict(sorted(ends.items())),
        "gpu_hours_not_ready": round(waste.get("not-ready", 0.0) / HOUR, 1),
        "gpu_hours_broken_gangs": round(waste.get("broken", 0.0) / HOUR, 1),
        "gpu_hours_idle": round(waste.get("idle", 0.0) / HOUR, 1),
        "gpu_hours_wasted": round(sum(waste.values()) / HOUR, 1),
        "gpu_hours_freed": round(sum(freed.values()) / HOUR, 1),
        "gpu_hours_freed_by_rule": {r: round(freed[r] / HOUR, 1) for r in sorted(freed)},
        "lifecycle_evictions": sum(evicted.values()),
        "lifecycle_evictions_by_rule": {r: evicted[r] for r in sorted(evicted)},
        "jobs_requeued": sum(1 for r in arrived if r.requeued),
        "jobs_held": len(held),
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
