"""The room kept for the head of the fair line (`core/queues/head_room.py`): an elastic gang's
extra may not take a node's room when the first job its quota admits fits now and would not with
the extra there (docs/elastic.md)."""

from __future__ import annotations

from collections.abc import Collection

import pytest

from extender.core.gangs.gang import Gang
from extender.core.model.keys import single_key
from extender.core.model.snapshot import NodeInfo
from extender.core.placement.planner import FreeOf
from extender.core.queues.head_room import kept_for_head, pods_needed
from extender.core.queues.waiting_jobs import WaitingJob
from extender.kube.convert import pod_from_api
from tests.builders import node, pod
from tests.cluster import Cluster

ELASTIC = Gang("gangplank:default/t", 2, ())


def free(info: NodeInfo) -> dict[str, int]:
    return {r: info.allocatable.get(r, 0) - info.requested.get(r, 0) for r in info.allocatable}


def free_for(key: str, only: Collection[str]) -> FreeOf:
    return free


def waiting(name: str, gpu: int) -> WaitingJob:
    raw = pod_from_api(pod(name, gpu=gpu))
    return WaitingJob(single_key("default", name), "vision", 0, 0.0, raw.requests, (raw,))


@pytest.mark.parametrize(
    ("nodes", "head_gpu", "says"),
    [
        (1, 8, "the room on node n0 is kept for pod default/head, first in line in queue vision"),
        (2, 8, ""),
        (1, 16, ""),
    ],
    ids=[
        "a head that fits now and would not with the extra there keeps the room",
        "a head that still fits elsewhere lets the extra take the node",
        "a head that does not fit either way (it has the hold) lets the extra go",
    ],
)
def test_an_extra_may_take_room_unless_the_head_of_the_line_needs_it(
    nodes: int, head_gpu: int, says: str
) -> None:
    snapshot = Cluster(nodes=[node(f"n{i}", gpu=8) for i in range(nodes)]).snap()
    extra = pod_from_api(pod("t-2", gpu=8))
    line = [waiting("head", head_gpu)]
    assert kept_for_head(snapshot, line, ELASTIC, extra, "n0", free_for) == says


def test_the_elastic_gangs_own_job_is_not_its_head() -> None:
    snapshot = Cluster(nodes=[node("n0", gpu=8)]).snap()
    extra = pod_from_api(pod("t-2", gpu=8))
    own = WaitingJob(ELASTIC.key, "vision", 0, 0.0, extra.requests, (extra,))
    line = [own, waiting("head", 8)]
    assert kept_for_head(snapshot, line, ELASTIC, extra, "n0", free_for).endswith(
        "kept for pod default/head, first in line in queue vision"
    )


def test_a_single_pods_job_needs_all_its_pending_pods() -> None:
    snapshot = Cluster(nodes=[node("n0", gpu=8)]).snap()
    job = waiting("solo", 8)
    assert pods_needed(snapshot, job.key, job.pods) == 1
