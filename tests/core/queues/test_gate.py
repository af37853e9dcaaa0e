"""The queue's gate (`core/queues/gate.py`): which queue a pod uses, and the verdict on its job,
whole: none yet for a gang that is not complete; a gang running in part is completed even in a
closed queue, but never past its quota."""

from __future__ import annotations

from typing import Any

from extender.core.model.snapshot import Snapshot
from extender.core.queues.admission import Verdict
from extender.core.queues.book import QueueBook
from extender.core.queues.gate import queue_of, verdict_on_job
from extender.core.queues.policy import Policy
from extender.core.queues.policy_parse import parse_policy
from extender.kube.convert import pod_from_api
from tests.builders import gang_pods, gpus, node, pod, policy_doc, queue
from tests.cluster import Cluster

QUEUE = "gangplank.io/queue"
GANG = "gangplank:default/g"
TREE = parse_policy(
    policy_doc(
        queue("ml"),
        queue("vision", parent="ml"),
        queue("nlp", parent="ml"),
        queue("team", namespaces=["team"]),
    )
)


def in_queue(name: str, q: str | None = None, **kwargs: Any) -> dict[str, Any]:
    return pod(name, labels={QUEUE: q} if q else {}, **kwargs)


def test_a_pod_uses_the_queue_its_label_names_else_its_namespaces() -> None:
    assert queue_of(TREE, pod_from_api(in_queue("p", "vision"))) == ("vision", "")
    assert queue_of(TREE, pod_from_api(in_queue("p", namespace="team"))) == ("team", "")
    assert queue_of(TREE, pod_from_api(in_queue("p"))) == (None, ""), "in no queue"


def test_a_label_naming_no_queue_is_a_problem_named_on_the_pod() -> None:
    assert queue_of(TREE, pod_from_api(in_queue("p", "vison"))) == (
        None,
        "pod default/p: queue 'vison' does not exist (pod label gangplank.io/queue)",
    )


def test_a_parent_queue_holds_no_work_itself() -> None:
    assert queue_of(TREE, pod_from_api(in_queue("p", "ml"))) == (
        "ml",
        "pod default/p: queue ml has child queues (vision, nlp) and holds no work itself; "
        "name one of them",
    )


def verdict(
    policy: Policy, cluster: Cluster, raw: dict[str, Any], key: str, q: str
) -> Verdict | None:
    snapshot: Snapshot = cluster.snap()
    book = QueueBook(policy)
    book.refresh(snapshot, {})
    return verdict_on_job(policy, book, snapshot, key, pod_from_api(raw), q)


def gang(count: int, size: int, **kwargs: Any) -> list[dict[str, Any]]:
    return gang_pods("g", count, size, gpu=8, labels={QUEUE: "q"}, **kwargs)


def test_a_gang_not_complete_gets_no_verdict_yet() -> None:
    members = gang(1, 2)
    policy = parse_policy(policy_doc(queue("q")))
    assert verdict(policy, Cluster(nodes=[node("n0")], pods=members), members[0], GANG, "q") is None


def test_a_job_is_judged_whole_against_its_queues_max() -> None:
    members = gang(2, 2)
    cluster = Cluster(nodes=[node("n0"), node("n1")], pods=members)
    policy = parse_policy(policy_doc(queue("q", max=gpus(8))))
    assert verdict(policy, cluster, members[0], GANG, "q") == Verdict(
        False, "queue q: nvidia.com/gpu 0 of max 8 in use, gang default/g needs 16", "max"
    ), "each member asks 8: the gang asks 16"
    roomy = parse_policy(policy_doc(queue("q", max=gpus(16))))
    assert verdict(roomy, cluster, members[0], GANG, "q") == Verdict(True)


def test_a_closed_queue_holds_new_work_but_completes_a_gang_running_in_part() -> None:
    members = gang(2, 2)
    cluster = Cluster(nodes=[node("n0"), node("n1")], pods=members)
    closed = parse_policy(policy_doc(queue("q", state="closed")))
    refused = verdict(closed, cluster, members[1], GANG, "q")
    assert refused is not None and (refused.ok, refused.rule) == (False, "closed")
    cluster.add("pods", {**members[0], "spec": {**members[0]["spec"], "nodeName": "n0"}})
    assert verdict(closed, cluster, members[1], GANG, "q") == Verdict(True)


def test_a_gang_running_in_part_is_never_completed_past_its_quota() -> None:
    members = gang(2, 2)
    cluster = Cluster(nodes=[node("n0"), node("n1")], pods=members)
    cluster.add("pods", {**members[0], "spec": {**members[0]["spec"], "nodeName": "n0"}})
    policy = parse_policy(policy_doc(queue("q", state="closed", max=gpus(12))))
    assert verdict(policy, cluster, members[1], GANG, "q") == Verdict(
        False, "queue q: nvidia.com/gpu 8 of max 12 in use, gang default/g needs 8", "max"
    )
