"""Failover and restart: two gangplank replicas, each beside its own kube-scheduler, and a Lease
saying which scheduler leads (only the leader's scheduler calls its gangplank). The leader dies
while a gang is planned, half bound or fully bound, or while a reclaim is evicting; the other
takes over. Afterwards: no capacity double-booked, no gang left running in part, no reservation
left behind, no eviction repeated, quota usage equal to a fresh recount, and the standby
answered correctly the moment it was asked (its cache was warm).

Everything runs for real over HTTP: the fake API server (with Leases), two gangplank runtimes
with their reflectors, and the kube-scheduler stand-in of tests/scheduler_sim.py."""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from extender.cache.store import ClusterStore
from extender.core.queues.policy_parse import parse_policy
from extender.kube.binder import StoreBinder
from extender.observe.metrics import Metrics
from extender.service.runtime import Runtime
from tests.builders import eviction, gang_pods, gpus, node, pod, policy_doc, queue
from tests.fakeapi import FakeApiServer
from tests.scheduler_sim import Extender, KubeScheduler

LEASE = "kube-system/gangplank-scheduler"
POLICY = parse_policy(policy_doc(queue("team-a", guarantee=gpus(64), namespaces=["default"])))
STARTED = "2026-12-01T00:00:00Z"


@contextlib.contextmanager
def replicas(api: FakeApiServer, bind_planned: bool = True) -> Iterator[tuple[Extender, Extender]]:
    """Replica a leads; b stands by (both watching, both warm). `bind_planned`: as
    `--bind-planned-members` (the default); False where a test stages a gang bound in part by
    kube-scheduler, one member at a time (tests/e2e/test_plan_binds.py kills a wave)."""
    api.state.leases[LEASE] = "a_1f2e"
    with (
        Extender(api, policy=POLICY, identity="a", bind_planned=bind_planned) as a,
        Extender(api, policy=POLICY, identity="b", bind_planned=bind_planned) as b,
    ):
        yield a, b


def fail_over(api: FakeApiServer, dead: Extender) -> None:
    """The leader's pod dies: its gangplank stops, b's scheduler takes the Lease."""
    dead.__exit__(None, None, None)
    api.state.leases[LEASE] = "b_9c0d"


def add_nodes(api: FakeApiServer, count: int) -> None:
    for i in range(count):
        api.put("nodes", node(f"n{i}", gpu=8, cpu="64"))


def schedule(scheduler: KubeScheduler, *names: str) -> None:
    """One scheduling cycle for each named pod (filter, prioritize, bind), in order."""
    scheduler._observe()
    for name in names:
        scheduler.schedule_one(f"default/{name}")


def bound(api: FakeApiServer, prefix: str) -> dict[str, str]:
    with api.cond:
        return {
            p["metadata"]["name"]: p["spec"]["nodeName"]
            for p in api.state.objects["pods"].values()
            if p["metadata"]["name"].startswith(prefix) and p["spec"].get("nodeName")
        }


def assert_no_double_booking(api: FakeApiServer) -> None:
    used: Counter[str] = Counter()
    with api.cond:
        for p in api.state.objects["pods"].values():
            if p["spec"].get("nodeName"):
                requests = p["spec"]["containers"][0]["resources"]["requests"]
                used[p["spec"]["nodeName"]] += int(requests.get("nvidia.com/gpu", 0))
    assert all(gpus_used <= 8 for gpus_used in used.values()), used


def assert_nothing_left_behind(extender: Extender) -> None:
    """No partial gang, no plan or reservation left (a plan whose members all bound goes once
    the watch confirms the last binding: a moment)."""
    deadline = time.monotonic() + 5
    while True:
        status = extender.get("/status")
        clean = status["reservedPods"] == 0 and status["plans"] == []
        if clean or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert status["gangs"]["partial"] == 0, status
    assert clean, status


def usage(extender: Extender) -> list[tuple[str, Any]]:
    return [(q["name"], q["used"]) for q in extender.get("/queues")["queues"]]


def recount_equals(api: FakeApiServer, extender: Extender) -> None:
    """A replica started now, from the API server alone, counts the same quota usage."""
    with Extender(api, policy=POLICY, identity="fresh") as fresh:
        assert usage(extender) == usage(fresh)


@pytest.mark.parametrize("how", ["failover", "restart"])
@pytest.mark.parametrize("bound_before", [0, 2, 4], ids=["planned", "half bound", "fully bound"])
def test_the_new_leader_completes_a_gang_the_old_one_left_without_double_booking(
    api: FakeApiServer, bound_before: int, how: str
) -> None:
    """`failover`: the other replica takes over; `restart`: the same replica comes back with
    nothing in memory (its scheduler kept the Lease). kube-scheduler binds each member (as it
    does with --no-bind-planned-members, and for members that need its bind cycle), so that a
    gang can be left bound in part."""
    add_nodes(api, 4)
    for member in gang_pods("ring", 4, gpu=8):
        api.put("pods", member)
    with replicas(api, bind_planned=False) as (a, b), contextlib.ExitStack() as later:
        old = KubeScheduler(api, a)
        old._observe()
        if bound_before == 0:  # the first member's filter made the plan; nothing bound
            status, answer = a.post(
                "filter", {"Pod": old_pod(api, "ring-0"), "NodeNames": [f"n{i}" for i in range(4)]}
            )
            assert status == 200 and len(answer["NodeNames"]) == 1
        else:
            schedule(old, *[f"ring-{i}" for i in range(bound_before)])
        assert len(bound(api, "ring")) == bound_before
        if how == "failover":
            fail_over(api, a)
            taker = b
        else:
            a.__exit__(None, None, None)
            taker = later.enter_context(
                Extender(api, policy=POLICY, identity="a", bind_planned=False)
            )
        # Work arriving meanwhile must not take the room the partial gang needs.
        for member in gang_pods("other", 2, gpu=8):
            api.put("pods", member)
        new = KubeScheduler(api, taker)
        new.settle(timeout=30, until=lambda: len(bound(api, "ring")) == 4)
        new.settle()
        assert len(bound(api, "ring")) == 4, new.reasons
        assert len(set(bound(api, "ring").values())) == 4, "one member a node"
        assert bound(api, "other") == {}, "no room left for the other gang"
        assert_no_double_booking(api)
        assert_nothing_left_behind(taker)
        recount_equals(api, taker)


def old_pod(api: FakeApiServer, name: str) -> dict[str, Any]:
    with api.cond:
        found: dict[str, Any] = api.state.objects["pods"][f"default/{name}"]
        return found


def test_the_standby_answers_correctly_the_moment_it_is_asked(api: FakeApiServer) -> None:
    add_nodes(api, 4)
    for i in range(3):
        running = pod(f"busy-{i}", gpu=8, node=f"n{i}")
        running["status"] = {"phase": "Running", "startTime": STARTED}
        api.put("pods", running)
    with replicas(api) as (a, b):
        deadline = time.monotonic() + 10
        while len(b.store.snapshot().nodes["n0"].pods) != 1:  # b's watch keeps it warm
            assert time.monotonic() < deadline
            time.sleep(0.02)
        fail_over(api, a)
        asked = time.monotonic()
        member = gang_pods("next", 1, gpu=8)[0]  # a gang of one: gangplank places it itself
        api.put("pods", member)
        status, answer = b.post("filter", {"Pod": member, "NodeNames": [f"n{i}" for i in range(4)]})
        took = time.monotonic() - asked
        assert status == 200 and answer["NodeNames"] == ["n3"], answer
        assert took < 1.0, f"the standby took {took:.2f} s"


def two_low_gangs_running(api: FakeApiServer) -> None:
    """8 nodes of 8 GPUs, full: gang low-a on n0-n3, low-b on n4-n7, 8 GPUs a member."""
    add_nodes(api, 8)
    for gang, first in (("low-a", 0), ("low-b", 4)):
        for i, member in enumerate(gang_pods(gang, 4, gpu=8)):
            member["spec"]["nodeName"] = f"n{first + i}"
            member["status"] = {"phase": "Running", "startTime": STARTED}
            api.put("pods", member)


def test_the_new_leader_repeats_no_eviction_the_old_one_made(api: FakeApiServer) -> None:
    two_low_gangs_running(api)
    with replicas(api) as (a, b):
        old = KubeScheduler(api, a)
        for member in gang_pods("urgent", 4, gpu=8, priority=1000):
            api.put("pods", member)

        def evicted() -> list[tuple[str, str, bool]]:
            return [e for e in api.state.evictions if not e[2]]

        old.settle(timeout=30, until=lambda: len(evicted()) >= 4)
        assert len(evicted()) == 4, "the old leader evicted one whole gang"
        fail_over(api, a)
        new = KubeScheduler(api, b)
        new.settle(timeout=30, until=lambda: len(bound(api, "urgent")) == 4)
        new.settle()
        assert len(bound(api, "urgent")) == 4, new.reasons
        assert len(evicted()) == 4, f"no eviction repeated or added: {evicted()}"
        assert sorted(Counter(e[1] for e in evicted()).values()) == [1, 1, 1, 1]
        survivors = {g for g in ("low-a", "low-b") if len(bound(api, g)) == 4}
        assert len(survivors) == 1, "the other low-priority gang is untouched"
        assert_no_double_booking(api)
        assert_nothing_left_behind(b)
        recount_equals(api, b)


def test_a_gang_the_old_leader_evicted_in_part_is_evicted_whole_by_the_new_one(
    api: FakeApiServer,
) -> None:
    """The old leader dies between two evictions of one victim gang: half of low-a is gone. The
    new leader finishes cutting low-a (it can no longer run as a gang) rather than cutting into
    low-b, which is whole: no gang is left running in part, and one gang pays, not two."""
    two_low_gangs_running(api)
    with replicas(api) as (a, b):
        fail_over(api, a)
        for name in ("low-a-0", "low-a-1"):  # what a had sent for urgent before it died
            api.state.evictions.append(("default", name, False))
            api.delete("pods", "default", name)
        for member in gang_pods("urgent", 4, gpu=8, priority=1000):
            api.put("pods", member)
        new = KubeScheduler(api, b)
        new.settle(timeout=30, until=lambda: len(bound(api, "urgent")) == 4)
        new.settle()
        assert len(bound(api, "urgent")) == 4, new.reasons
        assert bound(api, "low-a") == {}, "the rest of low-a is evicted"
        assert len(bound(api, "low-b")) == 4, f"low-b is untouched: {api.state.evictions}"
        evicted = [name for _, name, dry in api.state.evictions if not dry]
        assert sorted(evicted) == [f"low-a-{i}" for i in range(4)], "each once"
        assert_no_double_booking(api)
        assert_nothing_left_behind(b)
        recount_equals(api, b)


def test_a_policy_reload_in_flight_when_the_leader_dies_takes_effect_on_the_new_one(
    api: FakeApiServer, tmp_path: Path
) -> None:
    """Both replicas read the policy from the same file (a mounted ConfigMap): a change the old
    leader was still loading is not lost with it."""
    path = tmp_path / "policy.yaml"
    tight = policy_doc(queue("team-a", guarantee=gpus(8), max=gpus(8), namespaces=["default"]))
    path.write_text(yaml.safe_dump(tight))
    add_nodes(api, 4)
    api.state.leases[LEASE] = "a_1f2e"
    with (
        Extender(api, policy_path=str(path), identity="a") as a,
        Extender(api, policy_path=str(path), identity="b") as b,
    ):
        old = KubeScheduler(api, a)
        api.put("pods", gang_pods("first", 1, gpu=8)[0])
        old.settle(timeout=20, until=lambda: len(bound(api, "first")) == 1)
        api.put("pods", gang_pods("second", 1, gpu=8)[0])
        old.settle()
        assert bound(api, "second") == {}, "team-a is at its max of 8 GPUs"
        assert "max" in old.reasons["default/second-0"], old.reasons
        roomy = policy_doc(queue("team-a", guarantee=gpus(8), max=gpus(32), namespaces=["default"]))
        time.sleep(1.1)  # a new modification time for the watcher to see
        path.write_text(yaml.safe_dump(roomy))
        fail_over(api, a)  # at once: a may or may not have read it
        new = KubeScheduler(api, b)
        new.settle(timeout=30, until=lambda: len(bound(api, "second")) == 1)
        assert len(bound(api, "second")) == 1, new.reasons
        assert_no_double_booking(api)
        assert_nothing_left_behind(b)
        with Extender(api, policy_path=str(path), identity="fresh") as fresh:
            assert usage(b) == usage(fresh)


def test_a_replica_that_lost_the_lease_carries_out_no_eviction_it_had_planned(
    api: FakeApiServer,
) -> None:
    add_nodes(api, 1)
    running = pod("low", gpu=8, node="n0")
    running["status"] = {"phase": "Running", "startTime": STARTED}
    api.put("pods", running)
    with replicas(api) as (a, _b):
        api.state.leases[LEASE] = "b_9c0d"  # b's scheduler leads now; a lives on
        deadline = time.monotonic() + 5
        while a.runtime.leading() and time.monotonic() < deadline:
            a.runtime.kicker.leadership.is_leader()
            time.sleep(0.05)
        assert not a.runtime.leading()
        with a.runtime.lock:
            a.runtime.scheduler.preemption.evictions.pending.append(eviction("low"))
        time.sleep(1.0)  # ten passes of a's kicker
        assert api.state.evictions == [], "a no longer leads: it evicts no one"
        assert bound(api, "low") == {"low": "n0"}


class _LostDuringThePass:
    """The pass begins as leader; the replica learns (another caller asked) right after that
    its scheduler no longer leads: the moment the test above could hit on a loaded machine."""

    def __init__(self) -> None:
        self.known = True

    def is_leader(self) -> bool:
        answer, self.known = self.known, False
        return answer

    def last_known(self) -> bool:
        return self.known


class _Recorded:
    def __init__(self) -> None:
        self.evicted: list[str] = []

    def resize(self, change: Any, why: str) -> str:
        return "failed"

    def dry_run(self, pods: Sequence[tuple[str, str, str]], grace: int | None = None) -> str:
        return ""

    def evict(self, job: Any) -> str:
        self.evicted.extend(e.name for e in job)
        return "evicted"


def test_an_eviction_planned_while_a_pass_ran_waits_if_the_lease_was_lost_meanwhile() -> None:
    evictor = _Recorded()
    runtime = Runtime(
        ClusterStore(),
        StoreBinder(),
        Metrics(),
        preloaded=True,
        leadership=_LostDuringThePass(),
        evictor=evictor,
    )
    runtime.scheduler.preemption.evictions.pending.append(eviction("low"))
    runtime.kicker.run_once()  # began as leader; it knows better by the time it would evict
    assert evictor.evicted == []
    pending = runtime.scheduler.preemption.evictions.pending
    assert [e.name for e in pending] == ["low"], "kept, not lost"
