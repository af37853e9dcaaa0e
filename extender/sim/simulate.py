"""`gangplank simulate`: replay a workload on a simulated cluster, with gangplank and without.

    gangplank simulate --cluster synthetic:64x8 --jobs 2000 --policy policies/example.yaml
    gangplank simulate --cluster ../shared/traces --jobs 50000 --hours 24
    gangplank simulate --policy p.yaml --compare label=today "nodes=+16,label=+16 nodes"
    gangplank simulate --cluster nodes.yaml --workload pods.csv --arrivals fgd
    gangplank simulate --policy policies/lifecycle.yaml --never-ready 0.05 --crash 0.02
        --node-loss 0.05 --idle 0.1 --compare label=without,lifecycle=off label=with

Output: a summary on the terminal, and in --out (default ./simulation) report.json (every
figure of every run, the differences between variants) and report.html (plots). A what-if runs
each variant on the workloads of several seeds (--seeds) and says, for each difference, whether
it goes the same way in every seed or is within noise.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import os
import sys
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from extender.cli.args import unwritable_out
from extender.core.queues.fairness import DEFAULT_WINDOW, Fairness
from extender.core.queues.lifecycle import format_duration
from extender.core.queues.policy import Policy
from extender.core.queues.policy_parse import PolicyError
from extender.policy.file import load_policy
from extender.sim.arrivals import arrival_queues, replay_note, workload
from extender.sim.baseline import Baseline
from extender.sim.calls import Extender
from extender.sim.cluster import ClusterError, load_cluster
from extender.sim.driver import Driver, Options
from extender.sim.inprocess import InProcess
from extender.sim.progress import run_progress, runs_progress
from extender.sim.report.figures import figures
from extender.sim.report.page import CHARTS_MISSING, write_html, write_json
from extender.sim.report.tables import summary
from extender.sim.report.verdicts import difference_table, verdicts
from extender.sim.simulate_args import COMPARE_SEEDS, Variant, parse_variant
from extender.sim.workload import JobSpec


def without_lifecycle(policy: Policy) -> Policy:
    """`policy` with no `lifecycle:` rules, at the top level or in any queue."""
    queues = {n: dataclasses.replace(q, lifecycle=None) for n, q in policy.queues.items()}
    return dataclasses.replace(
        policy, queues=queues, lifecycle=None, source=f"{policy.source} (lifecycle: off)"
    )


def with_half_life(policy: Policy, half_life: float) -> Policy:
    """`policy` with `fairness: {halfLife: half_life}` (its window at least 7d; 0: no usage
    history)."""
    if not half_life:
        return dataclasses.replace(
            policy, fairness=Fairness(), source=f"{policy.source} (no usage history)"
        )
    fairness = Fairness(half_life, max(policy.fairness.window, DEFAULT_WINDOW, half_life))
    return dataclasses.replace(
        policy,
        fairness=fairness,
        source=f"{policy.source} (fairness: halfLife {format_duration(half_life)})",
    )


def _grow(nodes: list[dict[str, Any]], count: int) -> list[dict[str, Any]]:
    if not count or not nodes:
        return nodes
    out = list(nodes)
    for i in range(count):
        extra = copy.deepcopy(nodes[-1])
        name = f"added-{i:04d}"
        extra["metadata"]["name"] = name
        extra["metadata"]["labels"]["kubernetes.io/hostname"] = name
        out.append(extra)
    return out


@dataclass(frozen=True)
class Task:
    """One run: a variant on the workload of one seed."""

    variant: Variant
    seed: int
    jobs: Sequence[JobSpec]
    reference: str | None  # the policy whose fair shares the figures compare against
    moves: bool = False  # a variant consolidates: every run reports moves and 8-GPU waits


def run_variant(task: Task, args: argparse.Namespace, quiet: bool) -> dict[str, Any]:
    variant, jobs = task.variant, task.jobs
    nodes = _grow(load_cluster(variant.cluster), variant.add_nodes)
    policy = load_policy(variant.policy) if variant.policy else None
    if policy is not None and not variant.lifecycle:
        policy = without_lifecycle(policy)
    if policy is not None and variant.half_life is not None:
        policy = with_half_life(policy, variant.half_life)
    extender: Extender = Baseline() if variant.baseline else InProcess(policy)
    horizon = max((j.arrival for j in jobs), default=0.0)
    label = variant.label if args.seeds == 1 else f"{variant.label}, seed {task.seed}"
    update, close = run_progress(horizon, label, quiet)
    driver = Driver(
        nodes,
        jobs,
        extender,
        Options(
            kick_seconds=args.kick_seconds,
            seed=task.seed,
            cycle_seconds=args.cycle_ms / 1000,
            # work a free cluster would have finished: the longest job (an elastic one at its
            # minimum), after the last arrival
            drain_seconds=max((j.duration * j.pods / j.members for j in jobs), default=0.0),
            progress_every=36.0,  # the bar shows hundredths of an hour
            stuck_factor=args.stuck_factor,
            consolidate=variant.consolidate and not variant.baseline,
            period_seconds=args.period or 0.0,
        ),
        progress=update,
    )
    try:
        driver.run()
    finally:
        close()
    ran = policy.source if policy is not None else None
    if policy is None and task.reference:  # its fair shares, measured against the one compared
        policy = load_policy(task.reference)
    cluster = variant.cluster + (f" +{variant.add_nodes} nodes" if variant.add_nodes else "")
    out = figures(driver, variant.label, policy, cluster=cluster, seed=task.seed, moves=task.moves)
    return {**out, "policy": ran}  # the policy it ran with (`policy=none`: none)


def _run_task(job: tuple[Task, argparse.Namespace]) -> dict[str, Any]:
    return run_variant(job[0], job[1], quiet=True)


def run_all(tasks: Sequence[Task], args: argparse.Namespace) -> list[dict[str, Any]]:
    """Every run, in the order of `tasks`: one after another with a progress bar each, or in
    `args.workers` processes with one bar counting the runs done."""
    workers = min(args.workers or os.cpu_count() or 1, len(tasks))
    if workers <= 1:
        return [run_variant(task, args, args.quiet) for task in tasks]
    done, close = runs_progress(len(tasks), workers, args.quiet)
    out: list[dict[str, Any]] = []
    try:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            for result in pool.map(_run_task, [(task, args) for task in tasks]):
                out.append(result)
                done()
    finally:
        close()
    return out


DAY = 86400.0


def report_period(
    args: argparse.Namespace, variants: Sequence[Variant], policies: Sequence[Policy]
) -> float | None:
    """The period of the report's figures over time (`--period`; else a day for arrivals over
    two days or more, four hours under that), or None when they are not shown: a run of a day
    or less, without usage history, --queue-start or elastic jobs."""
    history = any(v.half_life for v in variants) or any(p.fairness.on for p in policies)
    if args.period is None and not (args.hours > 24 or history or args.queue_start or args.elastic):
        return None
    return float(args.period or (DAY if args.hours >= 48 else DAY / 6))


def main(args: argparse.Namespace) -> int:
    try:
        if args.workload == "generated" and args.arrivals != "trace":
            raise ValueError(
                f"--arrivals {args.arrivals} replays a trace's pods: give one with --workload"
            )
        if args.seeds is None:
            args.seeds = COMPARE_SEEDS if args.compare else 1
        policy = load_policy(args.policy) if args.policy else None
        nodes = load_cluster(args.cluster)
        seeds = [args.seed + i for i in range(args.seeds)]
        base = Variant("gangplank", args.cluster, args.policy, consolidate=args.consolidate)
        variants = (
            [parse_variant(args.compare[0], base), parse_variant(args.compare[1], base)]
            if args.compare
            else [base]
        )
        compared: dict[str, Policy] = {}
        for variant in variants:  # refused now rather than after the runs before it
            if variant.policy and variant.policy != args.policy:
                compared.setdefault(variant.policy, load_policy(variant.policy))
            elif not variant.policy and not variant.lifecycle:
                raise ValueError(f"--compare {variant.label}: lifecycle=off needs a policy")
            if not variant.policy and variant.half_life is not None:
                raise ValueError(f"--compare {variant.label}: halfLife= needs a policy")
            cluster = variant.cluster
            if cluster != args.cluster and ":" not in cluster and not Path(cluster).exists():
                raise ClusterError(f"--compare {variant.label}: {cluster}: no such file")
        queues = arrival_queues(args, policy, list(compared.values()))
        args.period = report_period(
            args, variants, [*([policy] if policy else []), *compared.values()]
        )
        jobs = {seed: workload(args, queues, nodes, seed) for seed in seeds}
        # the policy whose fair shares a run without one (the baseline) is measured against
        reference = args.policy or next(iter(compared), None)
        if not args.no_baseline:
            variants.append(Variant("kube-scheduler alone", args.cluster, None, baseline=True))
        problem = unwritable_out("--out", args.out)
        if problem is not None:
            raise ValueError(problem)
    except argparse.ArgumentTypeError as err:
        print(f"gangplank simulate: --compare: {err}", file=sys.stderr)
        return 2
    except (ClusterError, PolicyError, ValueError, OSError) as err:
        print(f"gangplank simulate: {err}", file=sys.stderr)
        return 2
    if args.workload != "generated" and args.arrivals == "trace":
        print(replay_note(jobs[seeds[0]], nodes), file=sys.stderr)
    moves = any(v.consolidate for v in variants)
    tasks = [Task(v, seed, jobs[seed], reference, moves) for seed in seeds for v in variants]
    try:
        runs = run_all(tasks, args)
    except (ClusterError, PolicyError, OSError) as err:
        print(f"gangplank simulate: {err}", file=sys.stderr)
        return 2
    print(summary(runs))
    found: list[dict[str, Any]] = []
    unjudged = []
    by_label = {v.label: [r for r in runs if r["label"] == v.label] for v in variants}
    first = by_label[variants[0].label]
    for variant in variants[1:]:
        judged, why = verdicts(first, by_label[variant.label])
        found += judged
        unjudged += [why] if why else []
    notes = ([difference_table(found)] if found else []) + (
        ["\n".join(unjudged)] if unjudged else []
    )
    for note in notes:
        print()
        print(note)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write_json(runs, out / "report.json", found)
    written = [str(out / "report.json")]
    if not args.no_html:
        if not write_html(runs, out / "report.html", "gangplank simulation", notes):
            print(f"report.html has no charts: {CHARTS_MISSING}", file=sys.stderr)
        written.append(str(out / "report.html"))
    print("\nwrote " + ", ".join(written))
    return 0
