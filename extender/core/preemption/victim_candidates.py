"""Victim candidates: the running jobs, and which of them the rules let make room for a waiting job.

A running job is a gang whole (all its bound members) or a pod alone: a gang is evicted whole or
not at all, so no gang is left running in part. An elastic gang running beyond its minimum is
several: each extra member alone (`extra`), and its minimum, which takes the extras still running
with it when it goes (`rest`): taking extras never breaks the gang below its minimum. An extra of
a gang whose workload is made smaller instead (`shrinks.py`) takes the extras that go before it
with it (`rest`: those of higher index, or a NonIndexed Job's the controller removes first), as
the smaller size would.

Never a victim: system pods (priority 1,000,000,000 and above), pods labelled
`gangplank.io/preemptible: "false"` or `volcano.sh/preemptable: "false"` (one such member
protects its whole gang), jobs that have run less than their queue's `minRuntime`.

Two rules decide who may be a victim of whom:
- **priority**: inside one queue whose rules allow it (`withinQueue`), or among pods in no queue,
  a job of lower priority;
- **reclaim**: for a job its queue admits within its guarantee, a job of another queue that runs
  beyond that queue's guarantee (any priority), if that queue is `reclaimable`; evictions from a
  queue stop where it would fall below its guarantee.

Each rule gives its candidates in its order of preference; a gang already running short of
members (a leader died between two of its evictions) comes before that order (`broken_first`),
and elastic gangs' extras before everyone (`extras_first`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field

from extender.core.gangs.gang import resolve_gang
from extender.core.model.keys import is_single, job_key
from extender.core.model.resources import GPU, total
from extender.core.model.snapshot import PodInfo, Snapshot
from extender.core.preemption.shrinks import shrinkable
from extender.core.queues.book import QueueBook
from extender.core.queues.policy import PreemptionRules

SYSTEM_PRIORITY = 1_000_000_000
OPT_OUTS = (("gangplank.io/preemptible", "false"), ("volcano.sh/preemptable", "false"))


@dataclass(frozen=True, slots=True, eq=False)
class RunningJob:
    key: str
    queue: str | None
    priority: int
    started: float  # the earliest start of its pods
    pods: tuple[PodInfo, ...]
    freed: Mapping[str, Mapping[str, int]]  # node -> requests of its pods there
    requests: Mapping[str, int] = field(default_factory=dict)  # all its pods together
    extra: bool = False  # an elastic gang's member beyond its minimum, alone
    rest: tuple[PodInfo, ...] = ()  # an elastic gang's extras, evicted with its minimum

    def __post_init__(self) -> None:
        if not self.requests:
            out: dict[str, int] = {}
            for amounts in self.freed.values():
                for name, amount in amounts.items():
                    out[name] = out.get(name, 0) + amount
            object.__setattr__(self, "requests", out)

    def gpu_seconds(self, now: float) -> float:
        return self.requests.get(GPU, 0) * max(0.0, now - self.started)

    @property
    def protected(self) -> str:
        """Why no one may preempt it ("" when anyone the rules allow may)."""
        for pod in (*self.pods, *self.rest):
            if pod.priority >= SYSTEM_PRIORITY:
                return f"pod {pod.key} is a system pod (priority {pod.priority})"
            for key, value in OPT_OUTS:
                if pod.labels.get(key, "").lower() == value:
                    return f"pod {pod.key} is labelled {key}: {value!r}"
        return ""


def running_jobs(
    snapshot: Snapshot,
    queue_of: Callable[[PodInfo], str | None],
    keep: Callable[[PodInfo], bool] | None = None,
    nodes: Collection[str] | None = None,
    holds: Callable[[PodInfo], bool] | None = None,
) -> list[RunningJob]:
    """Jobs with pods running (bound, not finished, not being deleted) on `nodes` (default: all);
    a gang comes with all its running members, wherever they run. `keep` looks at each pod first
    (a cheap test, such as its priority): a job any of whose pods it refuses is left out whole.
    `holds`: only jobs one of whose pods on `nodes` passes it (holds what is needed)."""
    grouped: dict[str, list[PodInfo]] = {}
    refused: set[str] = set()
    infos = snapshot.nodes
    for name in infos if nodes is None else nodes:
        info = infos.get(name)
        if info is None:
            continue
        for pod in info.pods:
            if not pod.active or (holds is not None and not holds(pod)):
                continue
            key: str = job_key(pod)
            if key in grouped or key in refused:
                continue
            members = [pod]
            if not is_single(key):
                members = [p for p in snapshot.groups.get(key, (pod,)) if p.active and p.node_name]
            if keep is not None and not all(keep(p) for p in members):
                refused.add(key)
            else:
                grouped[key] = members
    jobs = []
    for key, pods in grouped.items():
        if len(pods) == 1:  # most jobs: one pod, its own requests as they are
            pod = pods[0]
            assert pod.node_name is not None
            jobs.append(
                RunningJob(
                    key,
                    queue_of(pod),
                    pod.priority,
                    pod.started or pod.created,
                    (pod,),
                    {pod.node_name: pod.requests},
                    pod.requests,
                )
            )
            continue
        jobs.extend(_gang_jobs(snapshot, key, pods, queue_of(pods[0])))
    return jobs


def _gang_jobs(
    snapshot: Snapshot, key: str, pods: list[PodInfo], queue: str | None
) -> list[RunningJob]:
    """A running gang as victim candidates: one job, or an elastic gang's extras each alone and
    its minimum (counted as freeing its own members' room; its extras go with it)."""
    gang = resolve_gang(snapshot, key)
    extras: list[PodInfo] = []
    if gang.elastic and len(pods) > gang.size:
        running = {p.uid for p in pods}
        extras = [p for p in gang.extras if p.uid in running]
    gone = {p.uid for p in extras}
    core = [p for p in pods if p.uid not in gone]
    freed: dict[str, dict[str, int]] = {}
    whole: dict[str, int] = {}
    for pod in pods:
        assert pod.node_name is not None
        if pod.uid not in gone:
            on_node = freed.setdefault(pod.node_name, {})
            for name, amount in pod.requests.items():
                on_node[name] = on_node.get(name, 0) + amount
        for name, amount in pod.requests.items():
            whole[name] = whole.get(name, 0) + amount
    jobs = [
        RunningJob(
            key=key,
            queue=queue,
            priority=max(p.priority for p in pods),
            started=min(p.started or p.created for p in core),
            pods=tuple(core),
            freed=freed,
            requests=whole,
            rest=tuple(extras),
        )
    ]
    # Taken back through its workload (an elastic Job, PyTorchJob: `shrinks.py`), an extra takes
    # the ones before it in `extras` with it: a smaller size removes them all.
    ordered = shrinkable(snapshot, gang)
    for i, pod in enumerate(extras):
        assert pod.node_name is not None
        started = pod.started or pod.created
        node = {pod.node_name: pod.requests}
        above = tuple(extras[:i]) if ordered else ()
        jobs.append(
            RunningJob(key, queue, pod.priority, started, (pod,), node, extra=True, rest=above)
        )
    return jobs


def extras_first(candidates: list[RunningJob]) -> list[RunningJob]:
    """Elastic gangs' extra members before any other candidate, those that take no other extra
    with them first, the rule's order kept within each part: they run on room no one was
    waiting for, and their gang keeps its minimum."""
    return sorted(candidates, key=lambda job: (not job.extra, len(job.rest) if job.extra else 0))


def broken_first(
    candidates: list[RunningJob], runs_short: Callable[[RunningJob], bool]
) -> list[RunningJob]:
    """The candidates with gangs already running short (fewer members bound than the gang needs,
    and no plan to complete them: a leader died between two evictions, a member failed) first,
    the rule's order kept within each part: finishing the cut of a gang that can no longer run
    costs less than cutting a whole one."""
    short: list[RunningJob] = []
    rest: list[RunningJob] = []
    for job in candidates:
        (short if not is_single(job.key) and runs_short(job) else rest).append(job)
    return short + rest if short else candidates


RulesOf = Callable[[str | None], PreemptionRules]


def _may_go(job: RunningJob, rules_of: RulesOf, now: float) -> bool:
    return not job.protected and now - job.started >= rules_of(job.queue).min_runtime


def priority_candidates(
    jobs: Iterable[RunningJob],
    queue: str | None,
    priority: int,
    rules_of: RulesOf,
    now: float,
    first: Collection[str] = (),
) -> list[RunningJob]:
    """Jobs of the same queue (or of no queue) with lower priority, cheapest first: lowest
    priority, then the ones that free the most GPUs (fewest jobs), then the least GPU-time run.
    `first`: idle jobs whose rule is `reclaim-first`: candidates whatever their priority, before
    any busy job."""
    if queue is not None and not rules_of(queue).within_queue:
        return []
    found = [
        j
        for j in jobs
        if j.queue == queue
        and (j.priority < priority or j.key in first)
        and _may_go(j, rules_of, now)
    ]
    found.sort(
        key=lambda j: (
            j.key not in first,
            j.priority,
            -j.requests.get(GPU, 0),
            j.gpu_seconds(now),
            j.key,
        )
    )
    return found


def reclaim_candidates(
    jobs: Iterable[RunningJob],
    queue: str,
    borrowed: Callable[[str], Mapping[str, int]],
    governed: Iterable[str],
    rules_of: RulesOf,
    now: float,
    account: Callable[[str], str] | None = None,
    first: Collection[str] = (),
) -> list[RunningJob]:
    """Jobs that other queues run beyond their guarantee (any priority), elastic gangs' extras
    first, then lowest priority then newest first, never more than was borrowed (no queue falls
    below its guarantee).
    `account(victim_queue)` is where borrowing is measured: in a tree, the victim's ancestor just
    below the one it shares with `queue` (siblings first share their parent's guarantee)."""
    governed = set(governed)
    account = account or (lambda q: q)
    ordered = sorted(
        (
            j
            for j in jobs
            if j.queue is not None
            and j.queue != queue
            and rules_of(j.queue).reclaimable
            and _may_go(j, rules_of, now)
        ),
        key=lambda j: (not j.extra, j.key not in first, j.priority, -j.started, j.key),
    )
    left: dict[str, dict[str, int]] = {}
    counted: set[str] = set()  # pods already taken (an extra, then its gang's minimum)
    found = []
    for job in ordered:
        assert job.queue is not None
        owner = account(job.queue)
        room = left.setdefault(owner, dict(borrowed(owner)))
        going = [p for p in (*job.pods, *job.rest) if p.uid not in counted]
        taking = {
            k: v for k, v in total(p.requests for p in going).items() if k in governed and v > 0
        }
        if not taking or any(room.get(k, 0) < v for k, v in taking.items()):
            continue
        for name, amount in taking.items():
            room[name] -= amount
        counted.update(p.uid for p in going)
        found.append(job)
    return found


def runs_lower(
    snapshot: Snapshot, book: QueueBook | None, queue: str | None, priority: int
) -> bool:
    """Whether any pod of `queue` holding resources has a priority below `priority`, read from
    the store's per-queue floor (no pod read); true when the snapshot does not keep it."""
    floors = snapshot.queue_floor
    if floors is None:
        return True
    if book is None:
        return any(lowest < priority for lowest in floors.values())
    return any(
        lowest < priority and book.queue_of_key(qkey) == queue for qkey, lowest in floors.items()
    )
