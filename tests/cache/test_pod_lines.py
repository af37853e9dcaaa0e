"""Pod watch lines are applied without parsing them in full where the memo allows, and the cache
they leave is the one the full parse leaves, event after event, whatever the line holds."""

from __future__ import annotations

import copy
import random
from collections.abc import Callable
from dataclasses import fields
from typing import Any

import orjson
import pytest

from extender.cache import pod_lines
from extender.cache.handlers import PodHandler, handlers_for
from extender.cache.store import ClusterStore
from extender.core.model.snapshot import PodInfo
from tests.builders import node, pod

Obj = dict[str, Any]
NODES = ("n1", "n2", "n3")
REASONS = ("ImagePullBackOff", "ErrImagePull", "CrashLoopBackOff", "")


def line(event_type: str, obj: Obj) -> bytes:
    return orjson.dumps({"type": event_type, "object": obj})


class Both:
    """Two caches fed the same events: one by lines (the fast reading, falling back to the full
    parse), one by parsed objects (the full parse only)."""

    def __init__(self, listed: list[Obj]) -> None:
        self.fast, self.full = ClusterStore(), ClusterStore()
        fast_handlers, full_handlers = handlers_for(self.fast), handlers_for(self.full)
        for handlers in (fast_handlers, full_handlers):
            handlers["nodes"].replace([node(n, cpu="64", gpu=8) for n in NODES])
            handlers["pods"].replace(copy.deepcopy(listed))
        pods = fast_handlers["pods"]
        assert isinstance(pods, PodHandler)
        self.lines, self.objects = pods, full_handlers["pods"]

    def send(self, event_type: str, obj: Obj, text: bytes | None = None) -> None:
        done = self.lines.apply_line(text if text is not None else line(event_type, obj))
        if done is None:
            self.lines.apply(event_type, copy.deepcopy(obj))
        else:
            assert done == (event_type, obj["metadata"].get("resourceVersion"))
        self.objects.apply(event_type, copy.deepcopy(obj))
        self.check()

    def check(self) -> None:
        assert view(self.fast) == view(self.full)

    def read_fast(self, event_type: str, obj: Obj, text: bytes | None = None) -> bool:
        """Send one event; whether its line was applied without the full parse."""
        before = self.lines.memo.from_lines
        self.send(event_type, obj, text)
        return self.lines.memo.from_lines == before + 1

    def only_pod(self) -> PodInfo:
        (pod,) = self.fast._pods.values()
        return pod


def view(store: ClusterStore) -> Any:
    """Everything a decision reads of the pods, with pods compared field by field."""
    snap = store.snapshot()

    def pods(members: Any) -> Any:
        return sorted(tuple(getattr(p, f.name) for f in fields(PodInfo)) for p in members)

    return (
        {name: (n.requested, pods(n.pods)) for name, n in snap.nodes.items()},
        snap.queue_usage,
        {q: pods(members) for q, members in snap.queue_pending.items()},
        snap.queue_floor,
        {g: pods(members) for g, members in snap.groups.items()},
        pods(store._pods.values()),
        snap.allocated,
    )


EDITS: list[tuple[str, Callable[[Obj, random.Random], None]]] = [
    ("conditions", lambda p, r: p["status"].update(conditions=[{"type": "Ready"}])),
    ("bind", lambda p, r: p["spec"].update(nodeName=r.choice(NODES))),
    ("start", lambda p, r: p["status"].update(startTime="2026-12-03T10:00:00Z")),
    ("running", lambda p, r: p["status"].update(phase="Running")),
    ("restart", lambda p, r: p["status"].update(containerStatuses=[{"restartCount": 2}])),
    ("ready", lambda p, r: p["status"].update(conditions=[{"type": "Ready", "status": "True"}])),
    ("unready", lambda p, r: p["status"].update(conditions=[{"type": "Ready", "status": "False"}])),
    (
        "image-pull",
        lambda p, r: p["status"].update(
            containerStatuses=[
                {"restartCount": 0, "state": {"running": {}}},
                {"restartCount": 1, "state": {"waiting": {"reason": r.choice(REASONS)}}},
            ]
        ),
    ),
    (
        "init-waiting",
        lambda p, r: p["status"].update(
            initContainerStatuses=[{"state": {"waiting": {"reason": r.choice(REASONS)}}}]
        ),
    ),
    ("init-done", lambda p, r: p["status"].pop("initContainerStatuses", None)),
    ("succeeded", lambda p, r: p["status"].update(phase="Succeeded")),
    ("failed", lambda p, r: p["status"].update(phase="Failed")),
    ("relabel", lambda p, r: p["metadata"]["labels"].update({"gangplank.io/queue": "b"})),
    ("annotate", lambda p, r: p["metadata"]["annotations"].update({"x": "y"})),
    ("priority", lambda p, r: p["spec"].update(priority=r.randint(0, 3))),
    ("delete-mark", lambda p, r: p["metadata"].update(deletionTimestamp="2026-12-03T11:00:00Z")),
]


def members(count: int) -> list[Obj]:
    gang = {"gangplank.io/gang": "g1", "gangplank.io/queue": "a"}
    return [
        pod(f"w-{i}", uid=f"u{i}", gpu=1 + i % 2, labels=dict(gang) if i % 2 else {"q": "x"})
        for i in range(count)
    ]


@pytest.mark.parametrize("seed", range(6))
def test_lines_leave_the_cache_the_full_parse_leaves_through_random_lives(seed: int) -> None:
    r = random.Random(seed)
    listed = members(4)
    both = Both(listed)
    alive = {p["metadata"]["uid"]: copy.deepcopy(p) for p in listed}
    version = 100
    for step in range(160):
        version += 1
        if not alive or r.random() < 0.08:
            new = pod(f"new-{step}", uid=f"n{step}", gpu=r.randint(0, 2))
            new["metadata"]["resourceVersion"] = str(version)
            alive[new["metadata"]["uid"]] = new
            both.send("ADDED", new)
            continue
        uid = r.choice(sorted(alive))
        obj = copy.deepcopy(alive[uid])
        obj["metadata"]["resourceVersion"] = str(version)
        if r.random() < 0.07:
            del alive[uid]
            both.send("DELETED", obj)
            continue
        _, edit = r.choice(EDITS)
        edit(obj, r)
        alive[uid] = obj
        both.send("MODIFIED", obj)


def test_a_status_only_line_of_a_listed_pod_is_applied_without_the_full_parse() -> None:
    running = pod("w-0", uid="u0", node="n1", gpu=2, phase="Running")
    both = Both([running])
    ready = copy.deepcopy(running)
    ready["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    ready["status"]["containerStatuses"] = [{"name": "main", "restartCount": 3}]
    ready["metadata"]["resourceVersion"] = "7"
    ready["metadata"]["managedFields"] = [{"manager": "kubelet", "fieldsV1": {"f:status": {}}}]
    assert both.read_fast("MODIFIED", ready)
    assert both.only_pod().restarts == 3
    assert both.only_pod().ready


def running_pod(**status: Any) -> Obj:
    obj = pod("w-0", uid="u0", node="n1", gpu=2, phase="Running")
    obj["status"].update(status)
    return obj


def modified(obj: Obj, version: str, **status: Any) -> Obj:
    changed = copy.deepcopy(obj)
    changed["status"].update(status)
    changed["metadata"]["resourceVersion"] = version
    return changed


def test_a_line_that_only_makes_the_pod_ready_updates_the_stored_pod() -> None:
    running = running_pod(conditions=[{"type": "Ready", "status": "False"}])
    both = Both([running])
    assert not both.only_pod().ready
    generation = both.fast.snapshot().generation
    ready = modified(running, "7", conditions=[{"type": "Ready", "status": "True"}])
    assert both.read_fast("MODIFIED", ready)
    assert both.only_pod().ready
    snap = both.fast.snapshot()
    assert snap.generation != generation
    assert [p.ready for p in snap.nodes["n1"].pods] == [True]
    assert both.read_fast("MODIFIED", modified(ready, "8", conditions=[]))
    assert not both.only_pod().ready


def test_a_line_that_only_sets_a_waiting_reason_updates_the_stored_pod() -> None:
    starting = running_pod(containerStatuses=[{"name": "main", "state": {"waiting": {}}}])
    both = Both([starting])
    generation = both.fast.snapshot().generation
    pulling = modified(
        starting,
        "7",
        containerStatuses=[
            {"name": "main", "restartCount": 0, "state": {"waiting": {"reason": "ErrImagePull"}}}
        ],
    )
    assert both.read_fast("MODIFIED", pulling)
    assert both.only_pod().waiting_reason == "ErrImagePull"
    assert both.fast.snapshot().generation != generation
    # An init container waiting comes first.
    init = modified(
        pulling,
        "8",
        initContainerStatuses=[
            {"name": "fetch", "state": {"waiting": {"reason": "ImagePullBackOff"}}}
        ],
    )
    assert both.read_fast("MODIFIED", init)
    assert both.only_pod().waiting_reason == "ImagePullBackOff"


def test_a_line_that_changes_nothing_read_does_not_touch_the_store() -> None:
    running = running_pod(
        conditions=[{"type": "Ready", "status": "True"}],
        containerStatuses=[{"name": "main", "state": {"waiting": {"reason": "CrashLoopBackOff"}}}],
    )
    both = Both([running])
    kept = both.only_pod()
    generation = both.fast.snapshot().generation
    churn = modified(
        running,
        "7",
        podIP="10.0.0.9",
        conditions=[
            {"type": "PodScheduled", "status": "True"},
            {"type": "Ready", "status": "True", "lastProbeTime": None, "message": "ok"},
            {"type": "ContainersReady", "status": "False"},
        ],
        containerStatuses=[
            {
                "name": "main",
                "ready": False,
                "lastState": {"terminated": {"exitCode": 1, "reason": "Error"}},
                "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 5m"}},
            }
        ],
    )
    assert both.read_fast("MODIFIED", churn)
    assert both.only_pod() is kept
    assert both.fast.snapshot().generation == generation


def test_the_quick_fingerprint_of_a_listed_pod_is_that_of_its_line() -> None:
    obj = pod("w-0", uid="u0", node="n1", gpu=1, labels={"a": "b"}, annotations={"c": "d"})
    read = pod_lines.read(line("MODIFIED", obj))
    assert read is not None
    assert read.quick == pod_lines.quick_of_object(obj)
    changed = copy.deepcopy(obj)
    changed["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "2"
    assert pod_lines.quick_of_object(changed) != read.quick


def test_a_line_written_otherwise_than_orjson_writes_is_read_in_full_once_then_fast() -> None:
    # The API server escapes & < > in strings (Go's encoding/json): the text differs from what
    # orjson writes of the listed pod, so the first event is parsed in full.
    obj = pod("w-0", uid="u0", node="n1", gpu=1, annotations={"cmd": "a && b"})
    both = Both([obj])
    for version in ("5", "6"):
        obj = copy.deepcopy(obj)
        obj["metadata"]["resourceVersion"] = version
        obj["status"]["phase"] = "Running" if version == "5" else "Succeeded"
        go_style = line("MODIFIED", obj).replace(b"&", b"\\u0026")
        assert both.read_fast("MODIFIED", obj, go_style) == (version == "6")


@pytest.mark.parametrize(
    "spoil",
    [
        lambda p: p["status"].update(phase=7),
        lambda p: p["status"].update(startTime="yesterday"),
        lambda p: p["status"].update(containerStatuses=[{"restartCount": "two"}]),
        lambda p: p["status"].update(containerStatuses=[{"restartCount": True}]),
        lambda p: p["status"].update(containerStatuses=None),
        lambda p: p["status"].update(conditions=[{"type": "Ready", "status": True}]),
        lambda p: p["status"].update(conditions={"Ready": "True"}),
        lambda p: p["status"].update(containerStatuses=[{"state": {"waiting": {"reason": 7}}}]),
        lambda p: p["status"].update(initContainerStatuses=[{"state": "waiting"}]),
        lambda p: p.update(status=None),
        lambda p: p["metadata"].update(name=12),
        lambda p: p["spec"]["containers"][0]["resources"]["requests"].update(cpu="lots"),
    ],
    ids=[
        "phase",
        "startTime",
        "restarts-str",
        "restarts-bool",
        "no-statuses",
        "ready-bool",
        "conditions-object",
        "reason-int",
        "state-str",
        "null",
        "name",
        "cpu",
    ],
)
def test_an_odd_line_gives_what_the_full_parse_gives(spoil: Callable[[Obj], None]) -> None:
    good = pod("w-0", uid="u0", node="n1", gpu=1, phase="Running")
    both = Both([good])
    bad = copy.deepcopy(good)
    spoil(bad)
    both.send("MODIFIED", bad)


def test_bookmarks_errors_and_lines_that_are_no_pod_event_are_left_to_the_reflector() -> None:
    handler = handlers_for(ClusterStore())["pods"]
    bookmark = line("BOOKMARK", {"kind": "Pod", "metadata": {"resourceVersion": "42"}})
    assert handler.apply_line(bookmark) == ("BOOKMARK", "42")
    error = line("ERROR", {"kind": "Status", "status": "Failure", "code": 410})
    for text in (error, b"not json", b'{"type": "ADDED", "object": {"metadata": {}}}', b"[]"):
        assert handler.apply_line(text) is None


def test_the_watch_benchmark_applies_its_churn_from_the_lines_alone() -> None:
    from loadtest.cluster import build
    from loadtest.watch_events import status_churn

    nodes, listed = build(20, 200, None)
    store = ClusterStore()
    handlers = handlers_for(store)
    handlers["nodes"].replace(nodes)
    handlers["pods"].replace(listed)
    pods = handlers["pods"]
    assert isinstance(pods, PodHandler)
    churn = status_churn(listed, 10**6)
    for text in churn:
        assert pods.apply_line(text) == (
            "MODIFIED",
            orjson.loads(text)["object"]["metadata"]["resourceVersion"],
        )
    assert pods.memo.from_lines == len(churn)


@pytest.mark.parametrize("where", ["first", "middle", "last", "only"])
def test_a_binding_is_read_from_the_line_wherever_the_spec_has_its_node_name(where: str) -> None:
    waiting = pod("w-0", uid="u0", gpu=1)
    if where == "only":
        waiting["spec"] = {}
    both = Both([waiting])
    bound = copy.deepcopy(waiting)
    items = list(bound["spec"].items())
    at = {"first": 0, "middle": len(items) // 2, "last": len(items), "only": 0}[where]
    items.insert(at, ("nodeName", "n2"))
    bound["spec"] = dict(items)
    bound["metadata"]["resourceVersion"] = "8"
    assert both.read_fast("MODIFIED", bound)
    assert both.only_pod().node_name == "n2"


def test_a_binding_with_another_change_is_read_in_full() -> None:
    waiting = pod("w-0", uid="u0", gpu=1)
    both = Both([waiting])
    bound = copy.deepcopy(waiting)
    bound["spec"]["nodeName"] = "n1"
    bound["spec"]["priority"] = 5
    assert not both.read_fast("MODIFIED", bound)


def test_a_node_name_written_inside_a_string_is_not_taken_for_the_binding() -> None:
    waiting = pod("w-0", uid="u0", gpu=1)
    waiting["spec"]["containers"][0]["args"] = ['"nodeName":"n3"', "nodeName"]
    both = Both([waiting])
    bound = copy.deepcopy(waiting)
    bound["spec"]["nodeName"] = "n1"
    assert both.read_fast("MODIFIED", bound)
    assert both.only_pod().node_name == "n1"
