"""Whether the cached view can be trusted: listed in full (readiness) and fresh (staleness).

/readyz says ready once every kind has been listed in full (or the view came from a file); a
watch down for longer than `stale_after` seconds makes the view stale, and gangs and queued jobs
wait (the core is told why) while pods outside them keep being scheduled.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Sequence

from extender.cache.reflector import Reflector


class Readiness:
    def __init__(
        self,
        reflectors: Sequence[Reflector],
        *,
        preloaded: bool,
        stale_after: float,
        on_whole: Callable[[], None] = lambda: None,
    ) -> None:
        """`on_whole`: called by each readiness check that finds the first full lists in."""
        self.reflectors = reflectors
        self.preloaded = preloaded
        self.stale_after = stale_after
        self._on_whole = on_whole
        self._listed = False  # every kind listed in full once (see staleness)
        self._heap_settled = False

    def synced(self) -> bool:
        return self.preloaded or all(r.synced.is_set() for r in self.reflectors)

    def contacts(self) -> list[tuple[str, float, bool]]:
        """Per kind: when the API server last sent news of it, and whether it is listed."""
        return [(r.kind, r.last_contact, r.synced.is_set()) for r in self.reflectors]

    def staleness(self) -> str:
        """Why the cached view may not be trusted now, or "" while every watch has been down
        for less than `stale_after` seconds. Before the first full list of every kind it is not
        whole yet: gangs and queued jobs wait (a gang planned on nodes whose pods are not listed
        yet could take room a recorded plan holds)."""
        if not self._listed:
            waiting = [r.kind for r in self.reflectors if not r.synced.is_set()]
            if waiting and not self.preloaded:
                return f"the first full list of {', '.join(waiting)} has not arrived yet"
            self._listed = True
        down = [(r.down_for(), r) for r in self.reflectors if not r.absent]
        down = [(seconds, r) for seconds, r in down if seconds >= self.stale_after]
        if not down:
            return ""
        seconds, worst = max(down, key=lambda d: d[0])
        kinds = ", ".join(sorted(r.kind for _, r in down))
        return (
            f"the API server has not answered the watch of {kinds} for {seconds:.0f} s: "
            f"{worst.down_reason}"
        )

    def ready(self) -> tuple[bool, str]:
        """Ready once every kind has been listed in full (or the view came from a file)."""
        if self.preloaded:
            self._settle_heap()
            self._on_whole()
            return True, "cluster view loaded from file"
        waiting = [r.kind for r in self.reflectors if not r.synced.is_set()]
        if waiting:
            return False, f"waiting for the first full list of {', '.join(waiting)}"
        self._settle_heap()
        self._on_whole()
        stale = self.staleness()
        # An optional kind this cluster does not serve (its CRD is not installed) is read as
        # empty: said here, where people look when a PyTorchJob's or a PodGroup's gang waits.
        absent = sorted(r.kind for r in self.reflectors if r.absent)
        note = f" (not served by this cluster, read as none: {', '.join(absent)})" if absent else ""
        if stale:
            # Still ready: kube-scheduler keeps calling, so pods outside gangs and queues keep
            # being scheduled; gangs and queued jobs wait (the reason says so) until it is fresh.
            return True, f"cache stale: {stale}{note}"
        return True, f"cache synced{note}"

    def _settle_heap(self) -> None:
        """Once the first full lists are in, move the cache's objects out of the garbage
        collector's reach (`gc.freeze`): they live as long as the process, and full collections
        that walk them cost hundreds of milliseconds at 50,000 pods (measured on the preemption
        path). Done once; objects made later are collected as usual."""
        if not self._heap_settled:
            self._heap_settled = True
            gc.collect()
            gc.freeze()
