"""The evictions preemption decided, queued until the runtime carries them out.

Each victim job's pods go together, with what to tell the people involved: the Event on the
victim (why, for whom) and, once, on the preemptor. An elastic gang's extras go through their
workload where its kind allows it (`shrinks.py`: an elastic Job, PyTorchJob): the
evictions carry the shrink, which the runtime carries out instead of evicting them. The runtime
takes them (`take`) and evicts through the Eviction API while its scheduler leads; what it could
not carry out comes back (`put_back`). Recovery after a restart queues evictions too (rule
`recovery`): the bound members of a gang that can no longer be completed, and the victims a
recorded plan still waits for.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from extender.core.gangs.gang import resolve_gang
from extender.core.model.keys import job_key, job_name
from extender.core.model.quantity import format_amount
from extender.core.model.resources import GPU
from extender.core.model.snapshot import PodInfo, Snapshot
from extender.core.preemption.shrinks import Shrink, through_workload
from extender.core.preemption.victim_candidates import RunningJob
from extender.core.queues.book import QueueBook
from extender.core.queues.policy import PreemptionRules

RulesOf = Callable[[str | None], PreemptionRules]
WORKLOAD_SECONDS = 600.0  # how long a pod a shrink takes is kept from kube-scheduler's preemption


@dataclass(frozen=True, slots=True)
class Eviction:
    """One pod to evict, with what to tell the people involved."""

    job: str  # the victim job (its pods go together)
    namespace: str
    name: str
    uid: str
    grace_seconds: int | None
    rule: str  # priority or reclaim
    queue: str  # the victim's queue ("" for none)
    gpu_seconds: float  # what the victim's job had run, shared among its pods
    message: str  # the Event on the victim
    preemptor: tuple[str, str]  # namespace, name of the preemptor's first pod
    preemptor_message: str  # the Event on the preemptor (sent once, with its first victim)
    plan: str = ""  # the preemptor's job: its plan is recorded before the first eviction
    # An elastic gang's extras taken back through their workload (`shrinks.py`): the runtime
    # lowers its size instead of evicting the pod (every pod of the shrink carries it).
    shrink: Shrink | None = None


class EvictionQueue:
    def __init__(self) -> None:
        self.pending: list[Eviction] = []
        # pods a workload's smaller size takes, until when: kube-scheduler's preemption is not
        # to delete them (a deleted pod counts as failed while its index is below the size)
        self.through_workload: dict[str, float] = {}
        self.shrunk_at: dict[str, float] = {}  # "Kind ns/name" -> when it was last made smaller

    def queue(
        self,
        snapshot: Snapshot,
        victims: Sequence[RunningJob],
        key: str,
        pods: Sequence[PodInfo],
        queue: str | None,
        rule: str,
        rules_of: RulesOf,
        book: QueueBook | None,
        now: float,
    ) -> None:
        """The victims' pods of job `key`'s plan, chosen by `rule` (priority or reclaim)."""
        preemptor = job_name(key)
        first = min(pods, key=lambda p: (p.created, p.name))
        if rule == "reclaim" and book is not None and queue is not None:
            resource = GPU if GPU in book.guarantee[queue] else next(iter(book.guarantee[queue]))
            why = (
                f"reclaim for queue {queue} (guarantee "
                f"{format_amount(resource, book.guarantee[queue].get(resource, 0))} {resource}, "
                f"using {format_amount(resource, book.state[queue].used.get(resource, 0))})"
            )
        else:
            where = f"in queue {queue}" if queue else "(no queue)"
            why = f"priority {first.priority} {where}"
        names = ", ".join(
            f"{job_name(v.key)} (extra pod {v.pods[0].name})" if v.extra else job_name(v.key)
            for v in victims
        )
        told = f"gangplank evicts {len(victims)} job(s) for this {preemptor}: {why}: {names}"
        ways = self._ways(snapshot, victims, now)
        seen: set[str] = set()
        for victim in victims:
            going = [*victim.pods, *victim.rest]
            share = victim.gpu_seconds(now) / len(going)
            shrink, instead = ways.get(victim.key, (None, "")) if victim.extra else (None, "")
            if shrink is not None:
                self.shrunk_at[shrink.shown] = now
                told = f"{told}; {shrink.says()}"
                message = (
                    f"taken back by gangplank through its workload: {why}, for {preemptor} "
                    f"({shrink.says()}, whose controller removes this extra pod of elastic "
                    f"{job_name(victim.key)} without counting it as failed; the minimum keeps "
                    "running)"
                )
            elif victim.extra:
                message = (
                    f"evicted by gangplank: {why}, for {preemptor} (an extra pod of elastic "
                    f"{job_name(victim.key)}, beyond its minimum: the minimum keeps running; "
                    f"evicted, not taken back through its workload: {instead})"
                )
            else:
                together = f"all {len(going)} pod(s) of {job_name(victim.key)} go together"
                message = f"evicted by gangplank: {why}, for {preemptor} ({together})"
            for pod in going:
                if pod.uid in seen:
                    continue
                seen.add(pod.uid)
                self.pending.append(
                    Eviction(
                        job=victim.key,
                        namespace=pod.namespace,
                        name=pod.name,
                        uid=pod.uid,
                        grace_seconds=rules_of(victim.queue).grace_seconds,
                        rule=rule,
                        queue=victim.queue or "",
                        gpu_seconds=share,
                        message=message,
                        preemptor=(first.namespace, first.name),
                        preemptor_message=told,
                        plan=key,
                        shrink=shrink,
                    )
                )
                if shrink is not None:
                    self.through_workload[pod.uid] = now + WORKLOAD_SECONDS

    def _ways(
        self, snapshot: Snapshot, victims: Sequence[RunningJob], now: float
    ) -> dict[str, tuple[Shrink | None, str]]:
        """For each gang only extras of which are taken: the shrink of its workload that takes
        them all, or why they are evicted instead."""
        self.through_workload = {u: t for u, t in self.through_workload.items() if t > now}
        whole = {v.key for v in victims if not v.extra}
        taken: dict[str, dict[str, PodInfo]] = {}
        for victim in victims:
            if victim.extra and victim.key not in whole:
                taken.setdefault(victim.key, {}).update(
                    (p.uid, p) for p in (*victim.pods, *victim.rest)
                )
        return {
            key: through_workload(snapshot, resolve_gang(snapshot, key), pods.values())
            for key, pods in taken.items()
        }

    def evict_broken(self, key: str, pods: Sequence[PodInfo], now: float) -> None:
        """Evict the bound members of gang `key`, whole: after a restart its recorded plan no
        longer holds and its missing members fit nowhere, so the room goes to gangs with more
        members bound and its GPUs come back (rule `recovery`; no eviction budget: these pods
        hold GPUs for a job that cannot run)."""
        bound = [p for p in pods if p.node_name is not None and p.active]
        name = job_name(key)
        why = (
            f"evicted by gangplank: {name} runs {len(bound)} of its pods and the rest fit nowhere "
            "since gangplank restarted (gangs with more pods bound keep the room); "
            f"all {len(bound)} bound pod(s) go together so their GPUs come back"
        )
        self._recover(bound, why, min(pods, key=lambda p: (p.created, p.name)), now)

    def evict_recorded(
        self, key: str, victims: Sequence[PodInfo], preemptor: PodInfo, now: float
    ) -> None:
        """Evict the victims a restored plan of job `key` still waits for: the process that
        chose them stopped before it evicted them all (none is evicted twice: pods already
        leaving are not among them)."""
        why = (
            f"evicted by gangplank: finishing the preemption planned for {job_name(key)} "
            "before gangplank restarted (its plan was recorded with these victims)"
        )
        self._recover(victims, why, preemptor, now, plan=key)

    def evict_whole(
        self, pods: Sequence[PodInfo], rule: str, why: str, now: float, told: PodInfo | None = None
    ) -> None:
        """Evict `pods` (one job's, bound) together by `rule` (no budget: rules that free what
        is held and not used, such as `not-ready`, `stale-gang`, `max-runtime`, `idle`)."""
        if pods:
            first = told or min(pods, key=lambda p: (p.created, p.name))
            self._recover(pods, why, first, now, rule=rule)

    def _recover(
        self,
        pods: Sequence[PodInfo],
        why: str,
        told: PodInfo,
        now: float,
        plan: str = "",
        rule: str = "recovery",
    ) -> None:
        queued = {e.uid for e in self.pending}
        for pod in pods:
            if pod.uid in queued:
                continue
            self.pending.append(
                Eviction(
                    job=job_key(pod),
                    namespace=pod.namespace,
                    name=pod.name,
                    uid=pod.uid,
                    grace_seconds=None,
                    rule=rule,
                    queue="",
                    gpu_seconds=pod.gpu_seconds(now),
                    message=why,
                    preemptor=(told.namespace, told.name),
                    preemptor_message=why,
                    plan=plan,
                )
            )

    def take(self) -> list[Eviction]:
        taken, self.pending = self.pending, []
        return taken

    def put_back(self, evictions: Sequence[Eviction]) -> None:
        """Evictions taken but not carried out (their plan could not be recorded): next pass."""
        self.pending[:0] = evictions
