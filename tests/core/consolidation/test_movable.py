"""Which running jobs may be moved, and how (`core/consolidation/movable.py`), from what their
pods carry."""

from __future__ import annotations

from typing import Any

import pytest

from extender.core.consolidation.movable import MOVABLE_LABEL, Way, how_moved
from extender.kube.convert import pod_from_api
from tests.builders import node, pod
from tests.cluster import Cluster

YES = {MOVABLE_LABEL: "true"}


def running(labels: dict[str, str] | None = None, **kwargs: Any) -> dict[str, Any]:
    return pod("p-1", gpu=2, node="n0", phase="Running", labels=labels, **kwargs)


def scratch(raw: dict[str, Any]) -> dict[str, Any]:
    raw["spec"]["volumes"] = [{"name": "scratch", "emptyDir": {}}]
    return raw


CASES: list[tuple[str, dict[str, Any], bool, Way | None, str]] = [
    (
        "a labelled batch Job is moved by suspending it (an eviction would count a failure)",
        running(YES, job="train"),
        False,
        Way.SUSPEND,
        "",
    ),
    (
        "a labelled ReplicaSet's pod is evicted (its controller recreates it, counting nothing)",
        running(YES, owner=("apps/v1", "ReplicaSet", "web")),
        False,
        Way.EVICT,
        "",
    ),
    (
        "a StatefulSet's pod in a queue that allows moves is evicted",
        running(owner=("apps/v1", "StatefulSet", "db")),
        True,
        Way.EVICT,
        "",
    ),
    (
        "a pod neither labelled nor in a queue that allows moves stays",
        running(owner=("apps/v1", "ReplicaSet", "web")),
        False,
        None,
        "neither labelled gangplank.io/movable nor in a queue that allows moves",
    ),
    (
        'a pod labelled movable "false" stays whatever its queue says',
        running({MOVABLE_LABEL: "false"}, owner=("apps/v1", "ReplicaSet", "web")),
        True,
        None,
        'it is labelled gangplank.io/movable: "false"',
    ),
    (
        "a bare pod stays: nobody would recreate it",
        running(YES),
        True,
        None,
        "no controller of it recreates its pods without counting a failure",
    ),
    (
        "a DaemonSet's pod stays: it belongs on its node",
        running(YES, owner=("apps/v1", "DaemonSet", "agent")),
        True,
        None,
        "no controller of it recreates its pods without counting a failure",
    ),
    (
        "a pod with an emptyDir stays when only its queue allows moves",
        scratch(running(owner=("apps/v1", "ReplicaSet", "web"))),
        True,
        None,
        "it keeps data on its node (emptyDir or hostPath)",
    ),
    (
        "a pod with an emptyDir labelled movable says its data may go",
        scratch(running(YES, owner=("apps/v1", "ReplicaSet", "web"))),
        False,
        Way.EVICT,
        "",
    ),
    (
        "a pod not bound yet is not moved",
        pod("p-1", gpu=2, labels=YES, owner=("apps/v1", "ReplicaSet", "web")),
        False,
        None,
        "it does not run whole",
    ),
]


@pytest.mark.parametrize(
    ("raw", "allows", "way", "why"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_a_job_is_movable_when_a_controller_recreates_it_without_a_failure_and_someone_said_so(
    raw: dict[str, Any], allows: bool, way: Way | None, why: str
) -> None:
    snapshot = Cluster(nodes=[node("n0")], pods=[raw]).snap()
    found = pod_from_api(raw)
    got, workload, reason = how_moved(snapshot, found.job, [found], allows)
    assert (got, reason) == (way, why)
    assert (workload is not None) == (way is Way.SUSPEND)
