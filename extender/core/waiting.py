"""The waiting room: every pod parked by a "no" of gangplank's, why it waits, and the one answer
to "whom should kube-scheduler retry now".

kube-scheduler parks a pod its filter refused and retries it only when told (or after minutes).
So each refusal is written down here, with the kind of wait, and `nudges` says, once per pass,
which parked pods may go ahead:

- a gang member (`Rejection`): when its gang became valid, complete, or fits now (a dry run, at
  most once per kick interval per gang and only when the cluster changed);
- a member parked before its gang got a plan: as soon as the plan is made (`planned`), in
  the plan or not (an elastic gang's extra the minimum was planned without);
- a planned member waiting for preemption's victims to leave: once they are gone;
- a job refused by its queue (`refuse`): when its queue admits it (`queue_nudges`);
- a pod told to wait for a fresh view of the cluster (`wait_for_fresh_view`): once it is fresh;
- pods handed in by others (`nudge_later`: members of restored plans, refused jobs that got a
  preemption plan), and pods of a requeued job once its backoff ends (`nudge_at`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from extender.core.gangs.gang import Gang, resolve_gang
from extender.core.gangs.holder import Rank, rank
from extender.core.model.answers import FilterResult
from extender.core.model.keys import job_name
from extender.core.model.notices import Outbox
from extender.core.model.rejection import Rejection
from extender.core.model.snapshot import PodInfo, Snapshot

Ref = tuple[str, str]  # namespace, name: what a nudge needs
GANG_FORGET_SECONDS = 60.0  # a waiting gang whose pods are all gone is forgotten after this
FORGET_SECONDS = 600.0  # a refused job the cache no longer shows waiting is forgotten after this
STALE_WAITING_LIMIT = 100_000  # pods remembered to be nudged once the view is fresh


@dataclass
class Waiting:
    """A gang with parked members."""

    key: str
    priority: int
    created: float
    rejected: dict[str, tuple[Ref, Rejection]] = field(default_factory=dict)  # uid -> (pod, why)
    kicked_at: float = float("-inf")
    updated: float = 0.0  # last rejection
    checked: tuple[int, float] = (-1, float("-inf"))  # snapshot generation and time of a dry run
    reason: str = ""  # the last reason given (for `gangplank why`)


@dataclass
class Refused:
    """A job its queue refused, with its parked pods."""

    queue: str
    rule: str
    since: float
    pods: dict[str, Ref] = field(default_factory=dict)  # uid -> pod


class WaitingRoom:
    def __init__(self, outbox: Outbox) -> None:
        self._outbox = outbox  # QueueHeld is told from here, once per refusal
        self._gangs: dict[str, Waiting] = {}
        self._planned: dict[str, Ref] = {}  # members parked before their plan: nudge now
        self._awaiting: dict[str, tuple[Ref, str]] = {}  # planned, waiting for victims: job
        self._refused: dict[str, Refused] = {}
        self._stale: dict[str, Ref] = {}  # waiting for a fresh view
        self._later: dict[str, Ref] = {}  # handed in by others
        self._timed: dict[str, tuple[Ref, float]] = {}  # waiting out a backoff: pod, until
        self._nudged: dict[str, float] = {}  # job -> when its refused pods were last nudged
        self._reasons: dict[str, tuple[str, float]] = {}  # job -> (last reason, when)
        self._refused_checked: tuple[object, ...] = ()
        self._forget_due = float("inf")

    # ---- gangs ------------------------------------------
    def park(self, gang: Gang, pod: PodInfo, kind: Rejection, reason: str, now: float) -> None:
        """A member of `gang` was refused (or parked by kube-scheduler without asking)."""
        waiting = self._gangs.get(gang.key)
        if waiting is None:
            waiting = self._gangs[gang.key] = Waiting(gang.key, gang.priority, gang.created)
        waiting.updated = now
        waiting.rejected[pod.uid] = ((pod.namespace, pod.name), kind)
        if reason:
            waiting.reason = reason
        self._forget_due = min(self._forget_due, now + GANG_FORGET_SECONDS)

    def planned(self, key: str, asking: str) -> None:
        """Job `key` got a plan: its members parked before are retried now (a planned one's
        node waits; one the plan left out, such as an elastic gang's extra, is placed alone or
        told why it waits); `asking`, whose filter call made the plan, is answered already."""
        waiting = self._gangs.pop(key, None)
        if waiting is not None:
            self._planned.update(
                {uid: ref for uid, (ref, _) in waiting.rejected.items() if uid != asking}
            )

    def awaits_victims(self, pod: PodInfo, key: str, waits: bool) -> None:
        """A planned member parked while its plan's victims leave (nudged once they are gone:
        their deletion may reach kube-scheduler before it reaches gangplank's cache)."""
        if waits:
            self._awaiting[pod.uid] = ((pod.namespace, pod.name), key)
        else:
            self._awaiting.pop(pod.uid, None)

    def forget_gone(self, snapshot: Snapshot, now: float) -> None:
        """A gang whose pods are all gone stops waiting (not at once: the cache may lag behind
        the pods kube-scheduler asks about)."""
        if now <= self._forget_due:
            return
        for key in [
            k
            for k, w in self._gangs.items()
            if not snapshot.groups.get(k) and now - w.updated > GANG_FORGET_SECONDS
        ]:
            del self._gangs[key]
        self._forget_due = min(
            (w.updated + GANG_FORGET_SECONDS for w in self._gangs.values()), default=float("inf")
        )

    def gang_nudges(
        self,
        snapshot: Snapshot,
        now: float,
        interval: float,
        victims_left: Callable[[str, str], bool | None],
        fits_now: Callable[[Gang], bool],
    ) -> list[Ref]:
        """Parked members whose gang can now go ahead. `victims_left(job, uid)`: whether the
        plan placing `uid` waits for no victim now (None: no such plan any more)."""
        out = list(self._planned.values())
        self._planned.clear()
        for uid, (ref, key) in list(self._awaiting.items()):
            left = victims_left(key, uid)
            if left is None:
                del self._awaiting[uid]
            elif left:
                out.append(ref)
                del self._awaiting[uid]
        for key, waiting in self._gangs.items():
            if not waiting.rejected or now - waiting.kicked_at < interval:
                continue
            gang = resolve_gang(snapshot, key)
            if gang.problem:
                continue
            # Parked members learn what changed: an invalid gang became valid, an incomplete one
            # complete, or one that lacked room fits now (then they start).
            complete = len(gang.members) >= gang.size
            whys = {why for _, why in waiting.rejected.values()}
            fits = False
            generation, checked_at = waiting.checked
            # A dry run costs a plan (milliseconds at 5,000 nodes): only when the cluster changed,
            # and at most once per kick interval per gang.
            if (
                complete
                and Rejection.NO_ROOM in whys
                and generation != snapshot.generation
                and now - checked_at >= interval
            ):
                waiting.checked = (snapshot.generation, now)
                fits = fits_now(gang)
            ready = {Rejection.INVALID}
            if complete:
                ready.add(Rejection.INCOMPLETE)
            if fits:
                ready.add(Rejection.NO_ROOM)
            pending = {p.uid for p in gang.pending}
            chosen = {
                uid: ref
                for uid, (ref, why) in waiting.rejected.items()
                if uid in pending and why in ready
            }
            if not chosen:
                continue
            out += chosen.values()
            for uid in chosen:
                del waiting.rejected[uid]
            waiting.kicked_at = now
        return out

    # ---- queues ------------------------------------------
    def refuse(
        self, key: str, pod: PodInfo, queue: str, rule: str, reason: str | None, now: float
    ) -> bool:
        """`pod`'s job is refused by its queue (to nudge it once it may go; `reason`: what to
        tell, None to leave the last one). News (a new refusal, or another rule) is told on the
        pod (QueueHeld); returns whether it was news."""
        entry = self._refused.get(key)
        news = entry is None or entry.rule != rule
        if entry is None or news:
            entry = self._refused[key] = Refused(queue, rule, now)
        entry.pods[pod.uid] = (pod.namespace, pod.name)
        if reason is not None:
            self._reasons[key] = (reason, now)
            if news:
                self._outbox.queue_held(key, reason, pod)
        return news

    def admitted(self, key: str) -> Refused | None:
        """Job `key` is admitted now: it is no longer refused (its entry, if it was)."""
        return self._refused.pop(key, None)

    def queue_nudges(
        self,
        waiting_jobs: Callable[[str], Sequence[PodInfo] | None],
        admits: Callable[[str], bool],
        seen: tuple[object, ...],
        policy_changed: bool,
        now: float,
        interval: float,
    ) -> list[Ref] | None:
        """Refused jobs their queue admits now (None: nothing new since the last look).
        `waiting_jobs(job)`: its pods waiting (None: it waits no more); `admits(job)`: the
        queue's verdict now; `seen`: the state the last look was made on (the same state: no
        refused job can pass now)."""
        seen = (*seen, len(self._refused))
        if not policy_changed and seen == self._refused_checked:
            return None
        self._refused_checked = seen
        out: list[Ref] = []
        for key, entry in list(self._refused.items()):
            pods = waiting_jobs(key)
            if pods is None:
                if policy_changed and entry.rule == "unknown-queue":
                    out += entry.pods.values()  # the new policy may know the queue
                    del self._refused[key]
                elif now - entry.since > FORGET_SECONDS:
                    del self._refused[key]
                continue
            if now - self._nudged.get(key, float("-inf")) < interval:
                continue
            if admits(key):
                waiting = {p.uid for p in pods}
                out += [ref for uid, ref in entry.pods.items() if uid in waiting]
                del self._refused[key]
                self._nudged[key] = now
        for store in (self._reasons, self._nudged):
            for key in [k for k, v in store.items() if _when(v) < now - FORGET_SECONDS]:
                del store[key]
        return out

    # ---- a stale view, and nudges handed in ------------------------------------------
    def wait_for_fresh_view(
        self,
        pod: PodInfo,
        key: str,
        queue: str | None,
        stale: str,
        names: Sequence[str],
        now: float,
    ) -> FilterResult:
        """While the view is stale, a gang or a queued job waits: nothing is planned or admitted
        on stale data."""
        where = f" (queue {queue})" if queue else ""
        reason = (
            f"{job_name(key)}{where} waits: gangplank's view of the cluster is stale "
            f"({stale}); gangs and queued jobs are not planned or admitted on it until it "
            "is fresh (pods outside gangs and queues are still scheduled)"
        )
        self._reasons[key] = (reason, now)
        if len(self._stale) < STALE_WAITING_LIMIT:
            self._stale[pod.uid] = (pod.namespace, pod.name)
        return FilterResult(passed=[], unresolvable=dict.fromkeys(names, reason))

    def nudge_later(self, refs: dict[str, Ref] | Iterable[tuple[str, Ref]]) -> None:
        self._later.update(refs)

    def nudge_at(self, pod: PodInfo, when: float) -> None:
        """`pod` waits until `when` (a requeued job's backoff): nudged then."""
        self._timed[pod.uid] = ((pod.namespace, pod.name), when)

    def handed_in(self, fresh: bool, now: float) -> list[Ref]:
        """Pods handed in to be nudged, those whose wait ends by `now`, and (once the view is
        fresh) those that waited for it."""
        out: list[Ref] = [ref for ref, when in self._timed.values() if when <= now]
        if out:
            self._timed = {u: (r, w) for u, (r, w) in self._timed.items() if w > now}
        if self._stale and fresh:
            out += self._stale.values()
            self._stale = {}
        if self._later:
            out += self._later.values()
            self._later = {}
        return out

    # ---- what people read ------------------------------------------
    def note_reason(self, key: str, reason: str, now: float) -> None:
        self._reasons[key] = (reason, now)

    def reason_of(self, key: str) -> str:
        found = self._reasons.get(key)
        return found[0] if found else ""

    def refusal_of(self, key: str) -> Refused | None:
        return self._refused.get(key)

    def refusals(self) -> Iterator[tuple[str, Refused]]:
        return iter(list(self._refused.items()))

    def gangs(self) -> Iterator[Waiting]:
        return iter(list(self._gangs.values()))

    def is_refused(self, key: str) -> bool:
        return key in self._refused

    def gang(self, key: str) -> Waiting | None:
        return self._gangs.get(key)

    def gang_keys(self) -> Collection[str]:
        return self._gangs.keys()

    def parked_kind(self, key: str, uid: str) -> Rejection | None:
        waiting = self._gangs.get(key)
        found = waiting.rejected.get(uid) if waiting is not None else None
        return found[1] if found is not None else None

    def rank(self, snapshot: Snapshot, key: str) -> Rank | None:
        """The place of gang `key` in the line for the hold (None: it does not wait)."""
        waiting = self._gangs.get(key)
        return rank(snapshot, key, waiting.priority, waiting.created) if waiting else None

    def gangs_waiting(self) -> int:
        return len(self._gangs)


def _when(value: tuple[str, float] | float) -> float:
    return float(value[1] if isinstance(value, tuple) else value)
