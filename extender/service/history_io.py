"""The queues' usage history (the policy's `fairness:`) kept in the cluster, for the periodic pass.

The core samples each queue's use into its history every pass (`Engine.sample_usage`). This
module keeps that history across restarts and failovers in one ConfigMap
(`--usage-history-configmap`, one data key, `kube/requeue_store.py` writes it):

- read back once the cache is synced after a start, and again on taking the Lease; until it is,
  the fair order is by current use alone (today's), and says so: `/readyz`'s detail,
  `gangplank status`, `gangplank queues`, `gangplank_usage_history_up` 0. A read that fails is
  tried again every pass (nothing is written meanwhile: what could not be read is not
  overwritten).
- a record that is not a history (hand-edited, another version) is lost: it is said the same
  way until this leader has written its own over it (a minute later), from which on the history
  starts again from what this process sampled.
- written by the leader at most once every WRITE_SECONDS: a failover loses at most that much of
  the history, and the API server sees one small write a minute.

Nothing is read or written while the policy keeps no history.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from extender.core.engine import Engine
from extender.observe.metrics import Metrics
from extender.service.decision_lock import DecisionLock
from extender.service.lifecycle_io import RecordStore

WRITE_SECONDS = 60.0
KEY = "history"  # the ConfigMap's one data key
NOT_READ = "not read back yet from the cluster"

log = logging.getLogger("gangplank")


class HistoryIO:
    def __init__(
        self,
        scheduler: Engine,
        lock: DecisionLock,
        metrics: Metrics,
        store: RecordStore | None,
        clock: Callable[[], float],
    ) -> None:
        """`clock`: the runtime's (the one the core samples by), for the write interval."""
        self.scheduler = scheduler
        self.clock = clock
        self.lock = lock
        self.metrics = metrics
        self.store = store
        self._loaded = False
        self._written_at = float("-inf")  # by `clock`
        self._overwrite = False  # the record read was no history: known once ours replaces it
        if store is not None:
            scheduler.history_known(NOT_READ)

    def read(self) -> None:
        """The history kept by earlier processes, back in the core (once per lead); raises
        when the ConfigMap cannot be read (the pass's step says so; tried again next pass)."""
        if self._loaded or self.store is None or not self.scheduler.history.on:
            return
        try:
            found = self.store.load().get(KEY)
        except Exception as err:
            problem = " ".join(str(err).split()) or type(err).__name__
            self._lost(f"cannot be read: {problem}")
            raise
        with self.lock.by("usage history read back"):
            try:
                self.scheduler.history_known("", found)
            except ValueError as err:
                self._overwrite = True
                # not overwritten before the next write is due: the loss stays shown that long
                self._written_at = self.clock()
                self.scheduler.history_known(
                    f"the record kept in the cluster is lost ({err}); the history starts again "
                    "from now once this leader has written its own"
                )
        self._loaded = True
        self.metrics.usage_history_read(not self._overwrite)
        if found is not None and not self._overwrite:
            log.info("read back the queues' usage history kept before this process led")

    def write(self) -> None:
        """The history, kept (at most once every WRITE_SECONDS, and only once read back)."""
        if not self._loaded or self.store is None or not self.scheduler.history.on:
            return
        now = self.clock()
        if now - self._written_at < WRITE_SECONDS:
            return
        self._written_at = now
        with self.lock.by("usage history taken"):
            record: dict[str, Any] = self.scheduler.history.to_record()
        self.store.save({KEY: record})
        if self._overwrite:
            self._overwrite = False
            with self.lock.by("usage history kept again"):
                self.scheduler.history_known("")
            self.metrics.usage_history_read(True)
            log.warning("the queues' usage history starts again from what this leader sampled")

    def lead_taken(self) -> None:
        """Read again (the replica that led wrote until it stopped); until then the order is by
        current use alone."""
        self._loaded = False
        self._written_at = float("-inf")
        if self.store is not None and self.scheduler.history.on:
            with self.lock.by("usage history to read back"):
                self.scheduler.history_known(NOT_READ)

    def lost(self) -> str:
        """Why the fair order does not use the usage history now ("" when it does, or none is
        kept)."""
        if not self.scheduler.history.on or not self.scheduler.history_lost:
            return ""
        return (
            f"usage history {self.scheduler.history_lost}: the fair order is by current use "
            "alone meanwhile"
        )

    def _lost(self, why: str) -> None:
        with self.lock.by("usage history lost"):
            self.scheduler.history_known(why)
        self.metrics.usage_history_read(False)
