"""Room in a queue's quota (`core/preemption/quota_room.py`): what victims give back to their
queues, whether the queue admits a job once they are gone, and why no one was evicted."""

from __future__ import annotations

from extender.core.model.resources import GPU
from extender.core.preemption.quota_room import admits_once_gone, freed_by_queue, no_victims_reason
from extender.core.preemption.victim_candidates import RunningJob
from extender.core.queues.book import QueueBook
from extender.core.queues.policy_parse import parse_policy
from tests.builders import gpus, node, pod, policy_doc, queue
from tests.cluster import Cluster


def running(name: str, queue: str | None, gpu: int, node: str = "n0") -> RunningJob:
    return RunningJob(f"pod:default/{name}", queue, 0, 0.0, (), {node: {GPU: gpu, "cpu": 1000}})


def test_victims_give_back_the_governed_resources_they_hold_to_their_own_queue() -> None:
    jobs = [running("a", "team", 2), running("b", "team", 4, "n1"), running("c", None, 8)]
    assert freed_by_queue(jobs, [GPU]) == {"team": {GPU: 6}}, "cpu is governed by no queue"
    assert freed_by_queue([running("d", "other", 1)], [GPU, "cpu"]) == {
        "other": {GPU: 1, "cpu": 1000}
    }


def test_a_full_queue_admits_a_job_once_enough_of_its_own_work_is_gone() -> None:
    policy = parse_policy(policy_doc(queue("team", max=gpus(8), namespaces=["default"])))
    cluster = Cluster(nodes=[node("n0")], pods=[pod("low", node="n0", gpu=8, phase="Running")])
    book = QueueBook(policy)
    book.refresh(cluster.snap(), {})
    admits = admits_once_gone(book, "team", {GPU: 4}, "pod default/urgent")
    assert not admits([]), "the queue is at its max"
    assert not admits([running("small", "team", 2)]), "2 given back, 4 needed"
    assert admits([running("low", "team", 8)])


def test_no_victims_says_which_limit_stood_in_the_way() -> None:
    assert no_victims_reason("team", 100, found=3, budget=(10, 10), wanted=16) == (
        "preemption would have to evict 16 jobs at once, more than "
        "preemption.evictionsPerMinute (10) allows: raise it for this job to preempt"
    )
    assert no_victims_reason("team", 100, found=3, budget=(0, 10)) == (
        "preemption waits: this minute's evictions are spent (0 of "
        "preemption.evictionsPerMinute 10 left)"
    )
    assert no_victims_reason("team", 100, found=0, budget=(10, 10)).startswith(
        "nothing may be preempted for it: no job of queue team runs at a priority below 100"
    )
    assert no_victims_reason("team", 100, found=3, budget=(10, 10)) == (
        "evicting every job the rules allow (3 running) would not make room for it"
    )
