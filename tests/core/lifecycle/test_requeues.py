"""The requeue ledger: backoff doubles up to its cap, the limit holds the job, a person's act
(recreating the job, or annotating a pod gangplank.io/retry: "now") starts it afresh, and the
records go to the adapter and come back after a restart."""

from __future__ import annotations

from dataclasses import replace

import orjson

from extender.core.lifecycle.requeues import RETRY_ANNOTATION, RequeueRecord, Requeues, identity
from extender.core.lifecycle.workloads import Workload
from extender.core.model.snapshot import Owner, PodInfo
from extender.core.queues.lifecycle import Requeue
from extender.kube.convert import pod_from_api
from tests.builders import gang_pods

JOB = "gangplank:default/train"
RULES = Requeue(backoff=60.0, max_backoff=200.0, limit=3)
NOW = 1_000_000.0


def new_pods(owner: str = "job-uid-1", created: float = NOW) -> list[PodInfo]:
    pods = [pod_from_api(p) for p in gang_pods("train", 2, gpu=8)]
    return [replace(p, owner=Owner("Job", "train", owner), created=created) for p in pods]


def test_each_requeue_doubles_the_wait_up_to_the_cap_and_the_limit_holds_the_job() -> None:
    ledger = Requeues()
    waits = []
    for n in range(1, 5):
        record = ledger.requeue(JOB, "pods not ready within 10m", NOW, RULES, "job-uid-1")
        waits.append(record.next_try - NOW)
        assert record.count == n
    assert waits == [60.0, 120.0, 200.0, 200.0], "x2 each time, capped at maxBackoff"
    last = ledger.get(JOB)
    assert last is not None and last.held, "the 4th requeue is past the limit of 3"


def test_new_pods_wait_out_the_backoff_with_the_reason_then_go() -> None:
    ledger = Requeues()
    ledger.requeue(
        JOB, "pods not ready within 10m (train-1: ImagePullBackOff)", NOW, RULES, "job-uid-1"
    )
    ledger.requeue(
        JOB, "pods not ready within 10m (train-1: ImagePullBackOff)", NOW, RULES, "job-uid-1"
    )
    reason = ledger.gate(JOB, new_pods(), NOW + 30)
    assert reason == (
        "gang default/train requeued 2 of 3 times: pods not ready within 10m "
        "(train-1: ImagePullBackOff); next try in 1m"
    )
    assert ledger.gate(JOB, new_pods(), NOW + 120) is None, "the backoff is over"


def test_a_held_job_waits_until_a_pod_is_annotated_retry_now() -> None:
    ledger = Requeues()
    ledger.requeue(JOB, "ran 3d, past its maxRuntime of 2d", NOW, RULES, "job-uid-1", stop=True)
    pods = new_pods()
    held = ledger.gate(JOB, pods, NOW + 10_000)
    assert held is not None and held.startswith("gang default/train is held: ran 3d")
    annotated = [replace(pods[0], annotations={RETRY_ANNOTATION: "now"}), pods[1]]
    assert ledger.gate(JOB, annotated, NOW + 10_001) is None
    assert ledger.get(JOB) is None, "started afresh"


def test_a_job_recreated_under_a_new_controller_starts_afresh() -> None:
    ledger = Requeues()
    for _ in range(4):
        ledger.requeue(JOB, "not ready", NOW, RULES, "job-uid-1")
    assert ledger.gate(JOB, new_pods(owner="job-uid-2"), NOW + 1) is None
    assert ledger.get(JOB) is None


def test_records_go_to_the_adapter_and_come_back_after_a_restart() -> None:
    ledger = Requeues()
    ledger.requeue(JOB, "not ready", NOW, RULES, "job-uid-1")
    ledger.requeue(JOB, "not ready", NOW + 1, RULES, "job-uid-1")
    changes = ledger.take_changes()
    assert list(changes) == [JOB] and ledger.take_changes() == {}, "each change handed once"
    data = changes[JOB]
    assert data is not None
    restarted = Requeues()
    assert restarted.load({JOB: data}) == 1
    record = restarted.get(JOB)
    assert record == RequeueRecord(
        JOB, 2, NOW + 1 + 120.0, "not ready", False, NOW + 1, "job-uid-1", 3
    )
    assert restarted.gate(JOB, new_pods(), NOW + 60) is not None, "still in its backoff"


def test_a_record_edited_by_hand_into_nonsense_is_ignored() -> None:
    ledger = Requeues()
    assert ledger.load({JOB: {"count": "many"}}) == 0
    assert ledger.gate(JOB, new_pods(), NOW) is None


def test_records_read_back_replace_what_this_replica_remembered() -> None:
    ledger = Requeues()
    ledger.requeue(JOB, "not ready", NOW, RULES, "job-uid-1")
    ledger.take_changes()  # kept
    ledger.load({})  # the leader since cleared it (retry: "now")
    assert ledger.get(JOB) is None


def test_a_jobset_restarting_its_child_jobs_is_the_same_job_not_a_recreated_one() -> None:
    ledger = Requeues()
    pods = [
        replace(p, labels={**p.labels, "jobset.sigs.k8s.io/jobset-name": "train"})
        for p in new_pods(owner="child-job-uid-1")
    ]
    ledger.requeue(JOB, "not ready", NOW, RULES, identity(pods))
    restarted = [replace(p, owner=Owner("Job", "train-w-0", "child-job-uid-2")) for p in pods]
    assert ledger.gate(JOB, restarted, NOW + 10) is not None, "still in its backoff"


# ---- requeued through the workload ----

TRAIN = Workload("Job", "batch/v1", "default", "train")
RAY = "ray.io/v1"


def test_a_suspended_record_round_trips_with_its_workload_and_whether_it_was_resumed() -> None:
    ledger = Requeues()
    ledger.requeue(JOB, "not ready", NOW, RULES, "job-uid-1", workload=TRAIN)
    ledger.resumed(JOB)
    kept = ledger.take_changes()[JOB]
    assert kept is not None and kept["workload"] == {
        "kind": "Job",
        "apiVersion": "batch/v1",
        "namespace": "default",
        "name": "train",
    }
    assert kept["resumed"] is True
    after = Requeues()
    after.load(orjson.loads(orjson.dumps({JOB: kept})))  # as the ConfigMap keeps it
    assert after.get(JOB) == ledger.get(JOB)


def test_a_record_of_evicted_pods_has_no_workload_and_reads_as_before() -> None:
    ledger = Requeues()
    record = ledger.requeue(JOB, "not ready", NOW, RULES, "job-uid-1")
    assert "workload" not in record.to_json() and "resumed" not in record.to_json()
    assert RequeueRecord.from_json(JOB, record.to_json()) == record


def test_a_suspended_workload_is_due_for_resuming_when_its_backoff_ends_and_only_once() -> None:
    ledger = Requeues()
    ledger.requeue(JOB, "not ready", NOW, RULES, "job-uid-1", workload=TRAIN)
    assert ledger.resumes_due(NOW + 59) == [], "within its backoff of 60 s"
    assert [r.job for r in ledger.resumes_due(NOW + 60)] == [JOB]
    ledger.resumed(JOB)
    assert ledger.resumes_due(NOW + 61) == [], "resumed once"
    record = ledger.get(JOB)
    assert record is not None and record.count == 1, "its count stays for the next requeue"


def test_a_held_workload_is_never_resumed_by_gangplank() -> None:
    ledger = Requeues()
    ledger.requeue(JOB, "ran 3d, past its maxRuntime of 2d", NOW, RULES, "job-uid-1", True, TRAIN)
    assert ledger.resumes_due(NOW + 10 * 86400) == []


def test_new_pods_of_a_held_suspended_workload_mean_a_person_resumed_it_and_start_afresh() -> None:
    ledger = Requeues()
    for _ in range(RULES.limit + 1):
        ledger.requeue(JOB, "not ready", NOW, RULES, "job-uid-1", workload=TRAIN)
    record = ledger.get(JOB)
    assert record is not None and record.held
    assert ledger.gate(JOB, new_pods(created=NOW - 600), NOW + 5) == (
        "gang default/train is held, Job default/train suspended: not ready; it runs again when "
        "resumed: kubectl patch jobs.batch train -n default --type=merge "
        '-p \'{"spec":{"suspend":false}}\''
    ), "pods from before the hold: still held"
    assert ledger.gate(JOB, new_pods(created=NOW + 3600), NOW + 3601) is None
    assert ledger.get(JOB) is None, "count and backoff forgotten"


def test_an_mpijob_is_known_by_its_own_uid_whichever_of_its_pods_comes_first() -> None:
    worker = replace(
        new_pods()[0], owner=Owner("MPIJob", "train", "mpijob-uid", "kubeflow.org/v2beta1")
    )
    launcher = replace(
        new_pods()[1],
        owner=Owner("Job", "train-launcher", "launcher-uid", "batch/v1"),
        labels={"training.kubeflow.org/job-name": "train"},
    )
    assert identity([launcher, worker]) == identity([worker, launcher]) == "mpijob-uid"


def test_a_move_keeps_the_requeue_count_is_resumed_once_and_is_remembered_after_a_restart() -> None:
    ledger = Requeues()
    ledger.requeue(JOB, "not ready", NOW, RULES, "job-uid-1", workload=TRAIN)
    ledger.resumed(JOB)
    moved = ledger.move(JOB, "moved for gang default/big", NOW + 100, "job-uid-1", TRAIN, NOW + 103)
    assert (moved.count, moved.limit, moved.moved, moved.held) == (1, 3, True, False)
    assert ledger.resumes_due(NOW + 102) == []
    assert [r.job for r in ledger.resumes_due(NOW + 103)] == [JOB]
    after = Requeues()
    after.load(orjson.loads(orjson.dumps(ledger.take_changes())))  # as the ConfigMap keeps it
    assert after.get(JOB) == moved
    assert after.moved_since(NOW) == {JOB} and after.moved_since(NOW + 101) == set()
    assert after.gate(JOB, new_pods(created=NOW + 104), NOW + 104) is None, "no backoff held"
