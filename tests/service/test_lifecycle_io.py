"""What the lifecycle rules read and keep outside the process: GPU use read only when a policy
asks for it (and not more often than the review), a failed read said and handed on as missing
data, requeue records read back once per lead and kept after each pass (tried again when the
write fails)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from extender.core.engine import Engine
from extender.core.model.gpu_use import GpuUse
from extender.core.queues.lifecycle import Requeue
from extender.core.queues.policy_parse import parse_policy
from extender.kube.requeue_store import LogRequeueStore
from extender.observe.metrics import Metrics
from extender.service.decision_lock import DecisionLock
from extender.service.lifecycle_io import LifecycleIO
from tests.builders import FixedGpuUse as Reader
from tests.builders import policy_doc, queue


class FailingStore(LogRequeueStore):
    def __init__(self) -> None:
        super().__init__()
        self.fail = True

    def save(self, changes: Mapping[str, dict[str, Any] | None]) -> None:
        if self.fail:
            raise RuntimeError("ConfigMap write refused")
        super().save(changes)


def engine(**lifecycle: Any) -> Engine:
    doc = policy_doc(queue("team"))
    if lifecycle:
        doc["lifecycle"] = lifecycle
    return Engine(policy=parse_policy(doc, "policy.yaml"))


def io(co: Engine, reader: Reader | None = None, store: Any = None) -> LifecycleIO:
    return LifecycleIO(co, DecisionLock(), Metrics(), lambda: 1000.0, reader, store)


def test_gpu_use_is_read_over_the_longest_idle_window_and_not_without_an_idle_rule() -> None:
    reader = Reader(GpuUse({("ml", "a"): 3.0}))
    none = io(engine(readyTimeout="10m"), reader)
    none.read_use()
    assert reader.windows == [] and none.use is None, "no idle rule: Prometheus is not asked"
    some = io(engine(idleGpu={"for": "45m"}), reader)
    some.read_use()
    some.read_use()  # within the review interval: not read again
    assert reader.windows == [2700.0] and some.use is reader.use


def test_a_failed_read_is_said_and_handed_on_as_missing_data() -> None:
    reader = Reader(GpuUse({}, ok=False, problem="prometheus http://p:9090: not reachable"))
    lio = io(engine(idleGpu={"for": "30m"}), reader)
    lio.read_use()
    assert lio.use is not None and not lio.use.ok
    assert lio.problem == "prometheus http://p:9090: not reachable"


def test_requeue_records_are_kept_after_the_pass_and_read_back_by_the_next_leader() -> None:
    store = LogRequeueStore()
    first = engine(readyTimeout="10m")
    first.lifecycle.requeues.requeue("gangplank:ml/t", "not ready", 1000.0, Requeue(), "uid")
    io(first, store=store).save_records()
    second = engine(readyTimeout="10m")
    lio = io(second, store=store)
    lio.load_records()
    record = second.lifecycle.requeues.get("gangplank:ml/t")
    assert record is not None and record.count == 1


def test_a_write_that_fails_is_tried_again_at_the_next_pass() -> None:
    store = FailingStore()
    co = engine(readyTimeout="10m")
    co.lifecycle.requeues.requeue("gangplank:ml/t", "not ready", 1000.0, Requeue(), "uid")
    lio = io(co, store=store)
    with pytest.raises(RuntimeError, match="ConfigMap write refused"):
        lio.save_records()  # the periodic pass logs and counts it (step requeues-kept)
    store.fail = False
    lio.save_records()
    assert list(store.load()) == ["gangplank:ml/t"]
