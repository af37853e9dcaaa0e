"""The evictions preemption decided, queued until the runtime carries them out.

Each victim job's pods go together, with what to tell the people involved: the Event on the
victim (why, for whom) and, once, on the preemptor. The runtime takes them (`take`) and evicts
through the Eviction API while its scheduler leads; what it could not carry out comes back
(`put_back`). Recovery after a restart queues evictions too (rule `recovery`): the bound members
of a gang that can no longer be completed, and the victims a recorded plan still waits for.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from extender.core.model.keys import job_key, job_name
from extender.core.model.quantity import format_amount
from extender.core.model.resources import GPU
from extender.core.model.snapshot import PodInfo
from extender.core.preemption.victim_candidates import RunningJob
from extender.core.queues.book import QueueBook
from extender.core.queues.policy import PreemptionRules

RulesOf = Callable[[str | None], PreemptionRules]


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


class EvictionQueue:
    def __init__(self) -> None:
        self.pending: list[Eviction] = []

    def queue(
        self,
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
        seen: set[str] = set()
        for victim in victims:
            going = [*victim.pods, *victim.rest]
            share = victim.gpu_seconds(now) / len(going)
            if victim.extra:
                together = (
                    f"an extra pod of elastic {job_name(victim.key)}, beyond its minimum: the "
                    "minimum keeps running"
                )
            else:
                together = f"all {len(going)} pod(s) of {job_name(victim.key)} go together"
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
                        message=f"evicted by gangplank: {why}, for {preemptor} ({together})",
                        preemptor=(first.namespace, first.name),
                        preemptor_message=told,
                        plan=key,
                    )
                )

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
