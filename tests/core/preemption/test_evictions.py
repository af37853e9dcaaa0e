"""The evictions queued (`core/preemption/evictions.py`): each victim job's pods together, with
what to tell the victim and the preemptor; recovery's evictions never twice; taken in order, and
what could not be carried out put back first."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from extender.core.engine import Engine
from extender.core.model.resources import GPU
from extender.core.model.snapshot import PodInfo, Snapshot
from extender.core.preemption.evictions import EvictionQueue
from extender.core.preemption.victim_candidates import RunningJob
from extender.core.queues.policy import PreemptionRules
from extender.core.queues.policy_parse import parse_policy
from extender.kube.convert import pod_from_api
from tests.builders import eviction, gang_pods, gpus, node, pod, policy_doc, queue
from tests.cluster import Cluster

NOW = 1_800_000_000.0
PREEMPTOR = "gangplank:default/urgent"


def started(raw: dict[str, Any], node: str, at: float) -> PodInfo:
    stamp = datetime.fromtimestamp(at, UTC).isoformat().replace("+00:00", "Z")
    return pod_from_api(
        {
            **raw,
            "spec": {**raw["spec"], "nodeName": node},
            "status": {"phase": "Running", "startTime": stamp},
        }
    )


def job_of(key: str, pods: list[PodInfo]) -> RunningJob:
    """Job `key` running `pods` (in no queue), as victim candidates are found."""
    gpus = sum(p.requests.get(GPU, 0) for p in pods)
    return RunningJob(key, None, 0, min(p.started for p in pods), tuple(pods), {}, {GPU: gpus})


def rules(queue: str | None) -> PreemptionRules:
    return PreemptionRules(grace_seconds=45)


def urgent() -> list[PodInfo]:
    members = gang_pods("urgent", 2, gpu=8, priority=100)
    members[1]["metadata"]["creationTimestamp"] = "2026-11-30T10:00:00Z"  # the first created
    return [pod_from_api(p) for p in members]


def test_each_victim_jobs_pods_go_together_told_why_and_for_whom() -> None:
    low = [started(p, f"n{i}", NOW - 100) for i, p in enumerate(gang_pods("low", 2, gpu=8))]
    queued = EvictionQueue()
    victims = [job_of("gangplank:default/low", low)]
    queued.queue(Snapshot({}), victims, PREEMPTOR, urgent(), None, "priority", rules, None, NOW)
    evictions = queued.take()
    assert [(e.name, e.job, e.rule, e.grace_seconds, e.plan) for e in evictions] == [
        ("low-0", "gangplank:default/low", "priority", 45, PREEMPTOR),
        ("low-1", "gangplank:default/low", "priority", 45, PREEMPTOR),
    ]
    assert evictions[0].gpu_seconds == 16 * 100 / 2, "the job's GPU-time, shared among its pods"
    assert evictions[0].message == (
        "evicted by gangplank: priority 100 (no queue), for gang default/urgent "
        "(all 2 pod(s) of gang default/low go together)"
    )
    assert evictions[0].preemptor == ("default", "urgent-1"), "its first pod is told"
    assert evictions[0].preemptor_message == (
        "gangplank evicts 1 job(s) for this gang default/urgent: priority 100 (no queue): "
        "gang default/low"
    )
    assert queued.take() == [], "taken: gone from the queue"


def test_a_reclaim_tells_the_guarantee_of_the_queue_it_is_for_and_what_that_queue_uses() -> None:
    policy = parse_policy(policy_doc(queue("mine", guarantee=gpus(16)), queue("other")))
    book = Engine(policy=policy).book_for(Cluster(nodes=[node("n0")]).snap())
    low = [started(pod("lent", gpu=8), "n0", NOW - 100)]
    evictions = EvictionQueue()
    victims = [job_of("pod:default/lent", low)]
    evictions.queue(Snapshot({}), victims, PREEMPTOR, urgent(), "mine", "reclaim", rules, book, NOW)
    [evicted] = evictions.take()
    assert evicted.rule == "reclaim"
    assert evicted.message == (
        "evicted by gangplank: reclaim for queue mine (guarantee 16 nvidia.com/gpu, using 0), "
        "for gang default/urgent (all 1 pod(s) of pod default/lent go together)"
    )


def test_the_bound_members_of_a_broken_gang_go_whole_and_only_they() -> None:
    members = gang_pods("broken", 3, gpu=8)
    pods = [
        started(members[0], "n0", NOW - 10),
        started(members[1], "n1", NOW - 10),
        pod_from_api(members[2]),  # never bound
    ]
    queued = EvictionQueue()
    queued.evict_broken("gangplank:default/broken", pods, NOW)
    evictions = queued.take()
    assert [(e.name, e.rule, e.grace_seconds, e.plan) for e in evictions] == [
        ("broken-0", "recovery", None, ""),
        ("broken-1", "recovery", None, ""),
    ]
    assert evictions[0].gpu_seconds == 8 * 10
    assert evictions[0].message.startswith(
        "evicted by gangplank: gang default/broken runs 2 of its pods and the rest fit nowhere"
    )


def test_a_recorded_plans_victims_are_queued_once_however_often_recovery_asks() -> None:
    victims = [started(pod("v0", gpu=8), "n0", NOW - 60), started(pod("v1", gpu=8), "n0", NOW)]
    preemptor = urgent()[0]
    queued = EvictionQueue()
    queued.evict_recorded(PREEMPTOR, victims, preemptor, NOW)
    queued.evict_recorded(PREEMPTOR, victims, preemptor, NOW + 5)
    evictions = queued.take()
    assert [(e.name, e.job, e.plan) for e in evictions] == [
        ("v0", "pod:default/v0", PREEMPTOR),
        ("v1", "pod:default/v1", PREEMPTOR),
    ]
    assert evictions[0].preemptor == ("default", "urgent-0")
    assert "finishing the preemption planned for gang default/urgent" in evictions[0].message


def test_evictions_put_back_come_before_those_queued_since() -> None:
    queued = EvictionQueue()
    queued.pending.append(eviction("a"))
    taken = queued.take()
    queued.pending.append(eviction("b"))
    queued.put_back(taken)
    assert [e.name for e in queued.take()] == ["a", "b"]
