"""Garbage-collection pauses, timed.

A collection stops every thread of the worker, so a long one delays every call in flight,
pass-through pods' included, without any call or pass holding the decision lock. Each one is
observed by generation (`gangplank_gc_pause_seconds`) and one of `slow` seconds or more is
logged, so a latency spike can be told apart from a slow call or a starved machine.
"""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import Callable
from typing import Any

log = logging.getLogger("gangplank")

Observe = Callable[[int, float], None]  # generation, seconds paused


class GcPauses:
    def __init__(
        self,
        observe: Observe,
        *,
        slow: float = 0.1,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.observe = observe
        self.slow = slow
        self._clock = clock
        self._began = 0.0

    def install(self) -> None:
        if self._callback not in gc.callbacks:
            gc.callbacks.append(self._callback)

    def remove(self) -> None:
        if self._callback in gc.callbacks:
            gc.callbacks.remove(self._callback)

    def _callback(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._began = self._clock()
            return
        paused = self._clock() - self._began
        generation = int(info.get("generation", 0))
        self.observe(generation, paused)
        if paused >= self.slow:
            log.warning(
                "garbage collection (generation %d) paused the worker %.0f ms "
                "(%d objects collected; every call in flight waited)",
                generation,
                paused * 1e3,
                int(info.get("collected", 0)),
            )
