"""Prompt retries: nudge parked gang members once their gang can go ahead.

kube-scheduler parks a pod that every node rejected and retries it only on a cluster event or
when the pod itself is updated (fixtures/kube-scheduler/NOTES.md). When the last member of a gang
is created, kube-scheduler may retry the parked members before gangplank's cache has seen the
new pod; rejected again, they would wait for the periodic flush (up to 5 minutes). So gangplank
updates them itself — an annotation patch — as soon as its own view says the gang can be
planned. Only while its kube-scheduler is the leader (`kube/leader.py`): the other replica's pods
are not parked.

What it remembers of parked pods lives in memory, so when it starts, when its scheduler takes the
Lease, and when its view is fresh again after an outage, the core is asked once about every
pending pod of the profile (`Engine.adopt_pending`, in `service/periodic.py`):
kube-scheduler may hold pods parked that this process never saw filtered, and without a nudge
they would wait for its 5-minute flush. Nudges go out at most `max_per_pass` a pass; the rest
follow in the next passes. The thread runs the periodic pass (`service/periodic.py`) step by
step (`service/steps.py`).
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Callable
from functools import partial
from typing import TypeVar

from extender.kube.leader import Leadership
from extender.kube.patcher import Patcher
from extender.service.steps import Steps

log = logging.getLogger("gangplank.kick")
T = TypeVar("T")

MAX_NUDGES_PER_PASS = 500  # at most this many patches a pass (a pass every 0.5 s)


class Kicker:
    """A thread that asks the runtime which pods to nudge, and nudges them."""

    def __init__(
        self,
        candidates: Callable[[], list[tuple[str, str]]],
        patcher: Patcher,
        leadership: Leadership,
        interval: float = 0.5,
        on_kick: Callable[[int], None] = lambda n: None,
        after: Callable[[], None] = lambda: None,
        every: Callable[[], None] = lambda: None,
        on_lead: Callable[[], None] = lambda: None,
        max_per_pass: int = MAX_NUDGES_PER_PASS,
        on_error: Callable[[str], None] = lambda step: None,
    ) -> None:
        self._steps = Steps(on_error)  # a step of the pass raised (counted: periodic errors)
        # The whole pass (a bug outside its steps), told apart from its step "pass" (the work
        # it asks for), so that neither's failure reads as the other working again.
        self._passes = Steps(on_error)
        self._after = after  # slower work of the pass (Events), once the nudges are out
        self._every = every  # work of every pass, leading or not (looking for late CRDs)
        # Called on the first pass that leads after one that did not: the scheduler took the
        # Lease (not at start: the runtime looks through its pods once the lists are in).
        self._on_lead = on_lead
        self._leading: bool | None = None  # None: not asked yet
        self._max_per_pass = max_per_pass
        self._backlog: dict[tuple[str, str], None] = {}  # nudges left for the next passes
        self._candidates = candidates
        self._patcher = patcher
        self.leadership = leadership
        self._interval = interval
        self._on_kick = on_kick
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def run_once(self) -> int:
        """One pass. A step that raises is logged (`steps.py`: once a minute while it repeats)
        and counted (`on_error(step)`), and the pass goes on with the next step: a bug in one
        never silences the others, nor the passes after it."""
        self._step("every", self._every)
        if not self._step("leadership", self.leadership.is_leader):
            self._leading = False
            self._backlog.clear()  # the other replica's scheduler has its own pods parked
            return 0
        if self._leading is False:
            self._step("lead-taken", self._on_lead)
        self._leading = True
        self._backlog.update(dict.fromkeys(self._step("pass", self._candidates) or ()))
        refs = list(itertools.islice(self._backlog, self._max_per_pass))
        for ref in refs:
            del self._backlog[ref]
            self._step("nudge", partial(self._patcher.kick, *ref))
        if refs:
            later = f" ({len(self._backlog)} more in the next passes)" if self._backlog else ""
            log.info("nudged %d parked pod(s) to be retried now%s", len(refs), later)
            self._on_kick(len(refs))
        self._step("events", self._after)
        return len(refs)

    def _step(self, step: str, work: Callable[[], T]) -> T | None:
        return self._steps.run(step, work)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="kicker", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            self._passes.run("pass", self.run_once)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(2)
