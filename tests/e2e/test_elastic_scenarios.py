"""Elastic gangs end to end: the fake API server, gangplank over HTTP and the kube-scheduler
stand-in (docs/elastic.md). Gang `el` asks for 2 to 4 members of 8 GPUs on three 8-GPU nodes:
its minimum is planned whole, then one extra takes the third node; a job that needs a node later
takes the extra and leaves the minimum running. Slow (`make test-slow`)."""

from __future__ import annotations

from typing import Any

import pytest

from extender.core.gangs.placer import GangConfig
from extender.core.queues.policy import Policy
from extender.core.queues.policy_parse import parse_policy
from tests.builders import gang_pods, gpus, pod, policy_doc, queue
from tests.e2e.test_preemption_scenarios import QUEUE, add_nodes, names, wait_for_events
from tests.fakeapi import FakeApiServer
from tests.scheduler_sim import Extender, KubeScheduler

pytestmark = pytest.mark.slow

CONFIG = GangConfig(kick_interval_seconds=0.2)
ELASTIC = {"gangplank.io/gang-size": "2", "gangplank.io/gang-max": "4"}


QUEUES = parse_policy(
    policy_doc(queue("research"), queue("vision", guarantee=gpus(8))), "policy.yaml"
)


def elastic_members(labels: dict[str, str]) -> list[dict[str, Any]]:
    return [
        pod(f"el-{i}", gpu=8, labels={"gangplank.io/gang": "el", **labels}, annotations=ELASTIC)
        for i in range(4)
    ]


@pytest.mark.parametrize(
    "policy,el_labels,urgent",
    [
        (None, {}, {"priority": 1000}),
        (None, {}, {"priority": 1000, "alone": True}),
        (QUEUES, {QUEUE: "research"}, {"labels": {QUEUE: "vision"}}),
    ],
    ids=[
        "without queues a job of higher priority takes the extra",
        "a pod alone of higher priority takes the extra through kube-scheduler's preemption",
        "a queue below its guarantee reclaims the extra of a queue that borrows",
    ],
)
def test_an_elastic_gang_of_2_to_4_on_room_for_3_starts_3_then_gives_its_extra_back_first(
    api: FakeApiServer,
    policy: Policy | None,
    el_labels: dict[str, str],
    urgent: dict[str, Any],
) -> None:
    add_nodes(api, 3)
    with Extender(api, CONFIG, policy=policy) as extender:
        scheduler = KubeScheduler(api, extender)
        named = {}  # uid -> name
        for member in elastic_members(el_labels):
            put = api.put("pods", member)
            named[put["metadata"]["uid"]] = put["metadata"]["name"]
        scheduler.settle(timeout=30, until=lambda: len(scheduler.bound("el-")) == 3)
        started = scheduler.bound("el-")
        assert sorted(started.values()) == ["n0", "n1", "n2"], scheduler.reasons
        # Its minimum was planned whole (2 members), the extra placed on its own after it
        planned = {m for m in wait_for_events(api, 1) if "planned whole" in m}  # on each pod
        assert len(planned) == 1, planned
        assert planned.pop().startswith("gang default/el: 2 members planned whole on ")
        [waiting] = {f"el-{i}" for i in range(4)} - started.keys()
        assert started_on(api, waiting) is None

        alone = urgent.pop("alone", False)
        arrivals = (
            [pod("urgent-0", gpu=8, **urgent)] if alone else gang_pods("urgent", 1, gpu=8, **urgent)
        )
        for member in arrivals:
            api.put("pods", member)
        scheduler.settle(timeout=30, until=lambda: len(scheduler.bound("urgent")) == 1)
        assert len(scheduler.bound("urgent")) == 1, (scheduler.reasons, api.state.evictions)
        # gangplank's plan names the extra alone: kube-scheduler's preemption (for a higher
        # priority) or gangplank's evictor (reclaim) takes exactly it
        # (both may act on the same victim: it goes once)
        evicted = {name for _, name, dry in api.state.evictions if not dry}
        deleted = {named.get(u, u) for _, _, uids in scheduler.preemptions for u in uids}
        assert len(evicted | deleted) == 1, (scheduler.preemptions, api.state.evictions)
        running = {n for n in names(api, "el-") if started_on(api, n)}
        assert len(running) == 2 and running < started.keys(), "the minimum keeps running"
        [extra] = started.keys() - running
        assert started[extra] == started_on(api, "urgent-0")


def started_on(api: FakeApiServer, name: str) -> str | None:
    found = api.object("pods", "default", name)
    return found["spec"].get("nodeName") if found is not None else None
