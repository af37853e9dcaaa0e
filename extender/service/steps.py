"""The steps of the periodic pass (`kicker.py`, `periodic.py`, `evictions.py`): one that raises is
counted and the pass goes on with the next, and its log says so without drowning what else it
says: a pass runs every half second, and a step that cannot work (a ConfigMap it may not read, an
API server away) would otherwise write a traceback each time.

Per step: its first failure is one line (with the traceback when the error is a bug, not a fault
of the outside world told in words), the same failure again at most one line every
`TELL_EVERY_SECONDS` with how often it failed meanwhile, and one line when the step works again.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from extender.kube.binder import api_message
from extender.kube.requeue_store import RequeueStoreError

log = logging.getLogger("gangplank.kick")
T = TypeVar("T")

TELL_EVERY_SECONDS = 60.0
# Errors whose message says all there is to say (the API server's or a store's words): told
# without a traceback.
TOLD_IN_WORDS: tuple[type[BaseException], ...] = (
    RequeueStoreError,
    ApiException,
    HTTPError,
    OSError,
)


@dataclass
class _Failing:
    since: float  # when the step began to fail (monotonic)
    untold: int = 0  # failures no line has told yet
    total: int = 0  # failures since it last worked
    told: bool = False  # a line said it fails


class Steps:
    """Runs steps; `on_error(step)` counts each failure (the metric)."""

    def __init__(
        self,
        on_error: Callable[[str], None],
        *,
        every: float = TELL_EVERY_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._on_error = on_error
        self._every = every
        self._clock = clock
        self._failing: dict[str, _Failing] = {}
        # When a line last told of each step: a step run once per item (a nudge per pod, an
        # eviction per job) that fails for one and works for the next is told no more often.
        self._told_at: dict[str, float] = {}
        self._lock = threading.Lock()  # evictions run steps on threads of their own

    def run(self, step: str, work: Callable[[], T]) -> T | None:
        """What `work` returns, or None when it raised: the error is logged as the module says
        and counted, and the caller goes on with its next step: a bug in one never silences the
        others, nor the passes after it."""
        try:
            result = work()
        except Exception as err:
            self._failed(step, err)
            self._on_error(step)
            return None
        if step in self._failing:
            self._worked(step)
        return result

    def _failed(self, step: str, err: Exception) -> None:
        now = self._clock()
        with self._lock:
            failing = self._failing.setdefault(step, _Failing(since=now))
            failing.total += 1
            failing.untold += 1
            if now - self._told_at.get(step, float("-inf")) < self._every:
                return
            self._told_at[step] = now
            untold, failing.untold = failing.untold, 0
            first, failing.told = not failing.told, True
        if first:
            log.error(
                "periodic pass: step %r failed; the pass goes on (told again once a minute "
                "while it fails): %s",
                step,
                _short(err),
                exc_info=None if isinstance(err, TOLD_IN_WORDS) else err,
            )
        else:
            log.error(
                "periodic pass: step %r still fails (%d time(s) since the last line, for %.0f s "
                "in all): %s",
                step,
                untold,
                now - failing.since,
                _short(err),
            )

    def _worked(self, step: str) -> None:
        now = self._clock()
        with self._lock:
            failing = self._failing.pop(step, None)
            if failing is None or not failing.told:
                return
            self._told_at[step] = now
        log.info(
            "periodic pass: step %r works again (it failed %d time(s) over %.0f s)",
            step,
            failing.total,
            now - failing.since,
        )


def _short(err: Exception) -> str:
    """One line of the error: the API server's words for a refused call, else its message (with
    its type when it is a bug's)."""
    if isinstance(err, ApiException):
        return f"HTTP {err.status} {err.reason}: {api_message(err)}"
    text = " ".join(str(err).split()) or "no message"
    return text if isinstance(err, TOLD_IN_WORDS) else f"{type(err).__name__}: {text}"
