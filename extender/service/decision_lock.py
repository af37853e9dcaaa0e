"""The decision lock, timed: which call or periodic pass holds it, for how long, and who waits.

Every verb and every periodic pass reads and changes the decision state under one lock, so a
holder that takes long delays every call behind it, pass-through pods' included. This lock says
so: each hold and each wait is observed per holder (`gangplank_decision_lock_*_seconds`), a hold
longer than `slow` seconds is logged with its holder (and, for a verb, its pod), and a watchdog
logs the stack of a holder that keeps it past `stack_after` seconds, while it still holds it.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import TracebackType

from extender.observe.logs import current_call

log = logging.getLogger("gangplank")

Observe = Callable[[str, float, float], None]  # holder, seconds waited, seconds held


def _ignore(holder: str, waited: float, held: float) -> None:
    del holder, waited, held


class DecisionLock:
    """A `threading.Lock` that times its holders. `with lock:` names the holder by the call
    being answered (its verb); `with lock.by("periodic pass"):` names it outright."""

    def __init__(
        self,
        observe: Observe = _ignore,
        *,
        slow: float = 0.25,
        stack_after: float = 1.0,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self._lock = threading.Lock()
        self.observe = observe
        self.slow = slow
        self.stack_after = stack_after
        self._clock = clock
        # The current hold: (thread ident, holder, pod, acquired at, sequence number).
        self._hold: tuple[int, str, str, float, int] | None = None
        self._sequence = 0
        self._watchdog: threading.Thread | None = None
        self._stop = threading.Event()

    @contextmanager
    def by(self, holder: str) -> Iterator[None]:
        self.acquire(holder)
        try:
            yield
        finally:
            self.release()

    def __enter__(self) -> None:
        self.acquire("")

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.release()

    def acquire(self, holder: str) -> None:
        asked = self._clock()
        self._lock.acquire()
        got = self._clock()
        call = current_call()
        name = holder or call.get("verb") or "other"
        self._sequence += 1
        self._hold = (threading.get_ident(), name, call.get("pod", ""), got, self._sequence)
        self._waited = got - asked

    def release(self) -> None:
        hold, waited = self._hold, self._waited
        self._hold = None
        released = self._clock()
        self._lock.release()
        if hold is None:
            return
        _, holder, pod, got, _ = hold
        held = released - got
        self.observe(holder, waited, held)
        if held >= self.slow:
            log.warning(
                "decision lock held %.0f ms by %s%s (calls and passes behind it waited)",
                held * 1e3,
                holder,
                f" for pod {pod}" if pod else "",
            )

    def locked(self) -> bool:
        return self._lock.locked()

    def start_watchdog(self, every: float = 0.25) -> None:
        """Log the stack of a holder that keeps the lock past `stack_after`, once per hold."""
        if self._watchdog is not None:
            return
        self._stop.clear()
        self._watchdog = threading.Thread(
            target=self._watch, args=(every,), name="lock-watchdog", daemon=True
        )
        self._watchdog.start()

    def stop_watchdog(self) -> None:
        self._stop.set()
        if self._watchdog is not None:
            self._watchdog.join(1.0)
            self._watchdog = None

    def _watch(self, every: float) -> None:
        told = 0
        while not self._stop.wait(every):
            hold = self._hold
            if hold is None or hold[4] == told:
                continue
            ident, holder, pod, got, sequence = hold
            held = self._clock() - got
            if held < self.stack_after:
                continue
            frame = sys._current_frames().get(ident)
            if frame is None:
                continue
            told = sequence
            log.warning(
                "decision lock held %.1f s so far by %s%s; where it is:\n%s",
                held,
                holder,
                f" for pod {pod}" if pod else "",
                "".join(traceback.format_stack(frame)).rstrip(),
            )
