"""Who holds freed capacity now: the one hold, its deadline, and the cooldown after it lapses.

The waiting job first in line that lacks room gets the *hold* (`hold.py`): capacity that frees up
on nodes it could use is kept for it, for at most `hold_seconds`; then the hold lapses and the job
may not hold again for as long, so the cluster does not idle. Without a policy the first gang to
lack room takes it (`claim`, ranked: partly bound gangs first, then priority, age); with queues
the engine gives it to the head of the fair line (`give`). GangHolding is told from here.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

from extender.core.gangs.hold import FreeOf, Hold
from extender.core.model.notices import Outbox
from extender.core.model.snapshot import PodInfo, Snapshot

Rank = tuple[int, int, float, str]
# The rank of a waiting job (None when it no longer waits)
RankOf = Callable[[Snapshot, str], Rank | None]


def rank(snapshot: Snapshot, key: str, priority: int, created: float) -> Rank:
    """Order of the line: partly bound gangs (to be completed) first, then priority, age."""
    partly_bound = any(p.node_name for p in snapshot.groups.get(key, ()) if p.active)
    return (0 if partly_bound else 1, -priority, created, key)


class HoldKeeper:
    def __init__(self, hold_seconds: float, outbox: Outbox) -> None:
        self.hold_seconds = hold_seconds
        self._hold: Hold | None = None
        self._cooldown: dict[str, float] = {}  # job -> until when it may not hold again
        self._outbox = outbox
        self.version = 0  # bumped when the hold starts or ends

    @property
    def current(self) -> Hold | None:
        return self._hold

    def holds(self, key: str) -> bool:
        return self._hold is not None and self._hold.key == key

    def cooling_until(self, key: str) -> float | None:
        """Until when job `key` may not hold again (None: it may)."""
        return self._cooldown.get(key)

    def state(self) -> tuple[str, float] | None:
        """What a decision that depends on the hold is remembered with."""
        hold = self._hold
        return (hold.key, hold.deadline) if hold is not None else None

    def next_due(self) -> float:
        return self._hold.deadline if self._hold is not None else float("inf")

    def sync(self, now: float, planned: Collection[str]) -> None:
        """A hold past its deadline lapses (its job cools down); one whose job got a plan ends."""
        self._cooldown = {k: until for k, until in self._cooldown.items() if until > now}
        hold = self._hold
        if hold is not None and (now > hold.deadline or hold.key in planned):
            if now > hold.deadline:
                self._cooldown[hold.key] = now + self.hold_seconds
            self._end()

    def claim(
        self,
        snapshot: Snapshot,
        key: str,
        mine: Rank,
        pending: Sequence[PodInfo],
        now: float,
        free_of: FreeOf,
        taken: Collection[str],
        rank_of: RankOf,
    ) -> None:
        """Job `key` (ranked `mine`) lacks room: it takes the hold unless it cools down, holds
        already, or the holder ranks before it."""
        if self._cooldown.get(key, 0.0) > now:
            return
        current = self._hold
        if current is not None:
            if current.key == key:
                return
            holder = rank_of(snapshot, current.key)
            if holder is not None and holder <= mine:
                return
        self._start(snapshot, key, pending, now, free_of, taken)

    def give(
        self,
        snapshot: Snapshot,
        key: str,
        pending: Sequence[PodInfo],
        now: float,
        free_of: FreeOf,
        taken: Collection[str],
        planned: bool,
    ) -> bool:
        """Give the hold to job `key` (the head of the fair line), unless it holds it already,
        has a plan, or its last hold lapsed less than `hold_seconds` ago."""
        if self.holds(key):
            return True
        if self._cooldown.get(key, 0.0) > now or planned:
            return False
        self._start(snapshot, key, pending, now, free_of, taken)
        return True

    def _start(
        self,
        snapshot: Snapshot,
        key: str,
        pending: Sequence[PodInfo],
        now: float,
        free_of: FreeOf,
        taken: Collection[str],
    ) -> None:
        # Built while the previous hold (if any) still stands: see `Hold.begin`.
        hold = Hold.begin(snapshot, key, pending, now + self.hold_seconds, free_of, taken)
        if hold is not None:
            self._hold = hold
            self.version += 1
            self._outbox.holding(key, self.hold_seconds)

    def release(self, key: str | None = None) -> None:
        """End the hold (of job `key` only, when given)."""
        if self._hold is not None and (key is None or self._hold.key == key):
            self._end()

    def _end(self) -> None:
        self._hold = None
        self.version += 1
