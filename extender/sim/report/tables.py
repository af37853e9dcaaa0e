"""The terminal summary: the variants side by side, why jobs never started, what the lifecycle
rules evicted, each queue against its fair share, what the waiting was for."""

from __future__ import annotations

from collections.abc import Sequence

from extender.core.model.text import shorten
from extender.sim.report.cells import (
    NOT_MODELLED,
    REASON_WIDTH,
    by_variant,
    cause_hours,
    fmt,
    pct,
    spread_text,
    table,
)
from extender.sim.report.figures import Run
from extender.sim.report.over_time_tables import elastic_table, share_table
from extender.sim.report.rows import QUEUE_ROWS, summary_rows
from extender.sim.report.verdicts import nothing_started, nothing_started_line
from extender.sim.runs import WAIT_CAUSES
from extender.sim.workload_faults import FAULTS


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
    rows.append([wall, *(fmt(sum(r["wall_seconds"] for r in g)) for g in groups)])
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
        + shorten(reason, REASON_WIDTH)
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
    out += [t for t in (share_table(groups, queues), elastic_table(groups)) if t]
    out.append(wait_causes(groups, queues))
    return "\n\n".join(out)


def _cell(group: Sequence[Run], key: str) -> str:
    """A figure of a variant over its seeds; NOT_MODELLED when its runs have no such figure
    (waste is followed only where there are faults or lifecycle rules)."""
    if not any(key in r for r in group):
        return NOT_MODELLED
    return spread_text([r.get(key) for r in group])


def fault_line(group: Sequence[Run]) -> str:
    """The workload's jobs with faults, by fault (over seeds: the median and range)."""
    found = [f for f in FAULTS if any(f in (r.get("faults") or {}) for r in group)]
    return "with faults: " + ", ".join(
        spread_text([(r.get("faults") or {}).get(f, 0) for r in group])
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
        f"{rule} {n} ({fmt(freed.get(rule, 0.0))} GPU-hours freed)" for rule, n in evicted.items()
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
                text += f" (fair {pct(fair)})"
            cells = [queue if n == 0 else "", text]
            for qs in found:
                form = pct if key == "share" else fmt
                cell = spread_text([q[key] for q in qs], form) if qs else "-"
                if key == "share" and qs and qs[0]["fair_share"] != fair:
                    cell += f" (fair {pct(qs[0]['fair_share'])})"
                cells.append(cell)
            rows.append(cells)
    return table(rows, left=(0, 1))


def _seed_note(run: Run, seeds: int) -> str:
    return f" (seed {run['seed']})" if seeds > 1 else ""


def wait_causes(groups: Sequence[Sequence[Run]], queues: Sequence[str]) -> str:
    """What the jobs of each queue waited for: job-hours of waiting by cause, as shares."""
    lines = ["what the waiting was for (share of the job-hours waited):"]
    for cause, text in WAIT_CAUSES.items():
        lines.append(f"  {cause}: {text}")
    rows = [["queue", *(f"{g[0]['label']}: job-hours waited" for g in groups)]]
    for queue in [*queues, None]:
        cells = ["all queues" if queue is None else queue]
        for g in groups:
            by_cause, waited = cause_hours(g, queue)
            total = sum(by_cause.values())
            parts = [
                f"{c} {v / total:.0%}"
                for c, v in sorted(by_cause.items(), key=lambda kv: -kv[1])
                if total and v / total >= 0.005
            ]
            cells.append(f"{fmt(round(waited, 1))}: {', '.join(parts)}" if parts else fmt(waited))
        rows.append(cells)
    lines.append(table(rows, left=range(len(rows[0]))))
    return "\n".join(lines)
