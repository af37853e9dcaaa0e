"""The queues' usage history (the policy's `fairness:`) outlives a failover and a restart, and
says so when it is lost. Over HTTP: the fake API server (Leases, ConfigMaps), two gangplank
runtimes with their reflectors; the runtimes' clock is moved on by the test (an hour in a
step), so an hour of use is sampled without waiting an hour."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import orjson
import pytest

from extender.core.queues.policy_parse import parse_policy
from tests.builders import node, pod, policy_doc, queue
from tests.fakeapi import FakeApiServer
from tests.scheduler_sim import HISTORY_CONFIGMAP, Extender

LEASE = "kube-system/gangplank-scheduler"
POLICY = parse_policy(
    {
        **policy_doc(queue("research"), queue("vision")),
        "fairness": {"halfLife": "24h", "window": "7d"},
    }
)
STARTED = "2026-12-01T00:00:00Z"


class Clock:
    """time.time() and an offset the test moves on."""

    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset


def wait(until: Callable[[], Any], what: str, timeout: float = 10.0) -> Any:
    deadline = time.monotonic() + timeout
    while not (found := until()):
        assert time.monotonic() < deadline, what
        time.sleep(0.05)
    return found


def kept(api: FakeApiServer) -> dict[str, Any] | None:
    """The history record in the ConfigMap, or None."""
    with api.cond:
        found = api.state.config_maps.get("/".join(HISTORY_CONFIGMAP))
    return None if found is None else orjson.loads(found["data"]["history"])


def queues(extender: Extender) -> dict[str, dict[str, Any]]:
    return {q["name"]: q for q in extender.get("/queues")["queues"]}


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def research_ran_a_day(api: FakeApiServer, clock: Clock) -> Iterator[tuple[Extender, Extender]]:
    """Replica a leads while research runs 16 GPUs for a day (vision nothing), and keeps the
    history; b stands by. Then one job of each queue waits."""
    for i in range(2):
        api.put("nodes", node(f"n{i}", gpu=8, cpu="64"))
        running = pod(
            f"research-{i}", gpu=8, node=f"n{i}", labels={"gangplank.io/queue": "research"}
        )
        running["status"] = {"phase": "Running", "startTime": STARTED}
        api.put("pods", running)
    api.state.leases[LEASE] = "a_1f2e"
    with (
        Extender(api, policy=POLICY, identity="a", clock=clock) as a,
        Extender(api, policy=POLICY, identity="b", clock=clock) as b,
    ):
        wait(lambda: kept(api), "the leader writes the history once it has read it back")
        history = a.runtime.scheduler.history
        for _ in range(24):  # a sample each hour (one counts an hour at most)
            clock.offset += 3600.0
            last = history.last
            wait(partial(lambda was: history.last != was, last), "a pass samples the hour")
        clock.offset += 61.0
        wait(
            lambda: len((kept(api) or {}).get("buckets", ())) >= 24,
            "the leader writes a day of history within a minute",
        )
        for i in range(2):
            api.delete("pods", "default", f"research-{i}")
        for name in ("research", "vision"):
            api.put("pods", pod(f"{name}-next", gpu=8, labels={"gangplank.io/queue": name}))
        yield a, b


def research_is_behind(extender: Extender) -> None:
    seen = wait(
        lambda: (q := queues(extender))["research"]["pending"]["jobs"] and q,
        "the waiting jobs are seen",
    )
    research, vision = seen["research"], seen["vision"]
    hours = float(research["decayedUsage"]["nvidia.com/gpu"].split()[0])
    assert 16 * 24 * 0.70 < hours < 16 * 24 * 0.75, research  # 384 GPU-hours, decayed a day
    assert "nvidia.com/gpu" not in vision["decayedUsage"]
    assert research["shareNow"] == vision["shareNow"] == 0.0, "nothing runs now"
    assert research["share"] > vision["share"]
    assert research["behind"].startswith("queue research is behind queue vision: "), research
    assert (
        "GPU-hours used recently (half-life 24h) against 0.0 GPU-hours, weights 1:1"
        in (research["behind"])
    )
    line = {w["job"]: w["position"] for q in seen.values() for w in q["waiting"]}
    assert line == {"pod default/vision-next": 1, "pod default/research-next": 2}


def test_the_new_leader_reads_the_history_back_and_keeps_the_order(
    api: FakeApiServer, clock: Clock, research_ran_a_day: tuple[Extender, Extender]
) -> None:
    a, b = research_ran_a_day
    research_is_behind(a)
    a.__exit__(None, None, None)  # the leader's pod dies; b's scheduler takes the Lease
    api.state.leases[LEASE] = "b_9c0d"
    wait(lambda: b.runtime.scheduler.history.last is not None, "b leads and samples")
    assert "usage history" not in b.get("/readyz").get("reason", ""), "read back"
    research_is_behind(b)
    why = b.get("/why?pod=default/research-next")
    assert why["fairOrder"].startswith("queue research is behind queue vision: "), why
    metrics = b.metrics()
    assert 'gangplank_queue_decayed_usage{queue="research",resource="nvidia.com/gpu"} 9' in metrics
    assert "gangplank_usage_history_up 1.0" in metrics


def test_a_restarted_process_reads_the_history_back(
    api: FakeApiServer, clock: Clock, research_ran_a_day: tuple[Extender, Extender]
) -> None:
    a, _ = research_ran_a_day
    a.__exit__(None, None, None)
    with Extender(api, policy=POLICY, identity="a", clock=clock) as again:
        wait(lambda: not again.runtime.scheduler.history_lost, "read back after the restart")
        research_is_behind(again)


def test_a_history_that_cannot_be_read_falls_back_to_todays_order_and_says_so(
    api: FakeApiServer, clock: Clock
) -> None:
    api.put("nodes", node("n0", gpu=8, cpu="64"))
    api.put_config_map(
        {
            "metadata": {"name": HISTORY_CONFIGMAP[1], "namespace": HISTORY_CONFIGMAP[0]},
            "data": {"history": '{"version": 99}'},
        }
    )
    with Extender(api, policy=POLICY, clock=clock) as alone:
        lost = "usage history the record kept in the cluster is lost (not a usage history record"
        wait(lambda: lost in alone.runtime.ready()[1], "said in /readyz's detail")
        assert lost in alone.get("/status")["paused"]["fair order"]
        assert "gangplank_usage_history_up 0.0" in alone.metrics()
        clock.offset += 61.0  # this leader writes its own over it: the history starts again
        wait(lambda: (kept(api) or {}).get("version") == 1, "a history of its own is kept")
        wait(lambda: "gangplank_usage_history_up 1.0" in alone.metrics(), "and used from then on")
        assert "usage history" not in alone.runtime.ready()[1]


def test_a_history_the_api_server_refuses_is_not_overwritten_and_the_refusal_is_shown(
    api: FakeApiServer, clock: Clock
) -> None:
    api.put("nodes", node("n0", gpu=8, cpu="64"))
    api.state.forbidden_config_maps.add(HISTORY_CONFIGMAP[0])
    with Extender(api, policy=POLICY, clock=clock) as alone:
        said = (
            "usage history cannot be read: cannot read usage history "
            "gangplank/gangplank-usage-history: 403 Forbidden"
        )
        wait(lambda: said in alone.runtime.ready()[1], "said in /readyz's detail")
        assert "--usage-history-configmap to that ConfigMap" in alone.runtime.ready()[1]
        assert "the fair order is by current use alone meanwhile" in alone.runtime.ready()[1]
        assert "gangplank_usage_history_up 0.0" in alone.metrics()
        clock.offset += 61.0
        time.sleep(0.5)  # passes run: none writes what it could not read
        assert not [m for m, p in api.config_map_calls() if m != "GET" and "usage-history" in p]
