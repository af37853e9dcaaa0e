"""Pods kube-scheduler parked are not left for its 5-minute flush when gangplank restarts, when its
scheduler takes the Lease, or after an API-server outage; and the watches resume within seconds
of the API server's return, however long it was gone.

kube-scheduler parks a pod every node rejected and retries it only on a cluster event (a pod
created, an assigned pod deleted, a node added) or when the pod itself is updated; it flushes the
parked pods every 5 minutes (data/kube-scheduler/NOTES.md). gangplank nudges them (an annotation
patch) once their job may go ahead, but it remembers which pods wait only in memory. The stand-in of
tests/scheduler_sim.py has no flush at all: a pod nobody nudges waits for good, and `settle` gives
up. Everything runs over HTTP: the fake API server, gangplank's real reflectors and app."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

import pytest
import yaml

import extender.service.watches
from extender.cache.reflector import Reflector
from tests.builders import gang_pods, gpus, namespace, node, pod, pod_group, policy_doc, queue
from tests.fakeapi import FakeApiServer
from tests.scheduler_sim import Extender, KubeScheduler

LEASE = "kube-system/gangplank-scheduler"


def add_nodes(api: FakeApiServer, count: int, first: int = 0) -> None:
    for i in range(first, first + count):
        api.put("nodes", node(f"n{i}", gpu=8, cpu="64"))


def nudged(api: FakeApiServer) -> set[str]:
    with api.cond:
        return {name for _, name, _ in api.state.patches}


def park(scheduler: KubeScheduler, keys: list[str]) -> None:
    """Schedule until the pods `keys` (namespace/name) are parked, then leave them so."""
    scheduler.settle(timeout=20, until=lambda: set(keys) <= set(scheduler.parked))
    assert set(keys) <= set(scheduler.parked), (scheduler.parked, scheduler.reasons)


def wait_until_started(scheduler: KubeScheduler, keys: list[str]) -> None:
    api = scheduler.api
    names = {key.split("/")[1] for key in keys}

    def started() -> bool:
        return names <= set(scheduler.bound())

    scheduler.settle(timeout=15, until=started)
    assert started(), (
        f"{sorted(names)} not started: kube-scheduler holds {sorted(scheduler.parked)} parked "
        f"(last reasons {scheduler.reasons}); gangplank nudged {sorted(nudged(api))}"
    )


# ---- restart ---------------------------------------------------------------------------------


def team_a_policy(path: Path, max_gpus: int) -> None:
    doc = policy_doc(queue("team-a", guarantee=gpus(8), max=gpus(max_gpus), namespaces=["team-a"]))
    path.write_text(yaml.safe_dump(doc))


def team_a_at_its_max(api: FakeApiServer, path: Path, nodes: int) -> None:
    """team-a may use 8 GPUs, and uses them: a pod of 8 runs on the last of `nodes` nodes."""
    team_a_policy(path, 8)
    api.put("namespaces", namespace("team-a"))
    add_nodes(api, nodes)
    busy = pod("first", gpu=8, namespace="team-a", node=f"n{nodes - 1}")
    busy["status"] = {"phase": "Running", "startTime": "2026-12-01T00:00:00Z"}
    api.put("pods", busy)


def volcano_gang(api: FakeApiServer, path: Path) -> list[str]:
    """A Volcano gang whose PodGroup does not exist yet: gangplank refuses it, waiting for it."""
    add_nodes(api, 2)
    for i in range(2):
        member = pod(f"ring-{i}", gpu=8, annotations={"scheduling.k8s.io/group-name": "ring"})
        api.put("pods", member)
    return ["default/ring-0", "default/ring-1"]


def queued_gang(api: FakeApiServer, path: Path) -> list[str]:
    """team-a is at its max: its gang is refused by quota."""
    team_a_at_its_max(api, path, 3)
    for member in gang_pods("ring", 2, gpu=8, namespace="team-a"):
        api.put("pods", member)
    return ["team-a/ring-0", "team-a/ring-1"]


def queued_pod(api: FakeApiServer, path: Path) -> list[str]:
    """The same with a single pod, no gang."""
    team_a_at_its_max(api, path, 2)
    api.put("pods", pod("solo", gpu=8, namespace="team-a"))
    return ["team-a/solo"]


def podgroup_created(api: FakeApiServer, path: Path) -> None:
    api.put("volcano-podgroups", pod_group("ring", 2))


def max_raised(api: FakeApiServer, path: Path) -> None:
    team_a_policy(path, 32)


Setup = Callable[[FakeApiServer, Path], list[str]]
Change = Callable[[FakeApiServer, Path], None]


@pytest.mark.parametrize(
    ("setup", "change"),
    [(volcano_gang, podgroup_created), (queued_gang, max_raised), (queued_pod, max_raised)],
    ids=[
        "a Volcano gang whose PodGroup was created while gangplank was away",
        "a queued gang whose queue's max was raised while gangplank was away",
        "a queued pod whose queue's max was raised while gangplank was away",
    ],
)
def test_a_restarted_gangplank_nudges_the_parked_pods_it_never_filtered_and_they_start(
    api: FakeApiServer, tmp_path: Path, setup: Setup, change: Change
) -> None:
    """What lets the job go ahead happened while gangplank restarted, and is no cluster event for
    kube-scheduler (a PodGroup, gangplank's policy): only a nudge from the new process, which
    never saw the pods filtered, has them retried."""
    path = tmp_path / "policy.yaml"
    keys = setup(api, path)
    with Extender(api, policy_path=str(path)) as first:
        scheduler = KubeScheduler(api, first)
        park(scheduler, keys)
    change(api, path)
    with Extender(api, policy_path=str(path)) as restarted:
        scheduler.extender = restarted
        wait_until_started(scheduler, keys)
    assert {key.split("/")[1] for key in keys} <= nudged(api)


# ---- the Lease ---------------------------------------------------------------------------


def test_taking_the_lease_nudges_the_parked_pods_the_new_leader_never_filtered(
    api: FakeApiServer,
) -> None:
    """b stands by, warm; the gang's pods came after b started, and a's scheduler parked them
    (waiting for their PodGroup): b never saw them filtered. The PodGroup comes after a died
    (its memory went with it), and b's scheduler takes the Lease with the pods still parked. A
    real kube-scheduler that starts leading tries every pending pod once, so this is the worst
    case: b nudges them once its scheduler leads, and not before."""
    api.state.leases[LEASE] = "a_1f2e"
    with Extender(api, identity="b") as b:
        keys = volcano_gang(api, Path())
        with Extender(api, identity="a") as a:
            scheduler = KubeScheduler(api, a)
            park(scheduler, keys)
        podgroup_created(api, Path())
        time.sleep(1.0)  # ten passes of b's kicker, standing by
        assert nudged(api) == set(), "a standby nudges nothing"
        api.state.leases[LEASE] = "b_9c0d"
        scheduler.extender = b
        wait_until_started(scheduler, keys)
    assert {"ring-0", "ring-1"} <= nudged(api)


# ---- an outage ------------------------------------------------------------------------------


class ManualTime:
    """The reflectors' clock and waits: time passes for them only when the test moves it on, so
    an outage of a minute (and the backoff it grows) plays in about two seconds."""

    def __init__(self) -> None:
        self._now = 1000.0
        self._moved = threading.Condition()

    def now(self) -> float:
        return self._now

    def wait(self, event: threading.Event, seconds: float) -> bool:
        deadline = self._now + seconds
        with self._moved:
            while self._now < deadline and not event.is_set():
                self._moved.wait(0.05)
        return event.is_set()

    def advance(self, seconds: float, step: float = 0.5) -> None:
        for _ in range(round(seconds / step)):
            with self._moved:
                self._now += step
                self._moved.notify_all()
            time.sleep(0.02)  # the reflectors due now try (a failed try takes milliseconds)


@pytest.fixture
def manual_time(monkeypatch: pytest.MonkeyPatch) -> Iterator[ManualTime]:
    """gangplank's reflectors (built by `build_reflectors`) run on it."""
    clock = ManualTime()
    monkeypatch.setattr(
        extender.service.watches, "Reflector", partial(Reflector, clock=clock.now, wait=clock.wait)
    )
    yield clock


def watches_down(extender_: Extender) -> str:
    return "; ".join(
        f"{r.kind} down {r.down_for():.1f} s ({r.down_reason})"
        for r in extender_.runtime.reflectors
        if r.down_since is not None
    )


@pytest.mark.parametrize("drop", [False, True], ids=["answers 503", "drops every connection"])
def test_after_a_minute_without_the_api_server_a_gang_with_room_starts_within_5_s_of_its_return(
    api: FakeApiServer, manual_time: ManualTime, drop: bool
) -> None:
    """The API server is gone for 60 s (of the reflectors' time: `--stale-after` 30 s passes, the
    view turns stale) and comes back with a fourth node, room for the waiting gang. Its watches
    must be back within 5 s: time stops there for them, and the gang must still start."""
    add_nodes(api, 3)
    for member in gang_pods("ring", 4, gpu=8):
        api.put("pods", member)
    with Extender(api) as extender_:
        scheduler = KubeScheduler(api, extender_)
        park(scheduler, [f"default/ring-{i}" for i in range(4)])
        api.go_down(drop=drop)
        manual_time.advance(60)
        assert "has not answered the watch" in extender_.runtime.staleness()
        api.come_back()
        add_nodes(api, 1, first=3)
        back = manual_time.now()
        manual_time.advance(5)
        scheduler.settle(timeout=15, until=lambda: len(scheduler.bound("ring")) == 4)
        assert len(scheduler.bound("ring")) == 4, (
            f"not started {manual_time.now() - back:.0f} s after the API server came back: "
            f"{watches_down(extender_)}; {scheduler.reasons}"
        )
        assert extender_.runtime.staleness() == ""


def test_once_the_view_is_fresh_again_the_pending_pods_it_never_saw_filtered_are_nudged(
    api: FakeApiServer, manual_time: ManualTime
) -> None:
    """A gang whose pods came while the view was stale (kube-scheduler, on another API server,
    may have parked them unseen): once fresh, gangplank asks its core about every pending pod
    of the profile, and nudges those whose job may go ahead."""
    add_nodes(api, 2)
    with Extender(api) as extender_:
        api.go_down()
        manual_time.advance(40)
        assert extender_.runtime.staleness()
        for member in gang_pods("ring", 2, gpu=8):
            api.put("pods", member)
        api.come_back()
        manual_time.advance(5)
        deadline = time.monotonic() + 10
        while nudged(api) < {"ring-0", "ring-1"} and time.monotonic() < deadline:
            time.sleep(0.05)
        assert nudged(api) >= {"ring-0", "ring-1"}, watches_down(extender_)
