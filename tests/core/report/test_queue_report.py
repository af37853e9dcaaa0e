"""What `GET /queues` and the queue metrics show (`core/report/queue_report.py`): each queue's
guarantee, use, borrowing and lending, and each waiting job with its place in line."""

from __future__ import annotations

from extender.core.engine import Engine
from extender.core.queues.policy_parse import parse_policy
from extender.core.report.queue_report import NOT_TRIED, amounts, queue_numbers, queue_report
from tests.builders import gpus, node, pod, policy_doc, queue
from tests.cluster import Cluster

CREATED = 1_796_119_200.0  # the builders' creation time (2026-12-01T10:00:00Z)
POLICY = parse_policy(
    policy_doc(
        queue("ml", guarantee=gpus(16)),
        queue("a", parent="ml", guarantee=gpus(8), namespaces=["a"]),
        queue("b", parent="ml", guarantee=gpus(8), namespaces=["b"]),
    ),
    "policy.yaml",
)


def a_borrows_from_b() -> Cluster:
    """Queue a runs 12 GPUs on a guarantee of 8; queue b runs nothing and has a job waiting."""
    return Cluster(
        nodes=[node("n0"), node("n1")],
        pods=[
            pod("x", namespace="a", node="n0", gpu=8, phase="Running"),
            pod("y", namespace="a", node="n1", gpu=4, phase="Running"),
            pod("w", namespace="b", gpu=2),
        ],
    )


def test_amounts_are_shown_as_people_write_them_leaving_out_pods_and_zeros() -> None:
    assert amounts({"cpu": 1500, "memory": 2**30, "pods": 3, "nvidia.com/gpu": 0}) == {
        "cpu": "1.5",
        "memory": "1Gi",
    }


def test_without_a_policy_there_are_no_queues_to_show() -> None:
    report = queue_report(Engine(), a_borrows_from_b().snap(), CREATED)
    assert report == {"policy": None, "queues": []}


def test_what_one_queue_borrows_its_sibling_is_shown_as_lent() -> None:
    report = queue_report(Engine(policy=POLICY), a_borrows_from_b().snap(), CREATED + 600)
    assert report["policy"] == "policy.yaml"
    assert report["idle"]["nvidia.com/gpu"] == "4"
    queues = {q["name"]: q for q in report["queues"]}
    assert list(queues) == ["ml", "a", "b"], "in the order written"
    assert queues["a"]["used"]["nvidia.com/gpu"] == "12"
    assert queues["a"]["borrowed"] == {"nvidia.com/gpu": "4"}
    assert queues["b"]["lent"] == {"nvidia.com/gpu": "4"}
    assert (queues["a"]["share"], queues["b"]["share"]) == (0.75, 0.0)


def test_a_waiting_job_shows_its_place_in_line_and_that_it_was_not_tried_yet() -> None:
    report = queue_report(Engine(policy=POLICY), a_borrows_from_b().snap(), CREATED + 600)
    (waiting,) = next(q for q in report["queues"] if q["name"] == "b")["waiting"]
    assert waiting["job"] == "pod b/w" and waiting["requests"]["nvidia.com/gpu"] == "2"
    assert (waiting["queuePosition"], waiting["position"]) == (1, 1)
    assert waiting["waitingSeconds"] == 600.0
    assert waiting["reason"] == NOT_TRIED


def test_the_metrics_count_jobs_waiting_past_each_threshold() -> None:
    numbers = {
        n["queue"]: n
        for n in queue_numbers(Engine(policy=POLICY), a_borrows_from_b().snap(), CREATED + 600)
    }
    assert numbers["b"]["oldest_pending_seconds"] == 600.0
    assert numbers["b"]["waiting_longer_than"] == {"5m": 1, "1h": 0, "6h": 0}
    assert numbers["a"]["by_resource"]["borrowed"] == {"nvidia.com/gpu": 4}
    assert queue_numbers(Engine(), a_borrows_from_b().snap()) == []
