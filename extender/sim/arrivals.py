"""The arrivals of `gangplank simulate`: over which queues (`arrival_queues`), and the jobs of
one seed (`workload`: the generated mix or a trace, a share of them elastic or wasting what
they hold)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from extender.core.queues.policy import Policy
from extender.sim.cluster import node_gpus
from extender.sim.elastic import with_elastic
from extender.sim.simulate_args import GENERATED_JOBS
from extender.sim.workload import DEFAULT_SHAPES, JobSpec, Mix, fgd_arrivals, from_trace, generate
from extender.sim.workload_faults import Faults, with_faults

DEFAULT_QUEUES = ("team-a", "team-b", "team-c")  # the arrivals' queues when no policy names any


def _leaves(policy: Policy) -> list[str]:
    return [q for q in policy.queues if policy.is_leaf(q)]


def arrival_queues(
    args: argparse.Namespace, policy: Policy | None, compared: Sequence[Policy]
) -> dict[str, float] | None:
    """The queues the arrivals are spread over, with their shares: --queues; else the open leaf
    queues of --policy; else of the policies compared, which must have the same leaf queues
    (the same arrivals run on each). None when no policy names any. ValueError when a queue of
    the arrivals is not a leaf queue of a policy they run on."""
    if args.queues:
        queues: dict[str, float] = args.queues
    elif policy is not None:
        queues = {q: 1.0 for q in _leaves(policy) if policy.queues[q].state == "open"}
    elif compared:
        first = compared[0]
        for other in compared[1:]:
            if set(_leaves(other)) != set(_leaves(first)):
                raise ValueError(
                    f"--compare: {first.source} has the leaf queues "
                    f"{', '.join(sorted(_leaves(first)))} and {other.source} has "
                    f"{', '.join(sorted(_leaves(other)))}: the same arrivals cannot run on both "
                    "(compare policies of the same leaf queues)"
                )
        opened = [q for q in _leaves(first) if any(p.queues[q].state == "open" for p in compared)]
        queues = dict.fromkeys(opened or _leaves(first), 1.0)
    else:
        return None
    for each in [*([policy] if policy else []), *compared]:
        for name in queues:
            if name not in each.queues or not each.is_leaf(name):
                flag = "--queues" if args.queues else "--compare"
                raise ValueError(
                    f"{flag}: {name} is not a leaf queue of {each.source} (its leaf queues: "
                    f"{', '.join(_leaves(each))})"
                )
    return queues


def _trace(path: Path, queues: Sequence[str], limit: int, seed: int) -> list[JobSpec]:
    """The trace's jobs; a file that cannot be one is refused naming --workload."""
    try:
        jobs = from_trace(path, queues, limit, seed)
    except OSError as err:
        raise ValueError(f"--workload {path}: {err.strerror or err}") from None
    except ValueError as err:
        raise ValueError(f"--workload {path}: {err}") from None
    if not jobs:
        raise ValueError(f"--workload {path}: no pods in it")
    return jobs


def workload(
    args: argparse.Namespace,
    queues: dict[str, float] | None,
    nodes: list[dict[str, Any]],
    seed: int,
) -> list[JobSpec]:
    """The jobs of one seed over `queues` (`arrival_queues`), a seeded share of them wasting
    what they hold (`faults`), a seeded share of the gangs without a fault elastic."""
    if args.workload == "generated":
        queues = queues or dict.fromkeys(DEFAULT_QUEUES, 1.0)
        for name in args.queue_start:
            if name not in queues:
                raise ValueError(
                    f"--queue-start: {name} is not a queue of the arrivals (they go to "
                    f"{', '.join(queues)})"
                )
        mix = Mix(
            jobs=args.jobs or GENERATED_JOBS,
            hours=args.hours,
            load=args.load,
            seed=seed,
            queues=queues,
            starts=args.queue_start,
            shapes=args.shapes or DEFAULT_SHAPES,
        )
        jobs = generate(mix, node_gpus(nodes))
    else:
        if args.queue_start:
            raise ValueError("--queue-start spreads generated arrivals: not with --workload")
        jobs = _trace(Path(args.workload), list(queues or ()), args.jobs, seed)
        if args.arrivals == "fgd":
            jobs = fgd_arrivals(jobs, sum(node_gpus(nodes)), seed)
    return with_elastic(with_faults(jobs, faults(args, seed)), args.elastic, seed)


def faults(args: argparse.Namespace, seed: int) -> Faults:
    """The fault shares asked for (ValueError naming the flags when they add up to more
    than 1)."""
    try:
        return Faults(
            never_ready=args.never_ready,
            crash=args.crash,
            node_loss=args.node_loss,
            idle=args.idle,
            fixed_on_retry=args.fixed_on_retry,
            seed=seed,
        )
    except ValueError:
        raise ValueError(
            "--never-ready, --crash, --node-loss and --idle add up to more than 1"
        ) from None


def replay_note(jobs: Sequence[JobSpec], nodes: list[dict[str, Any]]) -> str:
    """What replaying a trace in its own time means on this cluster: how long it spans and how
    much of the cluster its pods ask for over that span."""
    span = max(j.arrival for j in jobs)
    capacity = sum(node_gpus(nodes))
    asked = sum(j.total_gpus * min(j.duration, span - j.arrival) for j in jobs)
    load = asked / (capacity * span) if capacity and span else 0.0
    return (
        f"the trace in its own time: {len(jobs):,} pods arriving over {span / 3600:,.0f} hours, "
        f"asking for {load:.1%} of this cluster's GPU-hours over that span (what the trace's "
        "cluster ran, at its pace: little waits); --arrivals fgd loads the cluster as the FGD "
        "paper does"
    )
