"""A workload gangplank made smaller gets its size back one member at a time, once room for one
more is spare and a while after the shrink (`core/preemption/regrow.py`, docs/elastic.md)."""

from __future__ import annotations

from typing import Any

import pytest

from extender.core.engine import Engine
from extender.core.preemption.regrow import GROW_AFTER
from extender.core.queues.policy_parse import parse_policy
from tests.builders import bound_pod, node, pod, policy_doc, queue
from tests.cluster import Cluster

NOW = 1_800_000_000.0


def shrunk_job(size: int, was: int | None = 4) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": "el",
        "namespace": "default",
        "annotations": {"kueue.x-k8s.io/job-min-parallelism": "2"},
    }
    if was is not None:
        metadata["annotations"]["gangplank.io/shrunk-from"] = str(was)
    spec = {"parallelism": size, "completions": size, "completionMode": "Indexed"}
    return {"metadata": metadata, "spec": spec}


def members(count: int) -> list[dict[str, Any]]:
    return [
        bound_pod(
            pod(
                f"el-{i}",
                gpu=8,
                job="el",
                labels={"gangplank.io/queue": "research"},
                annotations={"batch.kubernetes.io/job-completion-index": str(i)},
            ),
            f"n{i}",
            NOW - 3600,
        )
        for i in range(count)
    ]


QUEUES = parse_policy(policy_doc(queue("research"), queue("vision")), "policy.yaml")


def grown(cluster: Cluster, shrunk_at: float | None = None) -> list[tuple[str, int, int]]:
    engine = Engine(policy=QUEUES)
    if shrunk_at is not None:
        engine.preemption.evictions.shrunk_at["Job default/el"] = shrunk_at
    return [(g.shown, g.current, g.to) for g in engine.regrowths(cluster.snap(), NOW)]


CASES = [
    ("a node free and no one waiting: one more member", 4, None, [], [("Job default/el", 3, 4)]),
    ("no node free: it stays smaller", 3, None, [], []),
    ("made smaller a moment ago: it waits", 4, NOW - GROW_AFTER / 2, [], []),
    (
        "a job waits for the free node: it stays smaller",
        4,
        None,
        [
            pod(
                "w-0",
                gpu=8,
                labels={"gangplank.io/gang": "w", "gangplank.io/queue": "vision"},
                annotations={"gangplank.io/gang-size": "1"},
            )
        ],
        [],
    ),
]


@pytest.mark.parametrize(
    "nodes,shrunk_at,others,expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_a_shrunk_indexed_job_grows_back_by_one_on_spare_room(
    nodes: int, shrunk_at: float | None, others: list[dict[str, Any]], expected: list[Any]
) -> None:
    cluster = Cluster(nodes=[node(f"n{i}") for i in range(nodes)], jobs=[shrunk_job(3)])
    cluster.add("pods", *members(3), *others)
    assert grown(cluster, shrunk_at) == expected


def test_a_job_gangplank_did_not_make_smaller_or_back_at_its_size_is_left_alone() -> None:
    for job in (shrunk_job(3, was=None), shrunk_job(4, was=4)):
        cluster = Cluster(nodes=[node(f"n{i}") for i in range(5)], jobs=[job])
        cluster.add("pods", *members(job["spec"]["parallelism"]))
        assert grown(cluster) == []
