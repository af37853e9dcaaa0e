"""Writing plans' records into the cluster (see `core/gangs/plan_record.py`): the annotation
`gangplank.io/plan` on each member of a plan, before its first member binds and before its
first victim is evicted, so that a restarted gangplank, or the standby that takes the Lease,
holds the very reservations this process held.

The members' records are written in one pass, several at a time; a bind whose plan cannot be
recorded fails (kube-scheduler retries it), so no member binds on an unrecorded plan. Records the
cache does not show yet but this process wrote are remembered, so members binding one after the
other write nothing more.

Records are computed under the decision lock and written after it, so two passes may write in
the other order than they computed: each record carries the number of its computation, and one
computed before the last this process wrote for its job is not written (the newer plan stays).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from extender.core.gangs.plan_record import PLAN_ANNOTATION, ToWrite
from extender.core.model.text import shorten
from extender.kube.patcher import Patcher

log = logging.getLogger("gangplank.plans")

AT_ONCE = 16  # records written at once
REMEMBERED = 100_000  # records remembered as written (then forgotten: the cache shows them)


class RecordError(Exception):
    """A plan's record could not be written; the message names the pod and the reason."""


class PlanRecorder:
    def __init__(self, patcher: Patcher) -> None:
        self._patcher = patcher
        self._written: dict[str, str] = {}  # uid -> value written
        self._newest: dict[str, int] = {}  # job -> the latest computation written for it
        self._lock = threading.Lock()  # one pass at a time: a second waits, then finds it done
        self._pool = ThreadPoolExecutor(AT_ONCE, thread_name_prefix="plan-record")

    def write(self, records: Sequence[ToWrite]) -> int:
        """Write the records not written yet; returns how many were. Raises RecordError when
        one could not be (a pod gone meanwhile needs none). A record computed before the latest
        one written for its job is stale: it is not written."""
        if not records:
            return 0
        with self._lock:
            todo = [
                r
                for r in records
                if r.computed >= self._newest.get(r.job, 0) and self._written.get(r.uid) != r.value
            ]
            if not todo:
                return 0
            if len(self._written) > REMEMBERED:
                self._written.clear()
            if len(self._newest) > REMEMBERED:
                self._newest.clear()
            for record in todo:
                self._newest[record.job] = max(record.computed, self._newest.get(record.job, 0))
            results = list(self._pool.map(self._one, todo))
            failed = [(r, why) for r, why in zip(todo, results, strict=True) if why]
            for record, why in zip(todo, results, strict=True):
                if not why:
                    self._written[record.uid] = record.value
            if failed:
                record, why = failed[0]
                raise RecordError(
                    f"cannot record the plan on pod {record.namespace}/{record.name} "
                    f"({len(failed)} of {len(todo)} records failed): {why}"
                )
            log.debug("recorded the plan on %d pod(s)", len(todo))
            return len(todo)

    def _one(self, record: ToWrite) -> str:
        try:
            self._patcher.annotate(record.namespace, record.name, PLAN_ANNOTATION, record.value)
        except Exception as err:  # the API server's refusal or a network fault: said, not raised
            status = getattr(err, "status", None)
            return f"HTTP {status}" if status else f"{type(err).__name__}: {shorten(str(err), 200)}"
        return ""

    def close(self) -> None:
        self._pool.shutdown(wait=False)
