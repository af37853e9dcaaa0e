"""What a simulation shows: figures (JSON), a terminal summary, side-by-side comparisons over
seeds and an HTML page of plots (matplotlib, imported only when a page is written).

A run is one variant (a label: a cluster, a policy, gangplank or kube-scheduler alone) on the
workload of one seed. Functions here take a flat list of runs and group them by label, in the
order given; with several seeds a figure shows as the median and the range over seeds, and a
difference between two variants is counted seed by seed (the same workload on both).
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
import re
import statistics
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from textwrap import shorten
from typing import Any

from extender.core.queues.fair_order import fair_shares
from extender.core.queues.policy import Policy
from extender.sim.driver import WAIT_CAUSES, Driver, JobRecord
from extender.sim.workload import FAULTS

HOUR = 3600.0
NOT_MODELLED = "—"  # a figure a run does not have (the baseline's waste without faults)
REASON_WIDTH = 200  # characters of a reason shown in the summary, cut between words
CHARTS_MISSING = "matplotlib is not installed (pip install 'gangplank[sim]' for them)"
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
        r.started - r.spec.arrival for r in records if r.spec.members > 1 and r.started is not None
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
) -> dict[str, Any]:
    """Every figure of one run. Waits are from arrival to the job's first start; a job that
    never started counts with the wait it had when the run ended (a lower bound). `policy` gives
    the queues' fair shares (the baseline is measured against the policy it is compared with);
    `cluster` and `seed` say what ran."""
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
    if driver.watching:  # jobs with faults, or lifecycle rules: what was wasted and freed
        out.update(waste_figures(driver, arrived))
    return out


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


# ---- runs over seeds ----------------------------------------------------------------------
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


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e15:
            return f"{int(value):,}"
        return f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}"
    return f"{value:,}" if isinstance(value, int) else str(value)


def _spread_text(values: Sequence[float | None], fmt: Callable[[Any], str] = _fmt) -> str:
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


def _cell(group: Sequence[Run], key: str) -> str:
    """A figure of a variant over its seeds; NOT_MODELLED when its runs have no such figure
    (waste is followed only where there are faults or lifecycle rules)."""
    if not any(key in r for r in group):
        return NOT_MODELLED
    return _spread_text([r.get(key) for r in group])


def _pct(value: Any) -> str:
    return "-" if value is None else f"{value:.0%}"


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
    return rows


QUEUE_ROWS = (
    ("wait_p50_h", "p50 wait (h)"),
    ("wait_p95_h", "p95 wait (h)"),
    ("share", "share of GPU-hours"),
)


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


def describe(group: Sequence[Run]) -> str:
    """What a variant ran: its cluster, its scheduler and policy, its seeds."""
    run = group[0]
    where = f"{run['cluster']}: " if run.get("cluster") else ""
    policy = run.get("policy")
    who = run["extender"] + (f" with {policy}" if policy and run["extender"] == "gangplank" else "")
    if run["extender"] == "gangplank" and not policy:
        who += " without a policy"
    seeds = [int(r["seed"]) for r in group if r.get("seed") is not None]
    seeded = f", seed{'s' if len(seeds) > 1 else ''} {_seed_list(seeds)}" if seeds else ""
    return f"{run['label']}: {where}{run['nodes']:,} nodes, {run['gpus']:,} GPUs; {who}{seeded}"


def _seed_list(seeds: Sequence[int]) -> str:
    if len(seeds) > 2 and seeds == list(range(seeds[0], seeds[0] + len(seeds))):
        return f"{seeds[0]}-{seeds[-1]}"
    return ", ".join(str(s) for s in seeds)


def summary(runs: Sequence[Run]) -> str:
    """The variants side by side (over seeds: median and range), then each queue's waits and
    share against its fair share, then what each queue's jobs waited for."""
    groups = by_variant(runs)
    first = groups[0][0]
    seeds = len(groups[0])
    over = f" (median and range over {seeds} seeds)" if seeds > 1 else ""
    out = [
        f"{first['jobs']:,} jobs, {first['simulated_hours']} simulated hours{over}",
        "\n".join(describe(g) for g in groups),
    ]
    if first.get("faults"):
        out[0] += "; " + fault_line(groups[0])
    warnings = [nothing_started_line(g) for g in groups if nothing_started(g)]
    if warnings:
        out.insert(1, "\n".join(warnings))
    rows = [["", *(g[0]["label"] for g in groups)]]
    rows += [[text, *(_cell(g, key) for g in groups)] for key, text in summary_rows(runs)]
    wall = "wall time (s)" + (", all seeds" if seeds > 1 else "")
    rows.append([wall, *(_fmt(sum(r["wall_seconds"] for r in g)) for g in groups)])
    out.append(table(rows))
    unmodelled = [
        g[0]["label"]
        for g in groups
        if any(any(key not in r for r in g) for key, _ in summary_rows(runs))
    ]
    if unmodelled:
        out[-1] += (
            f"\n{NOT_MODELLED}: not modelled in {', '.join(unmodelled)}: its workload has no "
            "faults and it has no lifecycle rules, so what its jobs held was not followed as waste"
        )
    why = [
        f"{g[0]['label']}{_seed_note(g[0], seeds)}: {count} not started by the end: "
        + shorten(reason, REASON_WIDTH, placeholder=" …")
        for g in groups
        for reason, count in g[0].get("never_started_reasons", [])
    ]
    if why:
        out.append("\n".join(why))
    rules = [line for g in groups if (line := rule_line(g, seeds))]
    if rules:
        out.append("\n".join(rules))
    queues = sorted({q for g in groups for r in g for q in r["queues"]})
    if len(queues) > 1 or queues != ["(none)"]:
        out.append(queue_table(groups, queues))
    out.append(wait_causes(groups, queues))
    return "\n\n".join(out)


def nothing_started(group: Sequence[Run]) -> bool:
    """Whether not one job of the variant started, in any seed: its figures say nothing (a
    policy whose queues the workload does not use, every queue closed)."""
    return all(r["jobs"] and not r["started"] for r in group)


def nothing_started_line(group: Sequence[Run]) -> str:
    """What to say, loudly, of a variant in which nothing started."""
    run = group[0]
    seeds = " in any seed" if len(group) > 1 else ""
    reasons = run.get("never_started_reasons") or []
    why = (
        f" (the commonest reason: {shorten(reasons[0][0], REASON_WIDTH, placeholder=' …')})"
        if reasons
        else ""
    )
    return (
        f"NOTHING STARTED in {run['label']}: not one of its {run['jobs']:,} jobs started{seeds}"
        f"{why}: its figures say nothing, and no verdict is drawn from it"
    )


def verdicts(first: Sequence[Run], other: Sequence[Run]) -> tuple[list[dict[str, Any]], str]:
    """The differences from variant `first` to `other` (`differences`), or none and the line
    saying why when nothing started in either."""
    empty = [g[0]["label"] for g in (first, other) if nothing_started(g)]
    if empty:
        line = (
            f"{other[0]['label']} against {first[0]['label']}: no verdict: nothing started in "
            + " and ".join(empty)
        )
        return [], line
    return differences(first, other), ""


def fault_line(group: Sequence[Run]) -> str:
    """The workload's jobs with faults, by fault (over seeds: the median and range)."""
    found = [f for f in FAULTS if any(f in (r.get("faults") or {}) for r in group)]
    return "with faults: " + ", ".join(
        _spread_text([(r.get("faults") or {}).get(f, 0) for r in group])
        + f" {f}{' gangs' if f == 'node-loss' else ''}"
        for f in found
    )


def rule_line(group: Sequence[Run], seeds: int) -> str:
    """What the lifecycle rules evicted and freed in a variant (its first seed's), by rule."""
    run = group[0]
    evicted = run.get("lifecycle_evictions_by_rule") or {}
    if not evicted:
        return ""
    freed = run.get("gpu_hours_freed_by_rule") or {}
    parts = [
        f"{rule} {n} ({_fmt(freed.get(rule, 0.0))} GPU-hours freed)" for rule, n in evicted.items()
    ]
    return f"{run['label']}{_seed_note(run, seeds)}: evicted by lifecycle rules: {', '.join(parts)}"


def queue_table(groups: Sequence[Sequence[Run]], queues: Sequence[str]) -> str:
    """Each queue's waits, and its share of GPU-hours against its fair share."""
    rows = [["queue", "", *(g[0]["label"] for g in groups)]]
    for queue in queues:
        found = [[r["queues"][queue] for r in g if queue in r["queues"]] for g in groups]
        fair = next((qs[0]["fair_share"] for qs in found if qs), None)
        for n, (key, text) in enumerate(QUEUE_ROWS):
            if key == "share":
                text += f" (fair {_pct(fair)})"
            cells = [queue if n == 0 else "", text]
            for qs in found:
                fmt = _pct if key == "share" else _fmt
                cell = _spread_text([q[key] for q in qs], fmt) if qs else "-"
                if key == "share" and qs and qs[0]["fair_share"] != fair:
                    cell += f" (fair {_pct(qs[0]['fair_share'])})"
                cells.append(cell)
            rows.append(cells)
    return table(rows, left=(0, 1))


def _seed_note(run: Run, seeds: int) -> str:
    return f" (seed {run['seed']})" if seeds > 1 else ""


def _cause_hours(group: Sequence[Run], queue: str | None) -> tuple[dict[str, float], float]:
    """Median job-hours waited per cause over the group's seeds, and the median total."""
    scopes = [r if queue is None else r["queues"].get(queue) for r in group]
    found = [s for s in scopes if s is not None]
    by_cause = {
        c: statistics.median([s["wait_by_cause_h"].get(c, 0.0) for s in found]) for c in WAIT_CAUSES
    }
    return by_cause, statistics.median([s["waited_h"] for s in found]) if found else 0.0


def wait_causes(groups: Sequence[Sequence[Run]], queues: Sequence[str]) -> str:
    """What the jobs of each queue waited for: job-hours of waiting by cause, as shares."""
    lines = ["what the waiting was for (share of the job-hours waited):"]
    for cause, text in WAIT_CAUSES.items():
        lines.append(f"  {cause}: {text}")
    rows = [["queue", *(f"{g[0]['label']}: job-hours waited" for g in groups)]]
    for queue in [*queues, None]:
        cells = ["all queues" if queue is None else queue]
        for g in groups:
            by_cause, waited = _cause_hours(g, queue)
            total = sum(by_cause.values())
            parts = [
                f"{c} {v / total:.0%}"
                for c, v in sorted(by_cause.items(), key=lambda kv: -kv[1])
                if total and v / total >= 0.005
            ]
            cells.append(f"{_fmt(round(waited, 1))}: {', '.join(parts)}" if parts else _fmt(waited))
        rows.append(cells)
    lines.append(table(rows, left=range(len(rows[0]))))
    return "\n".join(lines)


def _values(group: Sequence[Run], key: str, queue: str | None) -> dict[Any, float | None]:
    out: dict[Any, float | None] = {}
    for run in group:
        scope = run if queue is None else run["queues"].get(queue)
        out[run.get("seed")] = None if scope is None else scope.get(key)
    return out


def differences(a: Sequence[Run], b: Sequence[Run]) -> list[dict[str, Any]]:
    """What changes from variant `a` to variant `b` (each one run per seed), seed by seed: each
    figure that differs, with its medians, the change per seed, and whether the change goes the
    same way in every seed or is within noise (up in some seeds, down in others). Those that go
    one way come first."""
    queues = [q for q in a[0]["queues"] if q in b[0]["queues"]]
    asked = [(q, key, f"{q} {text}") for q in queues for key, text in QUEUE_ROWS]
    asked += [(None, key, text) for key, text in summary_rows([*a, *b])[2:]]
    out = []
    for queue, key, what in asked:
        va, vb = _values(a, key, queue), _values(b, key, queue)
        seeds = [s for s in va if s in vb and va[s] is not None and vb[s] is not None]
        pairs = [(float(va[s] or 0), float(vb[s] or 0)) for s in seeds]
        if not pairs or all(x == y for x, y in pairs):
            continue
        change = [y - x for x, y in pairs]
        up, down = sum(c > 0 for c in change), sum(c < 0 for c in change)
        if len(pairs) == 1:
            verdict = "one seed: noise unknown"
        elif up == len(pairs) or down == len(pairs):
            verdict = f"{'up' if up else 'down'} in every seed"
        else:
            same = len(pairs) - up - down
            verdict = (
                "within noise ("
                + ", ".join(
                    f"{word} in {n}"
                    for word, n in (("up", up), ("down", down), ("unchanged", same))
                    if n
                )
                + f" of {len(pairs)} seeds)"
            )
        out.append(
            {
                "variant": b[0]["label"],
                "against": a[0]["label"],
                "queue": queue,
                "figure": key,
                "what": what,
                "seeds": seeds,
                "a": [x for x, _ in pairs],
                "b": [y for _, y in pairs],
                "change": change,
                "verdict": verdict,
            }
        )
    out.sort(key=lambda d: d["verdict"].startswith("within noise"))
    return out


def difference_table(found: Sequence[Mapping[str, Any]]) -> str:
    """The differences of each variant against the one it is compared with, a table each: the
    figure, its median in both, the change per seed (median, lowest to highest), the verdict."""
    out = []
    pairs = list(dict.fromkeys((d["variant"], d["against"]) for d in found))
    for variant, against in pairs:
        rows = [d for d in found if (d["variant"], d["against"]) == (variant, against)]
        seeds = len(rows[0]["a"])
        lines = [
            [
                "",
                against,
                variant,
                "change" if seeds == 1 else f"change per seed ({seeds} seeds)",
                "",
            ]
        ]
        for d in rows:
            change = spread(d["change"])
            assert change is not None
            share = d["figure"] == "share"  # shown in percent, changes in percentage points
            fmt, signed = (_pct, _points) if share else (_fmt, _signed)
            median, low, high = change
            moved = (
                signed(median)
                if seeds == 1
                else f"{signed(median)} ({signed(low)} to {signed(high)})"
            )
            lines.append(
                [
                    d["what"],
                    fmt(statistics.median(d["a"])),
                    fmt(statistics.median(d["b"])),
                    moved,
                    d["verdict"],
                ]
            )
        head = f"{variant} against {against}" + (
            f" (medians of {seeds} seeds)"
            if seeds > 1
            else " (one seed: --seeds 3 or more to tell a difference from noise)"
        )
        out.append(head + ":\n" + table(lines, left=(0, 4)))
    return "\n\n".join(out)


def _points(value: float) -> str:
    return f"{value * 100:+.1f} pp" if value else "0"


def _signed(value: float) -> str:
    return ("+" if value > 0 else "") + _fmt(round(value, 4))


# ---- the HTML page ------------------------------------------------------------------------
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


def plots(runs: Sequence[Run]) -> list[tuple[str, str]]:
    """(title, base64 PNG) for each plot. Time series show each variant's first seed; bars the
    median over seeds, with the range as a line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"font.size": 10, "axes.titlesize": 11, "legend.fontsize": 9})
    groups = by_variant(runs)
    colour = colours(groups)
    firsts = [g[0] for g in groups]
    unit, per = time_unit(firsts)
    seeded = f" (seed {firsts[0]['seed']})" if len(groups[0]) > 1 else ""
    out = []

    def times(run: Run) -> list[float]:
        return [t / per for t in run["series"]["t_s"]]

    fig, axes = plt.subplots(3, 1, figsize=(11, 7.5), sharex=True)
    for ax, key, title in (
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
        ax.set_title(title, loc="left")
        ax.set_ylabel("GPUs")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    axes[0].legend(loc="lower right")
    axes[-1].set_xlabel(unit)
    fig.tight_layout()
    out.append((f"GPUs over time{seeded}", _png(fig)))
    plt.close(fig)

    queues = sorted({q for r in firsts for q in r["series"]["running"]})
    for key, title, ylabel in (
        ("waiting", "Jobs waiting, by queue", "jobs"),
        ("running", "GPUs of running jobs, by queue", "GPUs"),
    ):
        cols = min(2, len(queues)) or 1
        rows = -(-len(queues) // cols) or 1
        fig, axes = plt.subplots(
            rows, cols, figsize=(11, 2.6 * rows + 0.6), sharex=True, squeeze=False
        )
        for ax, queue in zip(axes.flat, queues, strict=False):
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
            ax.set_title(queue, loc="left")
            ax.set_ylabel(ylabel)
            ax.set_ylim(bottom=0)
            ax.grid(alpha=0.3)
        for ax in axes.flat[len(queues) :]:
            ax.set_visible(False)
        for ax in axes[-1]:
            ax.set_xlabel(unit)
        axes.flat[0].legend(loc="upper left")
        fig.tight_layout()
        out.append((f"{title}{seeded}", _png(fig)))
        plt.close(fig)

    queues = sorted({q for r in runs for q in r["queues"]})
    over = " (bars: median over seeds; lines: the range)" if len(groups[0]) > 1 else ""
    out.append(
        (
            f"Queue waits, p95 (hours; p50 hatched){over}",
            _bars(plt, groups, colour, queues, "wait_p95_h", "hours", hatched="wait_p50_h"),
        )
    )
    out.append(
        (
            f"Share of GPU-hours by queue against its fair share (black: the fair share){over}",
            _bars(plt, groups, colour, queues, "share", "share of GPU-hours", target="fair_share"),
        )
    )
    out.append(
        (
            f"What the jobs of each queue waited for (job-hours; medians){over}",
            _causes(plt, groups, colour, queues),
        )
    )

    fig, axes = plt.subplots(1, 3, figsize=(11, 3.2))
    labels = [g[0]["label"] for g in groups]
    for ax, (key, title) in zip(axes, VARIANT_BARS, strict=True):
        found = [spread([r[key] for r in g]) or (0.0, 0.0, 0.0) for g in groups]
        ax.bar(labels, [f[0] for f in found], color=[colour[x] for x in labels])
        if len(groups[0]) > 1:
            ax.vlines(labels, [f[1] for f in found], [f[2] for f in found], color="black")
        ax.set_title(title, loc="left")
        ax.tick_params(axis="x", labelrotation=15)
        ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    out.append((f"Preemptions, jobs not started, gang time-to-start{over}", _png(fig)))
    plt.close(fig)
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
) -> str:
    fig, ax = plt.subplots(figsize=(11, 3.6))
    width = 0.8 / len(groups)
    for i, group in enumerate(groups):
        label = group[0]["label"]
        xs = [n + (i - (len(groups) - 1) / 2) * width for n in range(len(queues))]
        found = [spread([(r["queues"].get(q) or {}).get(key) for r in group]) for q in queues]
        ax.bar(xs, [f[0] if f else 0 for f in found], width, color=colour[label], label=label)
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
    ax.set_ylabel(ylabel)
    ax.grid(axis="y", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    png = _png(fig)
    plt.close(fig)
    return png


def _causes(
    plt: Any, groups: Sequence[Sequence[Run]], colour: Mapping[str, str], queues: Sequence[str]
) -> str:
    rows = [(q, g) for q in queues for g in groups]
    fig, ax = plt.subplots(figsize=(11, 0.45 * len(rows) + 1.2))
    ys = list(range(len(rows)))[::-1]
    for cause in WAIT_CAUSES:
        lefts = []
        widths = []
        for queue, group in rows:
            by_cause, _ = _cause_hours(group, queue)
            lefts.append(
                sum(
                    v
                    for c, v in by_cause.items()
                    if list(WAIT_CAUSES).index(c) < list(WAIT_CAUSES).index(cause)
                )
            )
            widths.append(by_cause[cause])
        ax.barh(ys, widths, left=lefts, color=CAUSE_COLOURS[cause], label=cause, height=0.7)
    ax.set_yticks(ys, [f"{q} — {g[0]['label']}" for q, g in rows])
    for tick, (_, group) in zip(ax.get_yticklabels(), rows, strict=True):
        tick.set_color(colour[group[0]["label"]])
    ax.set_xlabel("job-hours waited")
    ax.grid(axis="x", alpha=0.3)
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncols=len(WAIT_CAUSES), frameon=False)
    fig.tight_layout()
    png = _png(fig)
    plt.close(fig)
    return png


def write_html(runs: Sequence[Run], path: Path, title: str, notes: Sequence[str]) -> bool:
    """The page: the variants, what changes, the charts, every figure. Without matplotlib (a
    plain install, no `sim` extra) the page has no charts and says so; returns whether it has
    them."""
    groups = by_variant(runs)
    colour = colours(groups)
    text = summary(runs)
    swatches = "".join(
        f"<li><span style='display:inline-block;width:1em;height:1em;background:"
        f"{colour[g[0]['label']]};margin-right:.5em;vertical-align:middle'></span>"
        f"{html.escape(describe(g))}</li>"
        for g in groups
    )
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>{html.escape(title)}</title>",
        "<style>body{font-family:sans-serif;max-width:1150px;margin:1.5em auto;color:#222;"
        "font-size:15px}pre{background:#f6f6f6;padding:1em;overflow:auto;font-size:13px}"
        "img{max-width:100%}ul{padding-left:1.2em}"
        ".warning{background:#fde2e1;border-left:5px solid #c62828;padding:.6em 1em;"
        "font-weight:bold}</style>",
        f"</head><body><h1>{html.escape(title)}</h1>",
        f"<p>{html.escape(text.split(chr(10), 1)[0])}</p><ul>{swatches}</ul>",
        *(
            f"<p class='warning'>{html.escape(nothing_started_line(g))}</p>"
            for g in groups
            if nothing_started(g)
        ),
    ]
    if notes:
        parts.append(
            "<h2>What changes</h2>" + "".join(f"<pre>{html.escape(n)}</pre>" for n in notes)
        )
    try:
        charts = plots(runs)
    except ModuleNotFoundError as err:
        if err.name != "matplotlib":
            raise
        charts = None
        parts.append(f"<p class='note'>No charts: {html.escape(CHARTS_MISSING)}.</p>")
    for heading, png in charts or ():
        parts.append(
            f"<h2>{html.escape(heading)}</h2><img alt='{html.escape(heading)}' "
            f"src='data:image/png;base64,{png}'>"
        )
    parts.append("<h2>Every figure</h2><pre>" + html.escape(text) + "</pre>")
    parts.append("</body></html>")
    path.write_text("\n".join(parts))
    return charts is not None


def write_json(
    runs: Sequence[Run], path: Path, differences: Sequence[Mapping[str, Any]] = ()
) -> None:
    path.write_text(json.dumps({"runs": list(runs), "differences": list(differences)}, indent=1))
