"""Watch events are applied fast by reusing what did not change, and never at the cost of a wrong
view: whatever the memos reuse, the pod is the one a full conversion gives."""

from __future__ import annotations

import copy
from dataclasses import fields, replace
from typing import Any

import pytest

from extender.cache.handlers import handlers_for
from extender.cache.pod_memo import PodMemo, with_status
from extender.cache.reflector import event_lines
from extender.cache.store import ClusterStore
from extender.core.model.snapshot import PodInfo
from extender.kube.convert import ConversionError, pod_from_api
from tests.builders import node, pod


def same(a: PodInfo, b: PodInfo) -> bool:
    return all(getattr(a, f.name) == getattr(b, f.name) for f in fields(PodInfo))


def changes(base: dict[str, Any]) -> list[dict[str, Any]]:
    """A pod's life and edits, one version after another (each a new object, as on the wire)."""
    out: list[dict[str, Any]] = []

    def step(edit: Any) -> None:
        new = copy.deepcopy(out[-1] if out else base)
        edit(new)
        out.append(new)

    step(lambda p: None)
    step(lambda p: p["status"].update(conditions=[{"type": "PodScheduled", "status": "False"}]))
    step(lambda p: p["spec"].update(nodeName="n1"))
    step(lambda p: p["status"].update(startTime="2026-12-03T10:00:00Z"))
    step(lambda p: p["status"].update(phase="Running", podIP="10.0.0.1"))
    step(lambda p: p["metadata"]["labels"].update({"gangplank.io/queue": "research"}))
    step(lambda p: p["status"].update(containerStatuses=[{"name": "main", "restartCount": 2}]))
    step(lambda p: p["status"].update(conditions=[{"type": "Ready", "status": "True"}]))
    step(
        lambda p: p["status"].update(
            containerStatuses=[{"name": "main", "state": {"waiting": {"reason": "ErrImagePull"}}}]
        )
    )
    step(lambda p: p["spec"]["containers"][0]["resources"]["requests"].update(cpu="3"))
    step(lambda p: p["metadata"].update(annotations={"gangplank.io/gang-size": "4"}))
    step(lambda p: p["status"].update(phase="Succeeded"))
    step(lambda p: p["metadata"].update(deletionTimestamp="2026-12-03T11:00:00Z"))
    return out


def test_every_version_of_a_pod_converts_as_a_full_conversion_would() -> None:
    memo = PodMemo()
    for version in changes(pod("w-0", uid="u0", gpu=1, labels={"app": "x"})):
        assert same(memo.convert(version), pod_from_api(version))
    assert memo.reused >= 6  # status, binding and deletion changes came from the memo


def test_a_status_change_not_read_gives_back_the_same_pod_and_the_store_does_nothing() -> None:
    store = ClusterStore()
    handlers = handlers_for(store)
    handlers["nodes"].replace([node("n1", cpu="32", gpu=8)])
    running = pod("w-0", uid="u0", node="n1", gpu=2, phase="Running")
    handlers["pods"].apply("ADDED", running)
    generation = store.snapshot().generation
    scheduled = copy.deepcopy(running)
    scheduled["status"]["conditions"] = [{"type": "PodScheduled", "status": "True"}]
    scheduled["status"]["podIP"] = "10.0.0.3"
    scheduled["metadata"]["resourceVersion"] = "999"
    handlers["pods"].apply("MODIFIED", scheduled)
    assert store.snapshot().generation == generation


def test_a_pod_becoming_ready_or_waiting_on_its_image_reaches_the_store() -> None:
    store = ClusterStore()
    handlers = handlers_for(store)
    handlers["nodes"].replace([node("n1", cpu="32", gpu=8)])
    running = pod("w-0", uid="u0", node="n1", gpu=2, phase="Running")
    handlers["pods"].apply("ADDED", running)
    ready = copy.deepcopy(running)
    ready["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    handlers["pods"].apply("MODIFIED", copy.deepcopy(ready))
    (stored,) = store.snapshot().nodes["n1"].pods
    assert stored.ready and stored.waiting_reason == ""
    ready["status"]["containerStatuses"] = [
        {"name": "main", "state": {"waiting": {"reason": "ImagePullBackOff"}}}
    ]
    handlers["pods"].apply("MODIFIED", ready)
    (stored,) = store.snapshot().nodes["n1"].pods
    assert stored.waiting_reason == "ImagePullBackOff"


def test_a_deleted_pod_is_forgotten_and_a_relist_keeps_only_listed_pods() -> None:
    store = ClusterStore()
    handlers = handlers_for(store)
    a, b = pod("a", uid="ua"), pod("b", uid="ub")
    memo = PodMemo()
    memo.convert(a)
    memo.convert(b)
    memo.forget(pod_from_api(a))
    assert len(memo) == 1
    memo.keep_only([])
    assert len(memo) == 0
    handlers["pods"].replace([a, b])
    handlers["pods"].apply("DELETED", a)
    assert store.counts()["pods"] == 1
    assert [p.name for p in store.snapshot().queue_pending[("", "default")]] == ["b"]


def test_a_bad_version_of_a_known_pod_is_still_refused() -> None:
    memo = PodMemo()
    good = pod("w-0", uid="u0")
    memo.convert(good)
    bad = copy.deepcopy(good)
    bad["status"]["phase"] = 7
    with pytest.raises(ConversionError, match="phase"):
        memo.convert(bad)
    worse = copy.deepcopy(good)
    worse["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "lots"
    with pytest.raises(ConversionError, match="cpu"):
        memo.convert(worse)


def test_pods_sharing_a_spec_keep_their_own_node_and_names() -> None:
    one = pod("w-0", uid="u0", node="n1", gpu=1)
    two = copy.deepcopy(one)
    two["metadata"].update(name="w-1", uid="u1")
    two["spec"]["nodeName"] = "n2"
    first, second = pod_from_api(one), pod_from_api(two)
    assert (first.name, first.node_name, second.name, second.node_name) == (
        "w-0",
        "n1",
        "w-1",
        "n2",
    )
    assert second.requests == first.requests


STATUS_FIELDS = ("node_name", "phase", "started", "restarts", "ready", "waiting_reason", "deleting")


def test_with_status_keeps_every_other_field() -> None:
    base = pod_from_api(pod("w-0", uid="u0", gpu=1, labels={"gangplank.io/queue": "q"}))
    changed = with_status(base, "n1", "Running", 5.0, 3, True, "CrashLoopBackOff", True)
    expected = replace(
        base,
        node_name="n1",
        phase="Running",
        started=5.0,
        restarts=3,
        ready=True,
        waiting_reason="CrashLoopBackOff",
        deleting=True,
    )
    assert same(changed, expected)


@pytest.mark.parametrize(
    "name", [f.name for f in fields(PodInfo) if f.name not in STATUS_FIELDS and f.init]
)
def test_with_status_carries_each_field_of_the_spec_over(name: str) -> None:
    marker: Any = object()
    base = replace(pod_from_api(pod("w-0", uid="u0", gpu=1)), **{name: marker})
    changed = with_status(base, "n1", "Running", 5.0, 3, True, "", False)
    assert getattr(changed, name) is marker


def test_watch_lines_are_joined_across_chunks_and_a_cut_last_line_is_dropped() -> None:
    chunks = [
        b'{"a":1}\n{"b"',
        b":2}\n",
        b"\n",
        b" \n",
        b'{"c":',
        b"3}\n",
        b'{"d":4}\n',
        b'{"cut":',
    ]
    lines = [line.rstrip(b"\n") for line in event_lines(chunks)]
    assert lines == [b'{"a":1}', b'{"b":2}', b'{"c":3}', b'{"d":4}']
