"""Events where people look: a gang's members are told when it is planned and a job held by its
queue is told why — once per change of state, not once per filter call."""

from __future__ import annotations

import time
from typing import Any

from extender.core.model.notices import Notice
from extender.core.queues.policy_parse import parse_policy
from extender.kube.convert import pod_from_api
from extender.kube.events import ApiEventRecorder
from tests.builders import gang_pods, gpus, node, nothing_to_preempt, pod, policy_doc, queue
from tests.fakeapi import FakeApiServer
from tests.scheduler_sim import Extender, KubeScheduler


def events(
    api: FakeApiServer, reason: str, count: int, seconds: float = 10
) -> list[dict[str, Any]]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = [e for e in api.state.posted_events if e["reason"] == reason]
        if len(found) >= count:
            return found
        time.sleep(0.05)
    return [e for e in api.state.posted_events if e["reason"] == reason]


def passes_go_by(extender: Extender, count: int) -> None:
    """Wait for `count` periodic passes: the notices of each are told as Events after it."""

    def passes() -> float:
        done = extender.runtime.metrics.registry.get_sample_value(
            "gangplank_decision_lock_held_seconds_count", {"holder": "periodic pass"}
        )
        return done or 0.0

    until = passes() + count
    deadline = time.monotonic() + 10
    while passes() < until:
        assert time.monotonic() < deadline, f"{count} periodic passes not within 10 s"
        time.sleep(0.05)


def test_a_planned_gang_tells_its_members_once(api: FakeApiServer) -> None:
    for i in range(2):
        api.put("nodes", node(f"n{i}", gpu=8, cpu="64"))
    with Extender(api) as extender:
        scheduler = KubeScheduler(api, extender)
        for member in gang_pods("ring", 2, gpu=8):
            api.put("pods", member)
        scheduler.settle()
        planned = events(api, "GangPlanned", 2)
        assert sorted(e["involvedObject"]["name"] for e in planned) == ["ring-0", "ring-1"]
        assert "gang default/ring: 2 members planned whole on n0, n1" in planned[0]["message"]
        passes_go_by(extender, 3)
        assert len(events(api, "GangPlanned", 3, seconds=0.1)) == 2, "once, not per call"


def test_a_job_held_by_its_queue_is_told_why_once_however_often_it_is_retried(
    api: FakeApiServer,
) -> None:
    for i in range(2):
        api.put("nodes", node(f"n{i}", gpu=8, cpu="64"))
    policy = parse_policy(policy_doc(queue("a", max=gpus(8))))
    with Extender(api, policy=policy) as extender:
        scheduler = KubeScheduler(api, extender)
        api.put("pods", pod("a1", gpu=8, labels={"gangplank.io/queue": "a"}))
        api.put("pods", pod("a2", gpu=8, labels={"gangplank.io/queue": "a"}))
        scheduler.settle()
        for _ in range(3):  # kube-scheduler retries the held pod
            extender.post(
                "filter",
                {"Pod": api.state.objects["pods"]["default/a2"], "NodeNames": ["n0", "n1"]},
            )
        events(api, "QueueHeld", 1)
        passes_go_by(extender, 3)
        held = events(api, "QueueHeld", 2, seconds=0.1)
        assert len(held) == 1
        assert held[0]["involvedObject"]["name"] == "a2"
        assert (
            held[0]["message"]
            == "queue a: nvidia.com/gpu 8 of max 8 in use, pod default/a2 needs 8"
            + nothing_to_preempt("a")
        )


class _Core:
    def __init__(self) -> None:
        self.posted = 0

    def create_namespaced_event(self, namespace: str, body: Any, **_: Any) -> Any:
        self.posted += 1
        return self

    def drain_conn(self) -> None: ...

    def release_conn(self) -> None: ...


def test_events_are_rate_limited_and_a_notice_tells_at_most_8_pods() -> None:
    now = [0.0]
    core = _Core()
    recorder = ApiEventRecorder(core, per_second=1, burst=10, clock=lambda: now[0])
    pods = [pod_from_api(p) for p in gang_pods("big", 20, gpu=1)]
    notice = Notice("gangplank:default/big", "GangPlanned", "planned")
    assert recorder.record(notice, pods) == 8
    assert recorder.record(notice, pods) == 2 and recorder.dropped == 6
    now[0] = 3.0
    assert recorder.record(notice, pods) == 3


def test_an_events_message_too_long_for_the_api_is_cut_between_words(api: FakeApiServer) -> None:
    from kubernetes import client

    from extender.kube.events import post_pod_event

    core = client.CoreV1Api(client.ApiClient(client.Configuration(host=api.url)))
    words = " ".join(f"node-{i} lacks 8 nvidia.com/gpu;" for i in range(100))
    assert post_pod_event(core, "default", "w-0", "", "Waiting", words)
    (posted,) = api.state.posted_events
    message = posted["message"]
    assert len(message) <= 1024 and message.endswith(" …")
    assert words.startswith(message[:-2]) and words[len(message) - 2] == " "
