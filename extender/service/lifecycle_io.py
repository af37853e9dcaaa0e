"""What the lifecycle rules read and keep outside the process, for the periodic pass.

- GPU use: with `--prometheus-url`, every review the pods' utilisation over the longest idle
  window the policy names is read from Prometheus (`observe/gpu_use.py`), off the lock; a failed
  read hands the core `ok=False` (no idle action on missing data) and says why in `/readyz`'s
  detail and in `gangplank_gpu_use_up`.
- Requeue records: read back once the cache is synced (after a start, and on taking the Lease),
  by the first pass or the first filter or preempt call, whichever comes first (kube-scheduler
  asks for its pending pods at once: a requeued job's new pods must not slip through before the
  pass), and each change the core made written after the pass (`kube/requeue_store.py`: a
  ConfigMap), so requeue counts and backoffs outlive a restart and a failover. A write that
  fails is tried again at the next pass. Until they are read the rules that requeue (not-ready,
  max-runtime) act on no job: a read that fails is tried again every pass, and why it fails is
  said in `/readyz`'s detail, `gangplank status` (`paused`), `gangplank_requeue_records_up` and
  the log (once a minute: `steps.py`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from extender.core.engine import Engine
from extender.core.model.gpu_use import GpuUse
from extender.observe.metrics import Metrics
from extender.service.decision_lock import DecisionLock

READ_SECONDS = 10.0  # how often GPU use is read (the core reviews jobs as often)
# After the records could not be read, calls do not try again for this long (the pass does).
ASKED_RETRY_SECONDS = 5.0

log = logging.getLogger("gangplank")

Changes = Mapping[str, dict[str, Any] | None]


class UseReader(Protocol):
    def read(self, window_seconds: float, now: float) -> GpuUse: ...


class RecordStore(Protocol):
    def load(self) -> dict[str, dict[str, Any]]: ...
    def save(self, changes: Changes) -> None: ...


class LifecycleIO:
    def __init__(
        self,
        scheduler: Engine,
        lock: DecisionLock,
        metrics: Metrics,
        clock: Callable[[], float],
        reader: UseReader | None,
        store: RecordStore | None,
    ) -> None:
        self.scheduler = scheduler
        self.lock = lock
        self.metrics = metrics
        self.clock = clock
        self.reader = reader
        self.store = store
        self.use: GpuUse | None = None
        self.problem = ""  # why GPU use could not be read ("" when it was, or is not asked for)
        self._read_at = float("-inf")
        self._loaded = False
        self._loading = threading.Lock()  # one read at a time (calls come on many threads)
        self._failed_at = float("-inf")  # when the records could not be read (monotonic)
        self.records_problem = ""  # why the records could not be read ("" once they were)
        if store is not None:  # no job is requeued before the kept counts are read
            scheduler.lifecycle.requeues.known = False

    def read_use(self) -> None:
        """GPU use over the policy's longest idle window (nothing without a reader or a rule)."""
        policy = self.scheduler.policy
        window = policy.idle_window() if policy is not None else 0.0
        if self.reader is None or not window:
            self.use, self.problem = None, ""
            return
        now = time.monotonic()
        if now - self._read_at < READ_SECONDS:
            return
        self._read_at = now
        use = self.reader.read(window, self.clock())
        self.metrics.gpu_use_read(use)
        if not use.ok and use.problem != self.problem:
            log.warning("GPU use not read, no job is found idle meanwhile: %s", use.problem)
        problem = use.problem if not use.ok else ""
        if use.ok and not use.busiest:
            problem = (
                "Prometheus has no pod's series covering the window (check --gpu-util-metric "
                "and the label flags against dcgm-exporter's)"
            )
        self.use, self.problem = use, problem

    def load_records(self, asked: bool = False) -> None:
        """The requeue records kept by earlier processes, back in the core (once per lead).
        `asked`: by a filter or preempt call that came before the pass read them: a failure is
        logged, not raised, and calls leave trying again to the pass for ASKED_RETRY_SECONDS."""
        if self._loaded or self.store is None:
            return
        if asked and time.monotonic() - self._failed_at < ASKED_RETRY_SECONDS:
            return
        with self._loading:
            if self._loaded:
                return
            try:
                records = self.store.load()
            except Exception as err:
                self._failed_at = time.monotonic()
                self.records_problem = " ".join(str(err).split()) or type(err).__name__
                self.metrics.requeue_records_read(False)
                if not asked:
                    raise  # the pass's step tells it (once a minute while it repeats)
                log.debug("requeue records not read back yet (the pass tries again): %s", err)
                return
            with self.lock.by("requeue records read back"):
                loaded = self.scheduler.lifecycle.requeues.load(records)
            self._loaded = True
            self.records_problem = ""
            self.metrics.requeue_records_read(True)
        if loaded:
            log.info("read back %d requeue record(s) kept before this process led", loaded)

    def paused(self) -> str:
        """Why the lifecycle rules that requeue act on no job now, or "" when they do."""
        if not self.records_problem:
            return ""
        return (
            f"{self.records_problem} (the not-ready and max-runtime rules requeue no job until "
            "the records are read; tried again every pass)"
        )

    def lead_taken(self) -> None:
        """The records are read again, and until they are no job is requeued (its count would
        overwrite the kept one)."""
        self._loaded = False
        if self.store is not None:
            self.scheduler.lifecycle.requeues.known = False

    def save_records(self) -> None:
        """The requeue records the core changed, kept (tried again next pass if this fails)."""
        if self.store is None:
            return
        with self.lock.by("requeue records taken"):
            changes = self.scheduler.lifecycle.requeues.take_changes()
        if not changes:
            return
        try:
            self.store.save(changes)
        except Exception:
            with self.lock.by("requeue records put back"):
                self.scheduler.lifecycle.requeues.put_back(changes)
            raise
