"""Room in a queue's quota: when a queue (or an ancestor) is at its max, what may a job that
outranks work there take back?

The common setup is a team queue whose `max` equals its share of the pool: it is usually full,
and a higher-priority job of that team must take the place of the team's own lower-priority
work. Its admission is then checked against the book as it will be once the chosen victims are
gone (`admission.check_quota(..., freed=...)`), and the victims may run anywhere in the queue,
not only on the nodes the job could use: what a queue at its max lacks is quota, not room.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from extender.core.preemption.victim_candidates import RunningJob
from extender.core.queues.admission import check_quota
from extender.core.queues.book import QueueBook

QUOTA_RULES = frozenset({"max", "borrow"})  # refusals that victims may lift


def freed_by_queue(
    jobs: Iterable[RunningJob], governed: Iterable[str]
) -> dict[str, dict[str, int]]:
    """What `jobs` hold of the governed resources, by their queue."""
    kinds = set(governed)
    out: dict[str, dict[str, int]] = {}
    for job in jobs:
        if job.queue is None:
            continue
        into = out.setdefault(job.queue, {})
        for name, amount in job.requests.items():
            if name in kinds:
                into[name] = into.get(name, 0) + amount
    return out


def admits_once_gone(
    book: QueueBook, queue: str, request: Mapping[str, int], job: str
) -> Callable[[Sequence[RunningJob]], bool]:
    """Whether `queue` admits `job` once the victims asked about are gone."""

    def admits(victims: Sequence[RunningJob]) -> bool:
        freed = freed_by_queue(victims, book.governed)
        return check_quota(book, queue, request, job, freed).ok

    return admits


def no_victims_reason(
    queue: str, priority: int, found: int, budget: tuple[int, int], wanted: int = 0
) -> str:
    """Why no job was evicted to make room in `queue`'s quota (appended to the refusal):
    `found` candidates looked at, `budget` (evictions left this minute, evictionsPerMinute),
    `wanted` the jobs a plan would evict when that is more than the budget allows."""
    left, rate = budget
    if wanted > rate:
        return (
            f"preemption would have to evict {wanted} jobs at once, more than "
            f"preemption.evictionsPerMinute ({rate}) allows: raise it for this job to preempt"
        )
    if wanted or left <= 0:
        return (
            f"preemption waits: this minute's evictions are spent ({left} of "
            f"preemption.evictionsPerMinute {rate} left)"
        )
    if not found:
        return (
            f"nothing may be preempted for it: no job of queue {queue} runs at a priority below "
            f"{priority} and may go (minRuntime, protected pods), and no queue borrows what it "
            "may take back"
        )
    return f"evicting every job the rules allow ({found} running) would not make room for it"
