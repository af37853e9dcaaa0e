"""The cache follows a (fake) API server over HTTP with the real kubernetes client, through
bookmarks, 410 Gone, dropped and slow streams."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client

from extender.cache.handlers import handlers_for
from extender.cache.reflector import Backoff, Reflector
from extender.cache.store import ClusterStore
from extender.observe.metrics import Metrics
from extender.service.watches import build_reflectors
from tests.builders import namespace, node, pod, priority_class
from tests.fakeapi import FakeApiServer


def wait_for(condition: Callable[[], bool], timeout: float = 5.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what or condition}")


def api_client(api: FakeApiServer) -> Any:
    return client.ApiClient(client.Configuration(host=api.url))


class Running:
    """A pod reflector running in a thread against the fake API server."""

    def __init__(
        self,
        api: FakeApiServer,
        *,
        read_timeout: float = 5.0,
        page_size: int = 500,
        watch_timeout: int = 2,
        backoff: Backoff | None = None,
        reset_after: float = 60.0,
    ) -> None:
        self.store = ClusterStore()
        handlers_for(self.store)["nodes"].replace([node("n1")])
        self.metrics = Metrics()
        core = client.CoreV1Api(api_client(api))
        self.reflector = Reflector(
            "pods",
            core.list_pod_for_all_namespaces,
            handlers_for(self.store)["pods"],
            observer=self.metrics,
            page_size=page_size,
            watch_timeout=watch_timeout,
            read_timeout=read_timeout,
            backoff=backoff or Backoff(base=0.02, cap=0.1),
            reset_after=reset_after,
        )
        self.thread = threading.Thread(target=self.reflector.run, daemon=True)

    def __enter__(self) -> Running:
        self.thread.start()
        wait_for(self.reflector.synced.is_set, what="first list")
        return self

    def __exit__(self, *exc: object) -> None:
        self.reflector.stop()
        self.thread.join(5)

    def gpus(self, node_name: str) -> int:
        return self.store.snapshot().nodes[node_name].requested.get("nvidia.com/gpu", 0)

    def pod_names(self) -> set[str]:
        return {p.name for p in self.store._pods.values()}

    def metric(self, name: str, **labels: str) -> float:
        value = self.metrics.registry.get_sample_value(name, labels)
        return value or 0.0


@pytest.fixture
def api() -> Iterator[FakeApiServer]:
    with FakeApiServer() as server:
        server.put("nodes", node("n1"))
        yield server


def test_the_list_is_followed_by_a_watch_from_its_resource_version(api: FakeApiServer) -> None:
    api.put("pods", pod("a", node="n1", gpu=1, phase="Running"))
    with Running(api) as r:
        listed_rv = r.reflector.resource_version
        api.put("pods", pod("b", node="n1", gpu=2, phase="Running"))
        wait_for(lambda: r.pod_names() == {"a", "b"}, what="pod b from the watch")
    first_watch = api.watch_calls("pods")[0]
    assert first_watch["resourceVersion"] == [listed_rv]
    assert first_watch["allowWatchBookmarks"] == ["true"]


def test_a_large_list_is_read_in_pages(api: FakeApiServer) -> None:
    for i in range(25):
        api.put("pods", pod(f"p{i}", node="n1", phase="Running"))
    with Running(api, page_size=10) as r:
        assert len(r.pod_names()) == 25
    assert len(api.list_calls("pods")) == 3


def test_a_cluster_loaded_before_anyone_watched_is_listed_in_pages_and_then_watched(
    api: FakeApiServer,
) -> None:
    api.load("pods", [pod(f"p{i}", node="n1", phase="Running") for i in range(25)])
    with Running(api, page_size=10) as r:
        assert len(r.pod_names()) == 25
        api.put("pods", pod("late", node="n1", phase="Running"))
        wait_for(lambda: "late" in r.pod_names(), what="the pod put after the list, watched")
        api.delete("pods", "default", "p3")
        wait_for(lambda: "p3" not in r.pod_names(), what="the deletion, watched")
    with Running(api, page_size=10) as again:  # the next list sees both changes
        assert len(again.pod_names()) == 25 and "late" in again.pod_names()


def test_a_bookmark_moves_the_resource_version_used_to_reconnect(api: FakeApiServer) -> None:
    with Running(api) as r:
        wait_for(lambda: len(api.watch_calls("pods")) == 1)
        bookmark_rv = api.bookmark("pods")
        wait_for(lambda: r.reflector.resource_version == str(bookmark_rv), what="bookmark rv")
        api.faults("pods").drop_after = 0  # next stream dies at once...
        api.put("pods", pod("a", node="n1", phase="Running"))  # ...when this event comes
        wait_for(lambda: r.pod_names() == {"a"}, what="pod after reconnect")
    resumed = [q["resourceVersion"][0] for q in api.watch_calls("pods")]
    assert str(bookmark_rv) in resumed[1:], "reconnected from the bookmark's resourceVersion"
    assert r.metric("gangplank_watch_events_total", kind="pods", type="BOOKMARK") >= 1


def test_410_gone_on_the_watch_relists_and_replaces(api: FakeApiServer) -> None:
    doomed = api.put("pods", pod("doomed", node="n1", gpu=4, phase="Running"))
    with Running(api) as r:
        assert r.gpus("n1") == 4
        # The watch drops as "doomed" is deleted (the DELETED event is never delivered) and
        # history is gone by the time it reconnects: only a relist can tell what happened.
        api.faults("pods").gone_status = 1
        api.faults("pods").drop_after = 0
        api.delete("pods", "default", doomed["metadata"]["name"])
        api.put("pods", pod("fresh", node="n1", gpu=1, phase="Running"))
        wait_for(lambda: r.pod_names() == {"fresh"}, what="relist after 410")
        assert r.gpus("n1") == 1
        assert r.metric("gangplank_cache_relists_total", kind="pods") >= 1
    assert len(api.list_calls("pods")) >= 2


def test_a_410_error_event_in_the_stream_relists(api: FakeApiServer) -> None:
    with Running(api) as r:
        wait_for(lambda: len(api.watch_calls("pods")) >= 1)
        api.faults("pods").gone_event = 1
        api.faults("pods").drop_after = 0
        api.put("pods", pod("x", node="n1", phase="Running"))
        wait_for(
            lambda: r.metric("gangplank_cache_relists_total", kind="pods") >= 1,
            what="relist after ERROR 410",
        )
        wait_for(lambda: r.pod_names() == {"x"})


def test_a_dropped_stream_reconnects_without_losing_or_doubling_events(
    api: FakeApiServer,
) -> None:
    with Running(api) as r:
        api.faults("pods").drop_after = 2
        for i in range(5):
            api.put("pods", pod(f"p{i}", node="n1", gpu=1, phase="Running", uid=f"u{i}"))
        wait_for(lambda: len(r.pod_names()) == 5, what="all five pods")
        assert r.gpus("n1") == 5
        assert r.metric("gangplank_watch_errors_total", kind="pods", reason="ProtocolError") >= 1
    assert len(api.list_calls("pods")) == 1, "a dropped stream resumes; it does not relist"


def test_a_slow_stream_applies_each_event_as_it_arrives(api: FakeApiServer) -> None:
    with Running(api) as r:
        api.faults("pods").delay = 0.3
        api.put("pods", pod("first", node="n1", phase="Running"))
        api.put("pods", pod("second", node="n1", phase="Running"))
        api.put("pods", pod("third", node="n1", phase="Running"))
        wait_for(lambda: "first" in r.pod_names(), what="the first event")
        assert "third" not in r.pod_names(), "applied before the stream has finished"
        wait_for(lambda: len(r.pod_names()) == 3)


def test_a_stalled_stream_is_abandoned_after_the_read_timeout(api: FakeApiServer) -> None:
    with Running(api, read_timeout=0.5, watch_timeout=30) as r:
        wait_for(lambda: len(api.watch_calls("pods")) == 1)
        api.faults("pods").stall = True
        api.put("pods", pod("late", node="n1", phase="Running"))
        wait_for(lambda: len(api.watch_calls("pods")) >= 2, what="a reconnect")
        api.faults("pods").stall = False
        wait_for(lambda: r.pod_names() == {"late"})


def test_a_quiet_kind_gets_a_bookmark_a_minute_so_its_stream_outlives_the_read_timeout() -> None:
    # the fake, like kube-apiserver, sends a watch that asked for bookmarks one a minute (here
    # every 0.2 s, against a read timeout of 0.5 s)
    with (
        FakeApiServer(bookmark_every=0.2) as quiet,
        Running(quiet, read_timeout=0.5, watch_timeout=30) as r,
    ):
        listed_at = r.reflector.resource_version
        time.sleep(2.0)
        assert len(quiet.watch_calls("pods")) == 1, "one stream, never dropped"
        assert r.metrics.registry.get_sample_value(
            "gangplank_watch_events_total", {"kind": "pods", "type": "BOOKMARK"}
        )
        quiet.put("nodes", node("n2"))  # moves the resourceVersion on
        time.sleep(0.5)
        assert int(r.reflector.resource_version) > int(listed_at)


class Delays(Backoff):
    def __init__(self) -> None:
        super().__init__(base=0.05, cap=5.0)
        self.delays: list[float] = []

    def next_delay(self) -> float:
        self.delays.append(super().next_delay())
        return self.delays[-1]


@pytest.mark.parametrize("long_life", [True, False])
def test_a_watch_lost_after_a_long_life_starts_its_backoff_over(
    api: FakeApiServer, long_life: bool
) -> None:
    # Each stream stays up 0.4 s (the read timeout) before it is lost. Counted as long-lived
    # (reset_after 0.2 s), every retry waits the first delay; otherwise the delays double.
    backoff = Delays()
    reset_after = 0.2 if long_life else 60.0
    with Running(api, read_timeout=0.4, watch_timeout=30, backoff=backoff, reset_after=reset_after):
        api.faults("pods").stall = True
        wait_for(lambda: len(backoff.delays) >= 4, timeout=15, what="four lost streams")
    if long_life:
        assert max(backoff.delays) <= 0.05, backoff.delays
    else:
        assert max(backoff.delays) > 0.2, backoff.delays


def test_the_api_server_down_at_start_is_retried_until_it_answers() -> None:
    store = ClusterStore()
    core = client.CoreV1Api(client.ApiClient(client.Configuration(host="http://127.0.0.1:9")))
    metrics = Metrics()
    reflector = Reflector(
        "pods",
        core.list_pod_for_all_namespaces,
        handlers_for(store)["pods"],
        observer=metrics,
        backoff=Backoff(base=0.01, cap=0.02),
        connect_timeout=0.2,
    )
    thread = threading.Thread(target=reflector.run, daemon=True)
    thread.start()
    wait_for(
        lambda: (
            (
                metrics.registry.get_sample_value(
                    "gangplank_watch_errors_total", {"kind": "pods", "reason": "MaxRetryError"}
                )
                or 0
            )
            >= 2
        ),
        what="retries",
    )
    assert not reflector.synced.is_set()
    reflector.stop()
    thread.join(2)
    assert not thread.is_alive()


def test_all_four_kinds_are_listed_and_watched(api: FakeApiServer) -> None:
    api.put("namespaces", namespace("ml"))
    api.put("priorityclasses", priority_class("high", 1000))
    api.put("pods", pod("a", node="n1", gpu=2, phase="Running"))
    store = ClusterStore()
    reflectors = build_reflectors(store, api_client(api), Metrics())
    threads = [threading.Thread(target=r.run, daemon=True) for r in reflectors]
    for t in threads:
        t.start()
    try:
        wait_for(lambda: all(r.synced.is_set() for r in reflectors))
        snap = store.snapshot()
        assert set(snap.nodes) == {"n1"} and snap.namespaces.keys() == {"ml"}
        assert snap.priority_classes == {"high": 1000}
        assert snap.nodes["n1"].requested["nvidia.com/gpu"] == 2
        api.put("nodes", node("n2"))
        wait_for(lambda: "n2" in store.snapshot().nodes)
    finally:
        for r in reflectors:
            r.stop()
