"""Stale data is never acted on: while the API server is gone past `--stale-after`, gangplank
says so (`/readyz`, `gangplank_cache_stale`, the reason each waiting pod gets), plans no gang,
admits no queued job and evicts no one; pods outside gangs and queues keep flowing. Once the API
server is back (after a 410 storm, too) the cache converges and work goes on.

A fake API server on loopback goes down for real (open watches cut, every call 503), and
gangplank runs with its real reflectors and HTTP app (tests/scheduler_sim.py)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from extender.core.queues.policy_parse import parse_policy
from tests.builders import eviction, gang_pods, gpus, node, pod, policy_doc, queue
from tests.fakeapi import FakeApiServer
from tests.scheduler_sim import Extender

NODES = ["n0", "n1", "n2", "n3"]


def eventually(
    check: Callable[[], Any],
    what: str,
    timeout: float = 15.0,
    detail: Callable[[], str] = lambda: "",
) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, f"not within {timeout:.0f} s: {what} {detail()}"
        time.sleep(0.05)


def watches(extender: Extender) -> str:
    """Each kind's watch as the runtime sees it, for a failure message."""
    return "; ".join(
        f"{r.kind}: down {r.down_for():.1f} s ({r.down_reason}) at rv {r.resource_version}"
        for r in extender.runtime.reflectors
        if r.down_since is not None
    )


def periodic_passes(extender: Extender) -> float:
    """How many periodic passes the runtime has made (each holds the decision lock once)."""
    count = extender.runtime.metrics.registry.get_sample_value(
        "gangplank_decision_lock_held_seconds_count", {"holder": "periodic pass"}
    )
    return count or 0.0


def fresh_again(extender: Extender) -> None:
    eventually(
        lambda: extender.runtime.staleness() == "",
        "fresh again",
        timeout=40,
        detail=lambda: watches(extender),
    )


def cluster(api: FakeApiServer) -> None:
    for name in NODES:
        api.put("nodes", node(name, gpu=8, cpu="64"))
    api.put("namespaces", {"metadata": {"name": "team-a"}})
    for member in gang_pods("ring", 2, gpu=8):
        api.put("pods", member)
    api.put("pods", pod("queued", gpu=1, namespace="team-a"))
    api.put("pods", pod("plain", gpu=1))


def filter_call(extender: Extender, raw: dict[str, Any]) -> dict[str, Any]:
    status, answer = extender.post("filter", {"Pod": raw, "NodeNames": NODES})
    assert status == 200, answer
    result: dict[str, Any] = answer
    return result


def in_cache(extender: Extender, count: int) -> bool:
    return len(extender.store.snapshot().groups.get("gangplank:default/ring", ())) == count


POLICY = parse_policy(policy_doc(queue("team-a", guarantee=gpus(8), namespaces=["team-a"])))


def test_a_stale_view_holds_gangs_and_queued_jobs_evicts_no_one_and_lets_other_pods_go(
    api: FakeApiServer,
) -> None:
    cluster(api)
    with Extender(api, policy=POLICY, stale_after=0.5) as extender:
        eventually(lambda: in_cache(extender, 2), "the gang's pods in the cache")
        assert extender.runtime.staleness() == ""
        api.go_down()
        stale = eventually(extender.runtime.staleness, "the view counted stale")
        assert "has not answered the watch of" in stale
        # First the cut stream, then the API server's own answer once a watch is tried again.
        eventually(lambda: "503" in extender.runtime.staleness(), "the 503 in the reason")

        ready = extender.get("/readyz")
        assert ready["ready"] is True, "still ready: pass-through pods must keep flowing"
        assert ready["reason"].startswith("cache stale: the API server has not answered")
        assert "gangplank_cache_stale 1.0" in extender.metrics()

        plain = filter_call(extender, pod("plain", gpu=1))
        assert plain["NodeNames"] == NODES, "a pod outside gangs and queues is scheduled"
        ring = filter_call(extender, gang_pods("ring", 2, gpu=8)[0])
        assert ring["NodeNames"] == []
        reason = ring["FailedAndUnresolvableNodes"]["n0"]
        assert reason.startswith("gang default/ring waits: gangplank's view of the cluster is")
        assert "stale (the API server has not answered the watch of" in reason
        queued = filter_call(extender, pod("queued", gpu=1, namespace="team-a"))
        assert queued["NodeNames"] == []
        assert (
            "pod team-a/queued (queue team-a) waits" in queued["FailedAndUnresolvableNodes"]["n0"]
        )
        status, kept = extender.post(
            "preempt",
            {
                "Pod": pod("plain", gpu=1, priority=1000),
                "NodeNameToMetaVictims": {"n0": {"Pods": [{"UID": "x"}], "NumPDBViolations": 0}},
            },
        )
        assert (status, kept) == (200, {"NodeNameToMetaVictims": {}}), "no eviction while stale"
        why = extender.get("/why?pod=default/ring-0")
        assert "view of the cluster is stale" in why["reason"], why
        # An eviction planned just before the view went stale waits for it to be fresh.
        with extender.runtime.lock:
            extender.runtime.scheduler.preemption.evictions.pending.append(eviction("plain"))
        passes = periodic_passes(extender)
        eventually(lambda: periodic_passes(extender) >= passes + 3, "three periodic passes")
        assert not [e for e in api.state.evictions if not e[2]], "nothing evicted while stale"
        api.come_back()
        fresh_again(extender)
        assert extender.get("/readyz")["reason"] == "cache synced"
        assert "gangplank_cache_stale 0.0" in extender.metrics()
        eventually(
            lambda: ("default", "plain", False) in api.state.evictions, "the eviction, once fresh"
        )
        nudged = eventually(
            lambda: {name for _, name, _ in api.state.patches} >= {"ring-0", "queued"},
            "the pods told to wait for a fresh view nudged to be retried",
        )
        assert nudged
        ring = filter_call(extender, gang_pods("ring", 2, gpu=8)[0])
        assert len(ring["NodeNames"]) == 1, "the gang is planned once the view is fresh"


def test_the_cache_converges_after_an_outage_that_ends_in_a_410_storm(
    api: FakeApiServer,
) -> None:
    cluster(api)
    with Extender(api, stale_after=0.5) as extender:
        eventually(lambda: in_cache(extender, 2), "the gang's pods in the cache")
        api.go_down()
        eventually(extender.runtime.staleness, "the view counted stale")
        # What happened meanwhile: a node came, a gang member went, the history was compacted.
        api.put("nodes", node("n9", gpu=8))
        api.delete("pods", "default", "ring-1")
        api.compact("pods")
        api.compact("nodes")
        api.faults("pods").gone_status = 3  # and the first watches after it answer 410
        api.come_back()
        fresh_again(extender)
        snapshot = eventually(
            lambda: (
                (snap := extender.store.snapshot())
                and "n9" in snap.nodes
                and in_cache(extender, 1)
                and snap
            ),
            "the cache equal to the API server",
            timeout=40,
        )
        assert set(snapshot.nodes) == {*NODES, "n9"}
        assert 'gangplank_cache_relists_total{kind="pods"}' in extender.metrics()
