"""`gangplank simulate`: replay a workload on a simulated cluster, with gangplank and without.

    gangplank simulate --cluster synthetic:64x8 --jobs 2000 --policy policies/example.yaml
    gangplank simulate --cluster ../shared/traces --jobs 50000 --hours 24
    gangplank simulate --policy p.yaml --compare label=today "nodes=+16,label=+16 nodes"

Output: a summary on the terminal, and in --out (default ./simulation) report.json (every
figure) and report.html (plots).
"""

from __future__ import annotations

import argparse
import copy
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from extender.core.policy import Policy, PolicyError
from extender.policy_file import load_policy
from extender.sim.baseline import Baseline
from extender.sim.cluster import ClusterError, load_cluster, node_gpus
from extender.sim.driver import Driver, Extender, Options
from extender.sim.inprocess import InProcess
from extender.sim.report import differences, figures, summary, write_html, write_json
from extender.sim.workload import JobSpec, Mix, from_trace, generate

DEFAULT_TRACES = Path("../shared/traces")
# One scheduling cycle with an extender: the filter and prioritize round trips (gangplank's pair
# is p50 2.3 ms over HTTP at 5,000 nodes, docs/benchmarks.md), kube-scheduler's own filters and
# scores over thousands of nodes, the bind: 5 ms, 200 pods a second.
CYCLE_MS = 5.0


@dataclass
class Variant:
    label: str
    cluster: str
    policy: str | None
    add_nodes: int = 0
    baseline: bool = False


def parse_variant(text: str, base: Variant) -> Variant:
    """`key=value,...` over the base run: label=, cluster=, policy= (none: no policy), nodes=+N."""
    variant = copy.copy(base)
    variant.label = text
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, _, value = part.partition("=")
        if key == "label":
            variant.label = value
        elif key == "cluster":
            variant.cluster = value
        elif key == "policy":
            variant.policy = None if value in ("", "none") else value
        elif key == "nodes" and value.lstrip("+").isdigit():
            variant.add_nodes = int(value.lstrip("+"))
        else:
            raise ValueError(
                f"--compare {text!r}: {part!r} is not label=, cluster=, policy= or nodes=+N"
            )
    return variant


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--cluster",
        default="synthetic:64x8",
        help="nodes: a `kubectl get nodes -o yaml` dump, a trace node CSV, a traces directory "
        "(its 4,278-node spot list) or synthetic:NODESxGPUS (default %(default)s)",
    )
    parser.add_argument(
        "--workload",
        default="generated",
        help="`generated` (a seeded mix, see --jobs/--hours/--load), or an alibaba-gpu-v2023 pod "
        "CSV (or its traces directory) replayed in its own time",
    )
    parser.add_argument("--jobs", type=int, default=2000, help="jobs to generate")
    parser.add_argument("--hours", type=float, default=24.0, help="hours the arrivals span")
    parser.add_argument(
        "--load", type=float, default=0.9, help="GPU-hours asked for, as a share of the cluster's"
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--queues",
        help="queue=share,... of arrivals (default: the policy's leaf queues, equal shares)",
    )
    parser.add_argument("--policy", help="policy YAML (queues, quotas, preemption, placement)")
    parser.add_argument(
        "--compare",
        nargs=2,
        metavar=("A", "B"),
        help="two variants of the run, each `key=value,...`: label=, cluster=, policy= (a file, "
        "or none), nodes=+N (N more nodes like the last); the baseline runs too",
    )
    parser.add_argument("--no-baseline", action="store_true", help="skip the run without gangplank")
    parser.add_argument("--out", default="simulation", help="directory for report.json/.html")
    parser.add_argument("--no-html", action="store_true", help="write no HTML page")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument(
        "--kick-seconds",
        type=float,
        default=5.0,
        help="simulated seconds between gangplank's periodic passes (nudges, holds, reclaim)",
    )
    parser.add_argument(
        "--cycle-ms",
        type=float,
        default=CYCLE_MS,
        help="simulated milliseconds kube-scheduler spends on one pod (filter, prioritize, "
        "extender round trips): a backlog drains at 1000/cycle-ms pods a second "
        "(default %(default)s; 0: as fast as it comes)",
    )


def _queues(args: argparse.Namespace, policy: Policy | None) -> dict[str, float]:
    if args.queues:
        out = {}
        for part in args.queues.split(","):
            name, _, share = part.partition("=")
            out[name.strip()] = float(share or 1)
        return out
    if policy is None:
        return {"team-a": 1.0, "team-b": 1.0, "team-c": 1.0}
    return {
        name: 1.0
        for name, spec in policy.queues.items()
        if policy.is_leaf(name) and spec.state == "open"
    }


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


def _progress(total: float, label: str, quiet: bool) -> tuple[Callable[[float], None], Any]:
    if quiet:
        return (lambda t: None), None
    from tqdm import tqdm

    bar = tqdm(
        total=round(total / 3600, 2),
        desc=label,
        unit="h",
        file=sys.stderr,
        leave=False,
        bar_format="{desc}: {percentage:3.0f}%|{bar}| {n:.1f}/{total:.1f} simulated h "
        "[{elapsed}<{remaining}]",
    )

    def update(t: float) -> None:
        hours = round(t / 3600, 2)
        if hours > bar.total:  # past the last arrival: the run goes on until the work is done
            bar.total = hours
            bar.set_description_str(f"{label}, after the last arrival", refresh=False)
        if hours > bar.n:
            bar.update(hours - bar.n)

    return update, bar


def run_variant(
    variant: Variant, jobs: Sequence[JobSpec], args: argparse.Namespace
) -> dict[str, Any]:
    nodes = _grow(load_cluster(variant.cluster), variant.add_nodes)
    policy = load_policy(variant.policy) if variant.policy else None
    extender: Extender = Baseline() if variant.baseline else InProcess(policy)
    horizon = max((j.arrival for j in jobs), default=0.0)
    update, bar = _progress(horizon, variant.label, args.quiet)
    driver = Driver(
        nodes,
        jobs,
        extender,
        Options(
            kick_seconds=args.kick_seconds,
            seed=args.seed,
            cycle_seconds=args.cycle_ms / 1000,
            # work a free cluster would have finished: the longest job, after the last arrival
            drain_seconds=max((j.duration for j in jobs), default=0.0),
            progress_every=36.0,  # the bar shows hundredths of an hour
        ),
        progress=update,
    )
    try:
        driver.run()
    finally:
        if bar is not None:
            bar.close()
    return figures(driver, variant.label, policy)


def main(args: argparse.Namespace) -> int:
    try:
        policy = load_policy(args.policy) if args.policy else None
        nodes = load_cluster(args.cluster)
        if args.workload == "generated":
            mix = Mix(
                jobs=args.jobs,
                hours=args.hours,
                load=args.load,
                seed=args.seed,
                queues=_queues(args, policy),
            )
            jobs = generate(mix, node_gpus(nodes))
        else:
            queues = list(_queues(args, policy)) if (args.queues or policy) else []
            jobs = from_trace(Path(args.workload), queues, args.jobs, args.seed)
        base = Variant("gangplank", args.cluster, args.policy)
        variants = (
            [parse_variant(args.compare[0], base), parse_variant(args.compare[1], base)]
            if args.compare
            else [base]
        )
        if not args.no_baseline:
            variants.append(Variant("kube-scheduler alone", args.cluster, None, baseline=True))
    except (ClusterError, PolicyError, ValueError, OSError) as err:
        print(f"gangplank simulate: {err}", file=sys.stderr)
        return 2
    runs = []
    for variant in variants:
        try:
            runs.append(run_variant(variant, jobs, args))
        except (ClusterError, PolicyError, OSError) as err:
            print(f"gangplank simulate: {variant.label}: {err}", file=sys.stderr)
            return 2
    print(summary(runs))
    notes = []
    for other in runs[1:]:
        notes += differences(runs[0], other)
    if notes:
        print()
        print("\n".join(notes))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write_json(runs, out / "report.json")
    written = [str(out / "report.json")]
    if not args.no_html:
        try:
            write_html(runs, out / "report.html", "gangplank simulation", notes)
            written.append(str(out / "report.html"))
        except ImportError:
            print(
                "no HTML page: matplotlib is missing (pip install 'gangplank[sim]')",
                file=sys.stderr,
            )
    print("\nwrote " + ", ".join(written))
    return 0
