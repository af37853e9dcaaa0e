"""The queue's gate for one job: which queue a pod uses, and the verdict on its job, whole (and
on refused jobs, by shape, in a pass: `admits_now`).

A pod names its queue by label (`workload.queue_label`); the policy resolves it (namespace
defaults, unknown names). A queue with child queues holds no work itself. The verdict is on the
job's pending pods together (a gang's, once it is complete and valid); a gang already running in
part is completed even in a closed queue (it holds resources for work that cannot run until it is
whole), but never past its quota. An elastic gang asks for its minimum first; once that is placed,
each further member asks for itself (quota counts them like any member).
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from extender.core.gangs.gang import resolve_gang
from extender.core.model.keys import is_single, job_name
from extender.core.model.resources import total
from extender.core.model.snapshot import PodInfo, Snapshot
from extender.core.model.workload import queue_label
from extender.core.queues.admission import ADMITTED, Verdict, check_quota, check_state
from extender.core.queues.book import QueueBook
from extender.core.queues.policy import Policy


def queue_of(policy: Policy, pod: PodInfo) -> tuple[str | None, str]:
    """(the pod's queue, or None: not queued; why it may not use it, or "")."""
    label_key, label = queue_label(pod)
    queue, problem = policy.resolve(label, pod.namespace, label_key)
    if problem:
        return None, f"pod {pod.key}: {problem}"
    if queue is not None and not policy.is_leaf(queue):
        kids = ", ".join(policy.children.get(queue, ()))
        return queue, (
            f"pod {pod.key}: queue {queue} has child queues ({kids}) and holds no work "
            "itself; name one of them"
        )
    return queue, ""


def verdict_on_job(
    policy: Policy,
    book: QueueBook,
    snapshot: Snapshot,
    key: str,
    pod: PodInfo,
    queue: str,
    planned: Collection[str] = (),
) -> Verdict | None:
    """The quota verdict on `pod`'s job `key`, whole; None for a gang that is invalid or not
    complete (no quota question yet: the gang placer says why it waits). `planned`: the uids of
    its members with a planned node (an elastic gang's minimum may be planned, not bound)."""
    request: dict[str, int] = dict(pod.requests)
    running = False
    if not is_single(key):
        gang = resolve_gang(snapshot, key, asking=pod)
        if not gang.ready:
            return None
        pending = gang.pending
        if gang.elastic:  # its minimum first, then each extra on its own
            placed = {p.uid for p in gang.bound}.union(planned)
            pending = [pod] if len(placed) >= gang.size else pending[: gang.needed]
        request = total(p.requests for p in pending)
        running = bool(gang.bound)
    # A partly bound gang is running work: it is completed even in a closed queue.
    verdict = ADMITTED if running else check_state(policy, queue)
    if verdict.ok:
        verdict = check_quota(book, queue, request, job_name(key))
    return verdict


def admits_now(policy: Policy, book: QueueBook) -> Callable[[str], bool]:
    """Whether waiting job `key`'s queue admits it now (its state, then its quota). Jobs of one
    shape in one queue get one verdict (thousands may wait refused)."""
    verdicts: dict[tuple[str, tuple[tuple[str, int], ...]], bool] = {}

    def admits(key: str) -> bool:
        job = book.waiting_keys[key]
        shape = (job.queue, tuple(sorted(job.requests.items())))
        ok = verdicts.get(shape)
        if ok is None:
            ok = verdicts[shape] = (
                check_state(policy, job.queue).ok
                and check_quota(book, job.queue, job.requests, job.name).ok
            )
        return ok

    return admits
