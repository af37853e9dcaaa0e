"""Jobs that hold GPUs and do nothing, through the engine's verbs with a `lifecycle:` policy: a
gang that never becomes ready is evicted whole and requeued, its new pods wait out the backoff;
a gang that lost a member is evicted after the grace only; maxRuntime holds the job; idle GPUs
are reported, evicted, or made the first victims, and nothing is done on missing data."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from extender.core.engine import Engine
from extender.core.gangs.placer import GangConfig
from extender.core.lifecycle.lifecycle import LifecycleOutcomes
from extender.core.lifecycle.watchdog import Look, Watchdog
from extender.core.lifecycle.workloads import Workload
from extender.core.model.gpu_use import GpuUse
from extender.core.queues.lifecycle import Requeue
from extender.core.queues.policy_parse import parse_policy
from extender.kube.convert import pod_from_api
from tests.builders import bound_pod, gang_pods, node, policy_doc, queue
from tests.cluster import Cluster

NOW = 1_800_000_000.0
GANG = "gangplank:default/train"


def policy(**lifecycle: Any) -> Any:
    doc = policy_doc(queue("team", namespaces=["default"]))
    doc["lifecycle"] = lifecycle
    return parse_policy(doc, "policy.yaml")


def engine(**lifecycle: Any) -> Engine:
    co = Engine(GangConfig(), policy(**lifecycle))
    co.lifecycle.suspend_workloads = True  # as the service sets it
    return co


def nodes(count: int = 4) -> list[dict[str, Any]]:
    return [node(f"n{i}", gpu=8) for i in range(count)]


def gang(started: float, **states: dict[str, Any]) -> list[dict[str, Any]]:
    """The 4 members of gang train bound on n0..n3; `states[name]` overrides one's state."""
    members = gang_pods("train", 4, gpu=8, labels={"gangplank.io/queue": "team"})
    return [
        bound_pod(m, f"n{i}", started, **states.get(m["metadata"]["name"], {}))
        for i, m in enumerate(members)
    ]


def evicted(co: Engine) -> list[tuple[str, str]]:
    return sorted((e.name, e.rule) for e in co.preemption.take_evictions())


def test_a_gang_with_one_pod_never_ready_is_evicted_whole_after_the_ready_timeout() -> None:
    co = engine(readyTimeout="10m")
    cluster = Cluster(
        nodes=nodes(),
        pods=gang(NOW, **{"train-3": {"ready": False, "waiting": "ImagePullBackOff"}}),
    )
    co.kick_candidates(cluster.snap(), NOW + 9 * 60)
    assert evicted(co) == [], "not before the timeout"
    co.kick_candidates(cluster.snap(), NOW + 11 * 60)
    assert evicted(co) == [(f"train-{i}", "not-ready") for i in range(4)], "all four together"
    record = co.lifecycle.requeues.get(GANG)
    assert record is not None and (record.count, record.held) == (1, False)
    assert record.reason == "pods not ready within 10m (train-3: ImagePullBackOff)"


def test_the_recreated_pods_wait_out_the_backoff_then_start_whole() -> None:
    co = engine(readyTimeout="10m", requeue={"backoff": "1m", "maxBackoff": "1h", "limit": 5})
    cluster = Cluster(nodes=nodes(), pods=gang(NOW, **{"train-0": {"ready": False}}))
    co.kick_candidates(cluster.snap(), NOW + 11 * 60)
    assert len(evicted(co)) == 4
    again = gang_pods("train", 4, gpu=8, labels={"gangplank.io/queue": "team"})
    later = Cluster(nodes=nodes(), pods=again)
    names = [f"n{i}" for i in range(4)]
    waits = co.filter(later.snap(), pod_from_api(again[0]), names, NOW + 11 * 60 + 10)
    assert waits.passed == []
    assert set(waits.unresolvable.values()) == {
        "gang default/train requeued 1 of 5 times: pods not ready within 10m "
        "(train-0: Running, not Ready); next try in 50s"
    }
    nudged = co.kick_candidates(later.snap(), NOW + 11 * 60 + 61)
    assert ("default", "train-0") in nudged, "nudged when the backoff ends"
    kept = [co.filter(later.snap(), pod_from_api(p), names, NOW + 11 * 60 + 62) for p in again]
    assert all(len(k.passed) == 1 for k in kept), "planned whole after the backoff"


def test_a_gang_that_lost_a_member_is_evicted_after_the_grace_and_not_before() -> None:
    co = engine(staleGangGrace="5m")
    whole = gang(NOW)
    cluster = Cluster(nodes=nodes(), pods=whole)
    co.kick_candidates(cluster.snap(), NOW + 60)
    assert evicted(co) == [], "healthy"
    cluster.delete("pods", whole[3])  # its node went away with it; no room to replace it
    cluster.delete("nodes", nodes()[3])
    co.kick_candidates(cluster.snap(), NOW + 120)
    co.kick_candidates(cluster.snap(), NOW + 120 + 4 * 60)
    assert evicted(co) == [], "within the grace"
    co.kick_candidates(cluster.snap(), NOW + 120 + 5 * 60 + 1)
    assert evicted(co) == [(f"train-{i}", "stale-gang") for i in range(3)]
    assert co.lifecycle.requeues.get(GANG) is None, "a broken gang is not requeued"


def test_a_job_past_its_max_runtime_is_evicted_and_held_until_a_person_acts() -> None:
    co = engine(maxRuntime="2h")
    cluster = Cluster(nodes=nodes(), pods=gang(NOW))
    co.kick_candidates(cluster.snap(), NOW + 3600)
    assert evicted(co) == []
    co.kick_candidates(cluster.snap(), NOW + 2 * 3600 + 30)
    assert evicted(co) == [(f"train-{i}", "max-runtime") for i in range(4)]
    record = co.lifecycle.requeues.get(GANG)
    assert record is not None and record.held and record.reason.startswith("ran 2h")


def test_an_annotation_may_lower_max_runtime_but_never_raise_it() -> None:
    lowered = gang(NOW)
    for member in lowered:
        member["metadata"]["annotations"]["gangplank.io/max-runtime"] = "30m"
    co = engine(maxRuntime="2h")
    co.kick_candidates(Cluster(nodes=nodes(), pods=lowered).snap(), NOW + 31 * 60)
    assert len(evicted(co)) == 4, "lowered to 30m"
    raised = gang(NOW)
    for member in raised:
        member["metadata"]["annotations"]["gangplank.io/max-runtime"] = "10h"
    co = engine(maxRuntime="2h")
    co.kick_candidates(Cluster(nodes=nodes(), pods=raised).snap(), NOW + 2 * 3600 + 30)
    assert len(evicted(co)) == 4, "the queue's 2h still holds"


def use(util: float, pods: int = 4) -> GpuUse:
    return GpuUse({("default", f"train-{i}"): util for i in range(pods)}, window=1800.0)


def test_an_idle_gang_is_reported_once_and_left_running() -> None:
    co = engine(idleGpu={"below": 5, "for": "30m", "action": "report"})
    cluster = Cluster(nodes=nodes(), pods=gang(NOW))
    co.kick_candidates(cluster.snap(), NOW + 3600, use=use(2.0))
    co.kick_candidates(cluster.snap(), NOW + 3700, use=use(2.0))
    notices = [n for n in co.take_notices() if n.reason == "JobIdle"]
    assert [n.message for n in notices] == [
        "gang default/train is idle: its GPUs stayed below 5% for 30m (busiest 2%)"
    ]
    assert evicted(co) == []


def test_an_idle_gang_is_evicted_when_its_rule_says_evict_and_a_busy_one_is_not() -> None:
    co = engine(idleGpu={"below": 5, "for": "30m", "action": "evict"})
    cluster = Cluster(nodes=nodes(), pods=gang(NOW))
    co.kick_candidates(cluster.snap(), NOW + 3600, use=use(40.0))
    assert evicted(co) == [], "busy"
    co.kick_candidates(cluster.snap(), NOW + 3700, use=use(1.0))
    assert evicted(co) == [(f"train-{i}", "idle") for i in range(4)]


def test_nothing_is_done_on_missing_data() -> None:
    co = engine(idleGpu={"below": 5, "for": "30m", "action": "evict"})
    cluster = Cluster(nodes=nodes(), pods=gang(NOW))
    co.kick_candidates(cluster.snap(), NOW + 3600, use=use(0.0, pods=3))
    assert evicted(co) == [], "one pod has no series: not idle"
    co.kick_candidates(cluster.snap(), NOW + 3700, use=GpuUse({}, ok=False, problem="down"))
    assert evicted(co) == [], "Prometheus unreachable"


def test_without_a_lifecycle_section_nothing_changes() -> None:
    co = Engine(GangConfig(), parse_policy(policy_doc(queue("team")), "policy.yaml"))
    cluster = Cluster(nodes=nodes(), pods=gang(NOW, **{"train-3": {"ready": False}}))
    co.kick_candidates(cluster.snap(), NOW + 10 * 86400, use=use(0.0))
    assert evicted(co) == [] and co.take_notices() == []


def test_the_waste_held_and_the_gpus_freed_are_counted_for_the_metrics() -> None:
    co = engine(readyTimeout="10m")
    cluster = Cluster(nodes=nodes(), pods=gang(NOW, **{"train-2": {"ready": False}}))
    co.kick_candidates(cluster.snap(), NOW + 60)
    co.kick_candidates(cluster.snap(), NOW + 11 * 60)  # 600 s later: 32 GPUs not ready
    outcomes: LifecycleOutcomes = co.lifecycle.take_outcomes()
    assert outcomes.waste == {"not-ready": 32 * 600.0}
    assert (outcomes.freed, outcomes.requeues) == ({"not-ready": 32}, {"not-ready": 1})
    assert co.lifecycle.take_outcomes().waste == {}, "taken once"
    assert co.lifecycle.saved() == {
        "waste": {"not-ready": 32 * 600.0},
        "freed": {"not-ready": 32},
        "requeues": {"not-ready": 1},
    }, "status shows what was saved since the start"


def test_a_crash_looping_pod_counts_as_not_ready_even_after_the_job_ran_whole() -> None:
    dog = Watchdog()
    doc = policy(readyTimeout="10m", restartLimit=3)
    whole = Cluster(nodes=nodes(), pods=gang(NOW))
    assert dog.review(Look(whole.snap(), NOW + 60, doc, None, {"gangplank"}, ())).findings == []
    looping = Cluster(nodes=nodes(), pods=gang(NOW, **{"train-1": {"restarts": 4}}))
    (finding,) = dog.review(Look(looping.snap(), NOW + 70, doc, None, {"gangplank"}, ())).findings
    assert (finding.rule, finding.reason) == (
        "not-ready",
        "pod train-1 restarted 4 times (restartLimit 3)",
    )


def test_a_requeued_job_whose_new_pods_fail_again_is_requeued_again_at_once() -> None:
    """What was acted on is its pods, not its name: the new pods of a job evicted a minute ago
    are judged as soon as they fail (the second requeue, then held after the limit), not when
    the old pods' guard runs out minutes later."""
    co = engine(readyTimeout="1m", requeue={"backoff": "30s", "maxBackoff": "1h", "limit": 1})
    trouble = {"train-3": {"ready": False, "waiting": "ImagePullBackOff"}}
    co.kick_candidates(Cluster(nodes=nodes(), pods=gang(NOW, **trouble)).snap(), NOW + 61)
    assert len(evicted(co)) == 4
    again = Cluster(nodes=nodes(), pods=gang(NOW + 100, **trouble))  # recreated: new uids
    co.kick_candidates(again.snap(), NOW + 130)
    assert evicted(co) == [], "not before its own readyTimeout"
    co.kick_candidates(again.snap(), NOW + 161)
    assert evicted(co) == [(f"train-{i}", "not-ready") for i in range(4)]
    record = co.lifecycle.requeues.get(GANG)
    assert record is not None and (record.count, record.held) == (2, True)


def test_a_job_acted_on_is_not_judged_again_while_its_pods_leave() -> None:
    co = engine(readyTimeout="1m")
    cluster = Cluster(nodes=nodes(), pods=gang(NOW, **{"train-3": {"ready": False}}))
    co.kick_candidates(cluster.snap(), NOW + 61)
    assert len(evicted(co)) == 4
    co.kick_candidates(cluster.snap(), NOW + 90)  # the evictions take a while to show
    assert evicted(co) == [], "not evicted twice"
    record = co.lifecycle.requeues.get(GANG)
    assert record is not None and record.count == 1, "nor requeued twice"


def replaced(started: float, **state: Any) -> dict[str, Any]:
    """A new train-3 (new uid), bound on n3 and started at `started`."""
    fresh = gang_pods("train", 4, gpu=8, labels={"gangplank.io/queue": "team"})[3]
    return bound_pod(fresh, "n3", started, **state)


def test_a_gang_whose_replacement_is_bound_but_still_starting_is_completed_not_stale() -> None:
    """A lost member's replacement pulls its image for longer than staleGangGrace: the gang is
    complete again, so it is no stale gang; its new member has readyTimeout from its own start."""
    co = engine(staleGangGrace="5m", readyTimeout="10m")
    whole = gang(NOW)
    cluster = Cluster(nodes=nodes(), pods=whole)
    co.kick_candidates(cluster.snap(), NOW + 60)
    cluster.delete("pods", whole[3])
    co.kick_candidates(cluster.snap(), NOW + 120)  # broken
    cluster.add("pods", replaced(NOW + 130, ready=False, waiting="ContainerCreating"))
    co.kick_candidates(cluster.snap(), NOW + 140)
    co.kick_candidates(cluster.snap(), NOW + 120 + 6 * 60)
    assert evicted(co) == [], "complete again: not stale, and its new pod has time to start"
    co.kick_candidates(cluster.snap(), NOW + 130 + 10 * 60 + 1)
    assert evicted(co) == [(f"train-{i}", "not-ready") for i in range(4)]
    record = co.lifecycle.requeues.get(GANG)
    assert record is not None
    assert record.reason == "pods not ready within 10m (train-3: ContainerCreating)"


def test_a_member_of_a_gang_that_ran_whole_and_is_not_ready_a_moment_is_left_alone() -> None:
    co = engine(staleGangGrace="5m", readyTimeout="10m")
    whole = gang(NOW)
    cluster = Cluster(nodes=nodes(), pods=whole)
    co.kick_candidates(cluster.snap(), NOW + 60)
    cluster.add("pods", bound_pod(whole[1], "n1", NOW, ready=False))  # the same pod, unready
    for t in (NOW + 3600, NOW + 3600 + 6 * 60, NOW + 3600 + 11 * 60):
        co.kick_candidates(cluster.snap(), t)
    assert evicted(co) == [], "not lost, not new: its readiness probe is its own business"


def test_retry_now_counts_on_the_pod_kube_scheduler_asks_for_before_the_cache_has_it() -> None:
    """kube-scheduler retries a parked pod the moment it is annotated, often before gangplank's
    watch has brought the annotation: the pod in the request is the one to read."""
    co = engine(maxRuntime="2h")
    co.kick_candidates(Cluster(nodes=nodes(), pods=gang(NOW)).snap(), NOW + 2 * 3600 + 30)
    assert len(evicted(co)) == 4  # held until a person acts
    again = gang_pods("train", 4, gpu=8, labels={"gangplank.io/queue": "team"})
    cached = Cluster(nodes=nodes(), pods=again)  # the annotation not in the cache yet
    asked = pod_from_api(again[0])
    asked = replace(asked, annotations={**asked.annotations, "gangplank.io/retry": "now"})
    names = [f"n{i}" for i in range(4)]
    answer = co.filter(cached.snap(), asked, names, NOW + 3 * 3600)
    assert len(answer.passed) == 1, answer.unresolvable
    assert co.lifecycle.requeues.get(GANG) is None


def test_a_job_in_its_backoff_gets_no_hold_and_no_one_is_preempted_for_it() -> None:
    co = engine(readyTimeout="10m", requeue={"backoff": "10m", "maxBackoff": "1h", "limit": 5})
    cluster = Cluster(nodes=nodes(), pods=gang(NOW, **{"train-0": {"ready": False}}))
    co.kick_candidates(cluster.snap(), NOW + 11 * 60)
    assert len(evicted(co)) == 4
    again = gang_pods("train", 4, gpu=8, labels={"gangplank.io/queue": "team"})
    busy = [
        bound_pod(p, f"n{i}", NOW, ready=True)
        for i, p in enumerate(gang_pods("other", 4, gpu=8, priority=-10))
    ]
    later = Cluster(nodes=nodes(), pods=[*again, *busy])
    co.kick_candidates(later.snap(), NOW + 12 * 60)
    assert co.holder.current is None, "the hold goes to a job that may run now"
    assert evicted(co) == [], "nothing is preempted for a job that waits out its backoff"
    assert co.preempt(later.snap(), pod_from_api(again[0]), {}, NOW + 12 * 60) == {}


def test_an_idle_job_is_not_told_again_after_gpu_use_could_not_be_read() -> None:
    co = engine(idleGpu={"below": 5, "for": "30m", "action": "report"})
    cluster = Cluster(nodes=nodes(), pods=gang(NOW))
    co.kick_candidates(cluster.snap(), NOW + 3600, use=use(2.0))
    co.kick_candidates(cluster.snap(), NOW + 3700, use=GpuUse({}, ok=False, problem="down"))
    co.kick_candidates(cluster.snap(), NOW + 3800, use=use(2.0))
    assert len([n for n in co.take_notices() if n.reason == "JobIdle"]) == 1


def test_a_requeue_whose_eviction_was_refused_is_undone() -> None:
    co = engine(readyTimeout="10m")
    cluster = Cluster(nodes=nodes(), pods=gang(NOW, **{"train-3": {"ready": False}}))
    co.kick_candidates(cluster.snap(), NOW + 11 * 60)
    pods = co.preemption.take_evictions()
    assert co.lifecycle.requeues.get(GANG) is not None
    co.lifecycle.refused({e.uid for e in pods})  # a PodDisruptionBudget said no
    assert co.lifecycle.requeues.get(GANG) is None, "the job still runs: no requeue counted"


def test_no_job_is_requeued_before_the_kept_counts_are_read() -> None:
    co = engine(readyTimeout="10m")
    co.lifecycle.requeues.known = False  # the adapter has not read its ConfigMap yet
    cluster = Cluster(nodes=nodes(), pods=gang(NOW, **{"train-3": {"ready": False}}))
    co.kick_candidates(cluster.snap(), NOW + 11 * 60)
    assert evicted(co) == [] and co.lifecycle.requeues.get(GANG) is None
    co.lifecycle.requeues.load({GANG: {"count": 3, "nextTry": 0, "reason": "r", "updated": 1}})
    co.kick_candidates(cluster.snap(), NOW + 12 * 60)
    record = co.lifecycle.requeues.get(GANG)
    assert len(evicted(co)) == 4 and record is not None and record.count == 4, "counted on"


# ---- requeued through the workload ----


def job_gang(started: float, **states: dict[str, Any]) -> list[dict[str, Any]]:
    """Gang train as a batch/v1 Job makes it: its 4 pods owned by Job train."""
    members = gang_pods("train", 4, gpu=8, labels={"gangplank.io/queue": "team"}, job="train")
    return [
        bound_pod(m, f"n{i}", started, **states.get(m["metadata"]["name"], {}))
        for i, m in enumerate(members)
    ]


UNREADY = {"train-3": {"ready": False, "waiting": "ImagePullBackOff"}}


def test_a_jobs_gang_not_ready_is_requeued_by_suspending_the_job_not_by_evicting_its_pods() -> None:
    co = engine(readyTimeout="10m", requeue={"backoff": "1m", "maxBackoff": "1h", "limit": 3})
    cluster = Cluster(nodes=nodes(), pods=job_gang(NOW, **UNREADY))
    co.kick_candidates(cluster.snap(), NOW + 11 * 60)
    assert evicted(co) == [], "no pod evicted: each would count as a failed pod of the Job"
    (suspension,) = co.lifecycle.take_suspensions()
    assert suspension.workload == Workload("Job", "batch/v1", "default", "train")
    assert sorted(name for _, name, _ in suspension.pods) == [f"train-{i}" for i in range(4)]
    assert (suspension.reason, suspension.rule, suspension.queue) == (
        "RequeueSuspended",
        "not-ready",
        "team",
    )
    assert suspension.message == (
        "suspended by gangplank: gang default/train not ready in time: pods not ready within "
        "10m (train-3: ImagePullBackOff) (queue team); requeued (1 of 3), resumed in 1m"
    )
    record = co.lifecycle.requeues.get(GANG)
    assert record is not None and record.workload == suspension.workload
    assert co.lifecycle.resumes_due(NOW + 11 * 60 + 59) == [], "within its backoff"
    (resume,) = co.lifecycle.resumes_due(NOW + 11 * 60 + 60)
    assert resume.workload == suspension.workload
    assert resume.message.startswith("resumed by gangplank: gang default/train waited out")
    assert co.lifecycle.resumes_due(NOW + 11 * 60 + 61) == [], "handed out once a while"
    co.lifecycle.resumed(GANG, done=True)
    assert co.lifecycle.resumes_due(NOW + 11 * 60 + 70) == []


def test_no_workload_is_resumed_before_the_kept_records_are_read() -> None:
    co = engine(readyTimeout="10m", requeue={"backoff": "1m", "maxBackoff": "1h", "limit": 3})
    cluster = Cluster(nodes=nodes(), pods=job_gang(NOW, **UNREADY))
    co.kick_candidates(cluster.snap(), NOW + 11 * 60)
    co.lifecycle.requeues.take_changes()  # kept in the ConfigMap
    co.lifecycle.requeues.known = False  # the Lease taken again: the records are read again
    assert co.lifecycle.resumes_due(NOW + 3600) == []
    co.lifecycle.requeues.load({})  # the leader meanwhile resumed it and the job finished
    assert co.lifecycle.resumes_due(NOW + 3600) == []


def test_a_resume_that_failed_is_handed_out_again_a_few_seconds_later() -> None:
    co = engine(readyTimeout="10m", requeue={"backoff": "1m", "maxBackoff": "1h", "limit": 3})
    cluster = Cluster(nodes=nodes(), pods=job_gang(NOW, **UNREADY))
    co.kick_candidates(cluster.snap(), NOW + 11 * 60)
    due = NOW + 11 * 60 + 60
    assert len(co.lifecycle.resumes_due(due)) == 1
    co.lifecycle.resumed(GANG, done=False)  # the API server said 500
    assert co.lifecycle.resumes_due(due + 1) == []
    assert len(co.lifecycle.resumes_due(due + 5)) == 1


def test_a_job_past_its_max_runtime_is_suspended_and_stays_so_with_how_to_run_it_again() -> None:
    co = engine(maxRuntime="2h")
    cluster = Cluster(nodes=nodes(), pods=job_gang(NOW))
    co.kick_candidates(cluster.snap(), NOW + 2 * 3600 + 30)
    assert evicted(co) == []
    (suspension,) = co.lifecycle.take_suspensions()
    assert suspension.reason == "HeldSuspended"
    assert suspension.message == (
        "suspended by gangplank and held: gang default/train ran past its maxRuntime: ran 2h, "
        "past its maxRuntime of 2h (queue team); it stays suspended until a person resumes it: "
        'kubectl patch jobs.batch train -n default --type=merge -p \'{"spec":{"suspend":false}}\''
    )
    assert co.lifecycle.resumes_due(NOW + 30 * 86400) == [], "never resumed by gangplank"


def test_the_requeue_limit_leaves_the_job_suspended_naming_the_limit() -> None:
    co = engine(readyTimeout="10m", requeue={"backoff": "1m", "maxBackoff": "1h", "limit": 1})
    once = Requeue(backoff=60.0, max_backoff=3600.0, limit=1)
    co.lifecycle.requeues.requeue(GANG, "r", NOW, once, "job-train")  # requeued once before
    cluster = Cluster(nodes=nodes(), pods=job_gang(NOW, **UNREADY))
    co.kick_candidates(cluster.snap(), NOW + 11 * 60)
    (suspension,) = co.lifecycle.take_suspensions()
    assert suspension.reason == "HeldSuspended"
    assert "; requeued 1 times, its limit; it stays suspended until a person resumes it" in (
        suspension.message
    )


def test_a_suspension_refused_or_failed_undoes_the_requeue_and_the_job_runs_on() -> None:
    co = engine(readyTimeout="10m")
    cluster = Cluster(nodes=nodes(), pods=job_gang(NOW, **UNREADY))
    co.kick_candidates(cluster.snap(), NOW + 11 * 60)
    (suspension,) = co.lifecycle.take_suspensions()
    co.lifecycle.refused({uid for _, _, uid in suspension.pods})  # a PDB, a 403, a 404
    assert co.lifecycle.requeues.get(GANG) is None
    assert co.lifecycle.resumes_due(NOW + 86400) == [], "nothing to resume"


def test_suspensions_left_when_the_lease_is_taken_again_are_dropped_with_their_requeues() -> None:
    co = engine(readyTimeout="10m")
    cluster = Cluster(nodes=nodes(), pods=job_gang(NOW, **UNREADY))
    co.kick_candidates(cluster.snap(), NOW + 11 * 60)
    taken = co.lifecycle.take_suspensions()
    co.lifecycle.requeues.take_changes()  # the record kept ...
    co.lifecycle.put_back_suspensions(taken)  # ... but the suspension waited (an outage)
    co.lifecycle.requeues.requeue(GANG, "again", NOW + 700, Requeue(), "x")  # not kept yet
    assert co.lifecycle.drop_suspensions() == 1
    assert co.lifecycle.take_suspensions() == [], "nothing suspended on the old view"
    assert co.lifecycle.requeues.take_changes() == {}, "the kept records are read back instead"


def test_without_a_service_to_suspend_it_a_jobs_gang_is_evicted_as_before() -> None:
    co = engine(readyTimeout="10m")
    co.lifecycle.suspend_workloads = False  # the simulator's engine
    cluster = Cluster(nodes=nodes(), pods=job_gang(NOW, **UNREADY))
    co.kick_candidates(cluster.snap(), NOW + 11 * 60)
    assert len(evicted(co)) == 4 and co.lifecycle.take_suspensions() == []


def test_a_gang_of_bare_pods_is_still_requeued_by_evicting_its_pods() -> None:
    co = engine(readyTimeout="10m")
    cluster = Cluster(nodes=nodes(), pods=gang(NOW, **UNREADY))
    co.kick_candidates(cluster.snap(), NOW + 11 * 60)
    assert len(evicted(co)) == 4 and co.lifecycle.take_suspensions() == []
