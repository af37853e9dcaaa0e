"""The cache counts every pod exactly once, whatever order events come in."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from extender.cache.handlers import KindHandler, handlers_for
from extender.cache.store import ClusterStore
from tests.builders import namespace, node, pod, priority_class


def loaded(*nodes: str) -> ClusterStore:
    store = ClusterStore()
    handlers_for(store)["nodes"].replace([node(n, cpu="32", gpu=8) for n in nodes])
    return store


def gpus_used(store: ClusterStore, node_name: str) -> int:
    return store.snapshot().nodes[node_name].requested.get("nvidia.com/gpu", 0)


def test_an_added_pod_counts_once_even_when_the_event_repeats() -> None:
    store = loaded("n1")
    pods = handlers_for(store)["pods"]
    running = pod("w-0", node="n1", gpu=2, phase="Running")
    pods.apply("ADDED", running)
    pods.apply("ADDED", running)
    pods.apply("MODIFIED", running)
    assert gpus_used(store, "n1") == 2
    assert store.snapshot().nodes["n1"].requested["pods"] == 1


def test_a_pod_that_moves_is_counted_only_on_its_new_node() -> None:
    store = loaded("n1", "n2")
    pods = handlers_for(store)["pods"]
    p = pod("w-0", node="n1", gpu=2, phase="Running", uid="u1")
    pods.apply("ADDED", p)
    pods.apply("MODIFIED", pod("w-0", node="n2", gpu=2, phase="Running", uid="u1"))
    assert (gpus_used(store, "n1"), gpus_used(store, "n2")) == (0, 2)


def test_deleted_and_finished_pods_free_their_node() -> None:
    store = loaded("n1")
    pods = handlers_for(store)["pods"]
    a = pod("a", node="n1", gpu=2, phase="Running", uid="ua")
    b = pod("b", node="n1", gpu=3, phase="Running", uid="ub")
    pods.apply("ADDED", a)
    pods.apply("ADDED", b)
    assert gpus_used(store, "n1") == 5
    pods.apply("DELETED", a)
    pods.apply("MODIFIED", pod("b", node="n1", gpu=3, phase="Succeeded", uid="ub"))
    assert gpus_used(store, "n1") == 0


def test_a_relist_replaces_everything_and_drops_pods_deleted_meanwhile() -> None:
    store = loaded("n1")
    pods = handlers_for(store)["pods"]
    pods.apply("ADDED", pod("gone", node="n1", gpu=4, phase="Running", uid="u-gone"))
    pods.apply("ADDED", pod("kept", node="n1", gpu=1, phase="Running", uid="u-kept"))
    pods.replace(
        [
            pod("kept", node="n1", gpu=1, phase="Running", uid="u-kept"),
            pod("new", node="n1", gpu=2, phase="Running", uid="u-new"),
        ]
    )
    assert gpus_used(store, "n1") == 3
    assert store.counts()["pods"] == 2


def test_pods_on_a_node_not_seen_yet_count_once_it_appears() -> None:
    store = ClusterStore()
    handlers = handlers_for(store)
    handlers["pods"].apply("ADDED", pod("early", node="n7", gpu=2, phase="Running"))
    assert "n7" not in store.snapshot().nodes
    handlers["nodes"].apply("ADDED", node("n7"))
    assert gpus_used(store, "n7") == 2


def test_a_node_relist_keeps_the_pods_on_it() -> None:
    store = loaded("n1")
    handlers = handlers_for(store)
    handlers["pods"].apply("ADDED", pod("a", node="n1", gpu=2, phase="Running"))
    handlers["nodes"].replace([node("n1", gpu=8)])
    assert gpus_used(store, "n1") == 2


def test_a_pod_gangplank_bound_counts_before_the_watch_confirms_it() -> None:
    store = loaded("n1")
    pods = handlers_for(store)["pods"]
    pending = pod("w-0", gpu=2, uid="u1")
    pods.apply("ADDED", pending)
    store.assume_bound("default", "w-0", "u1", "n1")
    assert gpus_used(store, "n1") == 2
    pods.apply("MODIFIED", pending)  # a stale pending update arrives after the bind
    assert gpus_used(store, "n1") == 2
    pods.apply("MODIFIED", pod("w-0", node="n1", gpu=2, uid="u1", phase="Running"))
    assert gpus_used(store, "n1") == 2


def test_an_assumption_expires_when_the_watch_never_confirms_it() -> None:
    now = [0.0]
    store = ClusterStore(clock=lambda: now[0])
    handlers = handlers_for(store)
    handlers["nodes"].replace([node("n1")])
    handlers["pods"].apply("ADDED", pod("w-0", gpu=2, uid="u1"))
    store.assume_bound("default", "w-0", "u1", "n1")
    now[0] = 31.0
    handlers["pods"].apply("MODIFIED", pod("w-0", gpu=2, uid="u1"))
    assert gpus_used(store, "n1") == 0


def test_a_snapshot_does_not_change_when_the_cache_does() -> None:
    store = loaded("n1")
    before = store.snapshot()
    assert store.snapshot() is before, "no change, no new snapshot"
    handlers_for(store)["pods"].apply("ADDED", pod("a", node="n1", gpu=2, phase="Running"))
    after = store.snapshot()
    assert before.nodes["n1"].requested.get("nvidia.com/gpu", 0) == 0
    assert after.nodes["n1"].requested["nvidia.com/gpu"] == 2
    assert after.generation > before.generation


def test_namespaces_and_priority_classes_are_kept() -> None:
    store = ClusterStore()
    handlers = handlers_for(store)
    handlers["namespaces"].replace([namespace("ml"), namespace("web")])
    handlers["namespaces"].apply("DELETED", namespace("web"))
    handlers["priorityclasses"].apply("ADDED", priority_class("high", 1000))
    snap = store.snapshot()
    assert set(snap.namespaces) == {"ml"} and snap.priority_classes == {"high": 1000}


def test_an_unreadable_object_is_skipped_without_stopping_the_watch() -> None:
    store = loaded("n1")
    pods = handlers_for(store)["pods"]
    bad = pod("bad", node="n1")
    bad["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "lots"
    pods.apply("ADDED", bad)
    pods.apply("ADDED", pod("good", node="n1", gpu=1, phase="Running"))
    assert gpus_used(store, "n1") == 1 and store.counts()["pods"] == 1


def test_the_lowest_priority_holding_resources_is_kept_by_queue_key() -> None:
    store = loaded("n1", "n2")
    pods = handlers_for(store)["pods"]
    low = pod("low", node="n1", gpu=1, phase="Running", uid="u-low", priority=5)
    pods.apply("ADDED", low)
    pods.apply("ADDED", pod("high", node="n2", gpu=1, phase="Running", uid="u-high", priority=10))
    pods.apply("ADDED", pod("waiting", gpu=1, uid="u-wait", priority=1))
    pods.apply("ADDED", pod("r", node="n1", gpu=1, uid="u-r", priority=0, namespace="research"))
    assert store.snapshot().queue_floor == {("", "default"): 5, ("", "research"): 0}
    pods.apply("DELETED", low)
    assert store.snapshot().queue_floor == {("", "default"): 10, ("", "research"): 0}
    pods.replace([pod("high", node="n2", gpu=1, phase="Succeeded", uid="u-high", priority=10)])
    assert store.snapshot().queue_floor == {}, "a finished pod holds nothing"


def test_the_freed_generation_moves_only_when_capacity_is_given_back() -> None:
    store = loaded("n1")
    pods = handlers_for(store)["pods"]
    start = store.snapshot().freed_generation
    allocation = store.snapshot().capacity_generation
    running = pod("w-0", node="n1", gpu=2, phase="Running")
    pods.apply("ADDED", running)
    pods.apply("ADDED", pod("waiting", gpu=1))
    taken = store.snapshot()
    assert taken.freed_generation == start, "a bind and a pod created give nothing back"
    assert taken.capacity_generation == allocation + 1, "the bind changed n1's allocation"
    pods.apply("DELETED", running)
    assert store.snapshot().freed_generation == start + 1
    handlers_for(store)["nodes"].apply("ADDED", node("n2", cpu="32", gpu=8))
    assert store.snapshot().freed_generation == start + 2, "a node added"


def _status(phase: str = "Running", **changes: Any) -> dict[str, Any]:
    status: dict[str, Any] = {"phase": phase, "startTime": "2026-12-01T10:00:05Z"}
    status.update(changes)
    return status


READY = [{"type": "Ready", "status": "True"}]


def _running_on_n1() -> tuple[ClusterStore, KindHandler[Any], dict[str, Any]]:
    """A store with pod w-0 running on n1 (not Ready), its pod handler, and the pod as the API
    server sent it."""
    store = loaded("n1")
    pods = handlers_for(store)["pods"]
    running = pod("w-0", uid="u0", node="n1", gpu=2)
    running["status"] = _status()
    pods.apply("ADDED", copy.deepcopy(running))
    return store, pods, running


@pytest.mark.parametrize(
    ("status", "quiet"),
    [
        (_status(conditions=READY), True),
        (_status(containerStatuses=[{"name": "main", "restartCount": 3}]), True),
        (
            _status(
                containerStatuses=[
                    {"name": "main", "state": {"waiting": {"reason": "ImagePullBackOff"}}}
                ]
            ),
            True,
        ),
        (_status("Succeeded"), False),
        (_status(startTime="2026-12-01T10:09:00Z"), False),
    ],
    ids=[
        "a bound pod becoming Ready changes nothing the verbs read",
        "a container restarting changes nothing the verbs read",
        "a container waiting on its image changes nothing the verbs read",
        "a pod finishing frees its node: the verbs see it at once",
        "a pod started again changes its runtime, which preemption reads: the verbs see it",
    ],
)
def test_the_verbs_snapshot_moves_on_only_for_what_a_decision_reads(
    status: dict[str, Any], quiet: bool
) -> None:
    store, pods, running = _running_on_n1()
    before = store.snapshot_for_verbs()
    running["status"] = status
    pods.apply("MODIFIED", running)
    assert (store.snapshot_for_verbs() is before) is quiet
    on_node = store.snapshot().nodes["n1"].pods
    if status["phase"] != "Running":
        assert on_node == (), "a finished pod holds nothing"
    else:
        (fresh,) = on_node
        assert (fresh.ready, fresh.restarts, fresh.waiting_reason) == (
            "conditions" in status,
            sum(c.get("restartCount", 0) for c in status.get("containerStatuses", [])),
            "ImagePullBackOff" if "state" in str(status) else "",
        ), "every other reader sees the pod as it is now"
    assert store.snapshot_for_verbs() is store.snapshot(), "and the verbs do from then on"


def test_the_verbs_snapshot_after_a_change_they_read_carries_the_quiet_changes_too() -> None:
    store, pods, running = _running_on_n1()
    before = store.snapshot_for_verbs()
    running["status"] = _status(conditions=READY)
    pods.apply("MODIFIED", running)
    pods.apply("ADDED", pod("w-1", uid="u1", node="n1", gpu=1, phase="Running"))
    after = store.snapshot_for_verbs()
    assert after is not before and after.generation > before.generation
    ready = {p.name: p.ready for p in after.nodes["n1"].pods}
    assert ready == {"w-0": True, "w-1": False}
    assert after.nodes["n1"].requested["nvidia.com/gpu"] == 3
