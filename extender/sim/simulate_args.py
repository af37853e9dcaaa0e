"""`gangplank simulate`'s arguments: the flags, and the variants `--compare` describes."""

from __future__ import annotations

import argparse
import copy
import re
from dataclasses import dataclass

from extender.cli.args import above, non_negative_float, positive_float, positive_int
from extender.core.queues.lifecycle import parse_duration
from extender.sim.workload import Shape
from extender.sim.workload_faults import FAULTS

# One scheduling cycle with an extender: the filter and prioritize round trips (gangplank's pair
# is p50 2.3 ms over HTTP at 5,000 nodes, docs/benchmarks.md), kube-scheduler's own filters and
# scores over thousands of nodes, the bind: 5 ms, 200 pods a second.
CYCLE_MS = 5.0
GENERATED_JOBS = 2000
# Seeds of a what-if by default: enough for a difference that goes one way in all of them to
# mean something (one way in 3 of 3 by chance: 1 in 4), few enough for minutes on two cores.
COMPARE_SEEDS = 3


@dataclass
class Variant:
    label: str
    cluster: str
    policy: str | None
    add_nodes: int = 0
    baseline: bool = False
    lifecycle: bool = True  # False: the policy's `lifecycle:` rules left out
    consolidate: bool = False  # pods with no room make room by moving running jobs
    half_life: float | None = None  # the policy's fairness: with this half-life (0: no history)


def parse_variant(text: str, base: Variant) -> Variant:
    """`key=value,...` over the base run: label=, cluster=, policy= (none: no policy), nodes=+N,
    lifecycle=off (the policy without its `lifecycle:` rules) or on, consolidate=on|off,
    halfLife=DURATION (the policy's `fairness:` with that half-life; 0: no usage history)."""
    variant = copy.copy(base)
    variant.label = text
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, _, value = part.partition("=")
        if key == "label":
            variant.label = value
        elif key == "cluster":
            variant.cluster = cluster_spec(value)
        elif key == "policy":
            variant.policy = None if value in ("", "none") else value
        elif key == "nodes" and value.lstrip("+").isdigit():
            variant.add_nodes = int(value.lstrip("+"))
        elif key == "lifecycle" and value in ("on", "off"):
            variant.lifecycle = value == "on"
        elif key == "consolidate" and value in ("on", "off"):
            variant.consolidate = value == "on"
        elif key == "halfLife" and _duration(value) is not None:
            variant.half_life = _duration(value)
        else:
            raise ValueError(
                f"--compare {text!r}: {part!r} is not label=, cluster=, policy=, nodes=+N, "
                "lifecycle=on|off, consolidate=on|off or halfLife=DURATION (24h; 0: none)"
            )
    return variant


def _duration(text: str) -> float | None:
    try:
        return parse_duration(text)
    except ValueError:
        return None


def duration(text: str) -> float:
    """A duration argument: seconds, or Go-style with days (90s, 1h30m, 1d)."""
    try:
        return parse_duration(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def positive_duration(text: str) -> float:
    seconds = duration(text)
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration above 0 (e.g. 4h, 1d)")
    return seconds


def queue_starts(text: str) -> dict[str, float]:
    """--queue-start: `queue=DURATION,...` (the time its arrivals begin)."""
    out: dict[str, float] = {}
    for part in text.split(","):
        name, sep, when = (s.strip() for s in part.partition("="))
        if not name or not sep:
            raise argparse.ArgumentTypeError(f"{part!r}: write QUEUE=DURATION (e.g. team-b=1d)")
        out[name] = duration(when)
    return out


def job_shapes(text: str) -> tuple[Shape, ...]:
    """--shapes: `PODSxGPUS[:WEIGHT],...` (4x8:2: gangs of 4 pods of 8 GPUs, twice as often as
    a shape of weight 1)."""
    out = []
    for part in text.split(","):
        found = re.fullmatch(r"\s*(\d+)x(\d+)(?::([0-9.]+))?\s*", part)
        if found is None or not int(found.group(1)):
            raise argparse.ArgumentTypeError(
                f"{part!r}: write PODSxGPUS[:WEIGHT] (e.g. 1x4:3,4x8:1), at least 1 pod"
            )
        weight = positive_float(found.group(3)) if found.group(3) else 1.0
        out.append(Shape(int(found.group(1)), int(found.group(2)), weight))
    return tuple(out)


def cluster_spec(text: str) -> str:
    """--cluster as written: a synthetic one must say how many nodes of how many GPUs (files
    are read, and refused with the reason, when the run starts)."""
    if text.startswith("synthetic:"):
        found = re.fullmatch(r"synthetic:(\d+)x(\d+)", text)
        if found is None or not int(found.group(1)) or not int(found.group(2)):
            raise argparse.ArgumentTypeError(
                f"{text!r}: write synthetic:NODESxGPUS, at least 1 node of 1 GPU "
                "(e.g. synthetic:64x8)"
            )
    return text


def queue_shares(text: str) -> dict[str, float]:
    """--queues: `queue=share,...` (a queue without `=share` has share 1)."""
    out: dict[str, float] = {}
    for part in text.split(","):
        name, sep, share_text = (s.strip() for s in part.partition("="))
        if not name:
            raise argparse.ArgumentTypeError(f"{text!r}: a queue name is empty")
        if name in out:
            raise argparse.ArgumentTypeError(f"{text!r}: queue {name} is named twice")
        share = positive_float(share_text) if sep else 1.0
        out[name] = share
    return out


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--cluster",
        default="synthetic:64x8",
        type=cluster_spec,
        help="nodes: a `kubectl get nodes -o yaml` dump, a trace node CSV, a traces directory "
        "(its 4,278-node spot list) or synthetic:NODESxGPUS",
    )
    parser.add_argument(
        "--workload",
        default="generated",
        help="`generated` (a seeded mix, see --jobs/--hours/--load), or an alibaba-gpu-v2023 pod "
        "CSV (or its traces directory), its pods arriving as --arrivals says",
    )
    parser.add_argument(
        "--jobs",
        type=positive_int,
        help=f"jobs to generate (default {GENERATED_JOBS}); of a trace, the first this many pods "
        "(default: all)",
    )
    parser.add_argument(
        "--arrivals",
        choices=("trace", "fgd"),
        default="trace",
        help="how a trace's pods arrive: `trace`, at their creation times, each running from "
        "scheduling to deletion (the trace's own pace: light, see the README); `fgd`, as the "
        "FGD paper replays them: in order, then seeded draws from the list until the GPUs "
        "asked for exceed the cluster's, one a second, none leaving",
    )
    parser.add_argument(
        "--hours",
        type=positive_float,
        default=24.0,
        help="hours the arrivals span (days: 96 for four; see --period)",
    )
    parser.add_argument(
        "--shapes",
        type=job_shapes,
        metavar="PODSxGPUS[:WEIGHT],...",
        help="the generated jobs' shapes and how often each comes (default: 1 pod of 1 GPU up to "
        "gangs of 16 x 8 GPUs, docs/simulate.md)",
    )
    parser.add_argument(
        "--queue-start",
        type=queue_starts,
        default={},
        metavar="QUEUE=DURATION,...",
        help="those queues' arrivals begin then (team-b=1d): until then the queues begun take "
        "every arrival (one queue running alone the first day)",
    )
    parser.add_argument(
        "--elastic",
        type=above(float, 0, inclusive=True, most=1),
        default=0.0,
        help="share of gangs (0-1, seeded) that are elastic: N pods become a job of N/2 up to N "
        "workers, its run at N workers as before, longer with fewer (docs/elastic.md)",
    )
    parser.add_argument(
        "--period",
        type=positive_duration,
        help="the report's period for each queue's share of GPU-time and elastic jobs' workers "
        "over time (default 1d when the arrivals span 2 days or more, else 4h; shown for runs "
        "over a day, with usage history, --queue-start or --elastic)",
    )
    parser.add_argument(
        "--load",
        type=positive_float,
        default=0.9,
        help="GPU-hours asked for, as a share of the cluster's",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=1,
        help="the first seed: of the generated mix, of a trace's queues and FGD draws, of "
        "kube-scheduler's random picks",
    )
    parser.add_argument(
        "--seeds",
        type=positive_int,
        help=f"run every variant on the workloads of this many seeds (--seed, --seed+1, ...): "
        f"figures show the median and range; default {COMPARE_SEEDS} with --compare, else 1",
    )
    parser.add_argument(
        "--workers",
        type=positive_int,
        help="runs at once, each in its own process (default: the CPUs, at most the runs)",
    )
    parser.add_argument(
        "--queues",
        type=queue_shares,
        help="queue=share,... of arrivals (default: the policy's open leaf queues, equal shares; "
        "without a policy team-a, team-b and team-c)",
    )
    parser.add_argument("--policy", help="policy YAML (queues, quotas, preemption, placement)")
    parser.add_argument(
        "--compare",
        nargs=2,
        metavar=("A", "B"),
        help="two variants of the run, each `key=value,...`: label=, cluster=, policy= (a file, "
        "or none), nodes=+N (N more nodes like the last), lifecycle=off (the policy without its "
        "lifecycle: rules), consolidate=on|off, halfLife=DURATION (the policy's fairness: with "
        "that half-life, 24h; 0: no usage history); the baseline runs too",
    )
    parser.add_argument(
        "--consolidate",
        action="store_true",
        help="a pod no node has room for, while the cluster has its GPUs free in total, makes "
        "room by moving running single-pod jobs that ask for less than a whole node "
        "(gangplank's move planner; see docs/simulate.md)",
    )
    parser.add_argument("--no-baseline", action="store_true", help="skip the run without gangplank")
    parser.add_argument("--out", default="simulation", help="directory for report.json/.html")
    parser.add_argument("--no-html", action="store_true", help="write no HTML page")
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")
    share = above(float, 0, inclusive=True, most=1)
    for flag, fault in (
        ("--never-ready", "never-ready"),
        ("--crash", "crash"),
        ("--node-loss", "node-loss"),
        ("--idle", "idle"),
    ):
        whose = "gangs" if fault == "node-loss" else "jobs"
        parser.add_argument(
            flag,
            type=share,
            default=0.0,
            help=f"share of {whose} (0-1, seeded) that {FAULTS[fault]}",
        )
    parser.add_argument(
        "--fixed-on-retry",
        type=share,
        default=0.5,
        help="chance that a never-ready or crash-looping job gangplank sent back is fixed on "
        "each new attempt",
    )
    parser.add_argument(
        "--stuck-factor",
        type=positive_float,
        default=3.0,
        help="a job stuck not ready or crash-looping is deleted by its owner this many times its "
        "duration after it got stuck",
    )
    parser.add_argument(
        "--kick-seconds",
        type=positive_float,
        default=5.0,
        help="simulated seconds between gangplank's periodic passes (nudges, holds, reclaim)",
    )
    parser.add_argument(
        "--cycle-ms",
        type=non_negative_float,
        default=CYCLE_MS,
        help="simulated milliseconds kube-scheduler spends on one pod (filter, prioritize, "
        "extender round trips): a backlog drains at 1000/cycle-ms pods a second "
        "(0: as fast as it comes)",
    )
