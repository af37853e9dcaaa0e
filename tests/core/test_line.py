"""The fair line (`core/line.py`), through the engine with a policy: admission counted once per
job; a refusal told once; a job past its quota or lacking room may take the place of work the
rules let it preempt; each pass, the first jobs of the line that kube-scheduler never sends get
the same chance, and the hold goes to the first job of the line its quota admits."""

from __future__ import annotations

from typing import Any

from extender.core.engine import Engine
from extender.core.line import RECLAIM_TRIES
from extender.core.model.answers import FilterResult, Victims
from extender.core.model.rejection import Rejection
from extender.core.queues.policy_parse import parse_policy
from extender.kube.convert import pod_from_api
from tests.builders import gang_pods, gpus, node, nothing_to_preempt, pod, policy_doc, queue
from tests.cluster import Cluster

QUEUE = "gangplank.io/queue"
CREATED = 1_796_119_200.0  # 2026-12-01T10:00Z: when the builders' pods are created
NOW = CREATED + 3600.0
KICK_INTERVAL = 5.0  # the engine's default


def in_queue(name: str, q: str | None, *, gpu: int = 8, **kwargs: Any) -> dict[str, Any]:
    return pod(name, gpu=gpu, labels={QUEUE: q} if q else {}, **kwargs)


def running(name: str, q: str | None, on: str, priority: int = 0) -> dict[str, Any]:
    return in_queue(name, q, node=on, phase="Running", priority=priority)


def gang_in(name: str, q: str, count: int = 2, **kwargs: Any) -> list[dict[str, Any]]:
    return gang_pods(name, count, gpu=8, labels={QUEUE: q}, **kwargs)


def cluster(*pods: dict[str, Any], nodes: int = 2) -> Cluster:
    return Cluster(nodes=[node(f"n{i}") for i in range(nodes)], pods=pods)


def engine(*queues: dict[str, Any]) -> Engine:
    return Engine(policy=parse_policy(policy_doc(*queues), "policy.yaml"))


def decide(co: Engine, c: Cluster, raw: dict[str, Any], now: float = NOW) -> FilterResult:
    snapshot = c.snap()
    return co.filter(snapshot, pod_from_api(raw), sorted(snapshot.nodes), now)


def told(co: Engine) -> list[tuple[str, str]]:
    return [(n.job, n.reason) for n in co.take_notices()]


# ---- admit, refuse, past_quota ------------------------------------------


def test_a_job_its_queue_admits_is_placed_and_its_admission_counted_once() -> None:
    members = gang_in("g", "q")
    c = cluster(*members)
    co = engine(queue("q"))
    assert [len(decide(co, c, m).passed) for m in members] == [1, 1]
    outcomes = co.ledger.take_outcomes()
    assert outcomes.admitted == {"q": 1}, "one job, two members"
    assert outcomes.waits == [("q", NOW - CREATED)]


def test_a_refused_job_is_told_why_once_and_its_search_for_victims_is_remembered() -> None:
    c = cluster(running("r", "q", "n0"), in_queue("p", "q"))
    co = engine(queue("q", max=gpus(8)))
    why = "queue q: nvidia.com/gpu 8 of max 8 in use, pod default/p needs 8"
    why += nothing_to_preempt("q")
    for _ in range(2):
        result = decide(co, c, in_queue("p", "q"))
        assert result.passed == [] and set(result.unresolvable.values()) == {why}
    notices = co.take_notices()
    assert [(n.job, n.reason, n.message) for n in notices] == [("pod:default/p", "QueueHeld", why)]
    assert co.ledger.take_outcomes().refused == {("q", "max"): 2}
    assert "pod:default/p" in co.preemption.tried, "no victims: not searched again on this state"


def test_a_job_past_its_quota_takes_the_place_of_its_queues_lower_work_instead_of_waiting() -> None:
    urgent = in_queue("urgent", "q", priority=100)
    c = cluster(running("low", "q", "n0"), urgent)
    co = engine(queue("q", max=gpus(8)))
    result = decide(co, c, urgent)
    assert set(result.unresolvable.values()) == {
        "pod default/urgent: planned on node n0, waiting for 1 preempted pod to leave "
        "(its pods start together)"
    }
    assert [e.name for e in co.preemption.take_evictions()] == ["low"]
    assert "QueueHeld" not in {reason for _, reason in told(co)}
    assert not co.waiting.is_refused("pod:default/urgent")


# ---- make_room and preempt ------------------------------------------


def test_a_gang_lacking_room_makes_room_by_preempting_lower_priority_work() -> None:
    members = gang_pods("g", 2, gpu=8, priority=100)
    c = cluster(running("low0", None, "n0"), running("low1", None, "n1"), *members)
    co = Engine()
    assert decide(co, c, members[0]).passed == [], "planned: waiting for its victims"
    plan = co.reservations.get("gangplank:default/g")
    assert plan is not None and len(plan.victims) == 2
    assert sorted(e.name for e in co.preemption.take_evictions()) == ["low0", "low1"]


def test_a_gang_that_no_preemption_makes_room_for_is_not_searched_again_on_that_state() -> None:
    members = gang_pods("g", 2, gpu=8)
    c = cluster(running("high0", None, "n0", 100), running("high1", None, "n1", 100), *members)
    co = Engine()
    assert decide(co, c, members[0]).passed == []
    assert "gangplank:default/g" not in co.reservations
    assert "gangplank:default/g" in co.preemption.tried
    assert co.preemption.take_evictions() == []


def test_kube_schedulers_preemption_for_an_incomplete_gang_parks_it_and_evicts_no_one() -> None:
    members = gang_pods("g", 1, size=2, gpu=8, priority=100)
    low = running("low", None, "n0")
    c = cluster(low, *members, nodes=1)
    co = Engine()
    member = pod_from_api(members[0])
    candidates = {"n0": Victims((low["metadata"]["uid"],))}
    assert co.preempt(c.snap(), member, candidates, NOW) == {}
    assert co.waiting.parked_kind("gangplank:default/g", member.uid) is Rejection.INCOMPLETE
    assert co.take_outcomes().failures == {"incomplete": 1}


def test_kube_schedulers_preemption_for_a_job_its_queue_holds_evicts_no_one() -> None:
    waiting = in_queue("p", "q", priority=100)
    low = running("low", "q", "n0")
    c = cluster(low, waiting, nodes=1)
    co = engine(queue("q", state="closed"))
    candidates = {"n0": Victims((low["metadata"]["uid"],))}
    assert co.preempt(c.snap(), pod_from_api(waiting), candidates, NOW) == {}
    refused = co.waiting.refusal_of("pod:default/p")
    assert refused is not None and refused.rule == "closed"
    assert told(co) == [("pod:default/p", "QueueHeld")]


# ---- each pass ------------------------------------------


def test_the_pass_lets_the_first_job_of_the_line_preempt_though_kube_scheduler_never_sent_it() -> (
    None
):
    members = gang_in("g", "q", priority=100)
    c = cluster(running("low0", "q", "n0"), running("low1", "q", "n1"), *members)
    co = engine(queue("q"))
    co.kick_candidates(c.snap(), NOW)
    assert "gangplank:default/g" in co.reservations
    assert sorted(e.name for e in co.preemption.take_evictions()) == ["low0", "low1"]


def test_each_pass_lets_only_the_first_jobs_of_the_line_preempt_at_most_once_an_interval() -> None:
    lows = [running(f"low{i}", "q", f"n{i}") for i in range(3)]
    waiting = [
        gang_in(f"g{i}", "q", 1, priority=100, created=f"2026-12-01T0{i}:00:00Z") for i in range(3)
    ]
    c = cluster(*lows, *(m for g in waiting for m in g), nodes=3)
    co = engine(queue("q"))
    co.kick_candidates(c.snap(), NOW)
    assert sorted(co.reservations.jobs()) == ["gangplank:default/g0", "gangplank:default/g1"]
    assert RECLAIM_TRIES == 2
    co.kick_candidates(c.snap(), NOW + KICK_INTERVAL - 1)
    assert len(co.reservations) == 2, "not within the kick interval"
    co.kick_candidates(c.snap(), NOW + KICK_INTERVAL)
    assert len(co.reservations) == 3, "the planned jobs left the line: the next one's turn"
    assert sorted(e.name for e in co.preemption.take_evictions()) == ["low0", "low1", "low2"]


def test_the_pass_tells_a_job_its_quota_refuses_why_though_it_was_never_asked_about() -> None:
    c = cluster(running("r", "q", "n0"), in_queue("p", "q"))
    co = engine(queue("q", max=gpus(8)))
    co.kick_candidates(c.snap(), NOW)
    assert [(n.job, n.reason, n.message) for n in co.take_notices()] == [
        (
            "pod:default/p",
            "QueueHeld",
            "queue q: nvidia.com/gpu 8 of max 8 in use, pod default/p needs 8"
            + nothing_to_preempt("q"),
        )
    ]


def full() -> list[dict[str, Any]]:
    """Two nodes full of work in no queue: no queued job may preempt it."""
    return [running("other0", None, "n0"), running("other1", None, "n1")]


def test_the_hold_goes_to_the_first_job_of_the_fair_line() -> None:
    older = gang_in("older", "q", created="2026-12-01T09:00:00Z")
    newer = gang_in("newer", "q")
    c = cluster(*full(), *newer, *older)
    co = engine(queue("q"))
    co.kick_candidates(c.snap(), NOW)
    assert co.holder.holds("gangplank:default/older")
    assert told(co) == [("gangplank:default/older", "GangHolding")]


def test_the_hold_skips_jobs_their_quota_refuses_and_ends_when_no_one_it_may_go_to_waits() -> None:
    big = gang_in("big", "small", created="2026-12-01T09:00:00Z")
    fits = gang_in("fits", "roomy")
    c = cluster(*full(), *big, *fits)
    co = engine(queue("small", max=gpus(8)), queue("roomy"))
    co.kick_candidates(c.snap(), NOW)
    assert co.holder.holds("gangplank:default/fits"), "big needs 16 of a max of 8"
    c.delete("pods", *fits)
    co.kick_candidates(c.snap(), NOW + 10)
    assert co.holder.current is None
