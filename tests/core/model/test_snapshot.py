"""The core's view of pods and nodes (`core/model/snapshot.py`): what a pod's phase and node
mean for its node, and what a node has free."""

from __future__ import annotations

from extender.core.model.snapshot import JobInfo, PodGroupInfo
from extender.kube.convert import pod_from_api
from tests.builders import node_info, pod, pod_info


def test_a_bound_running_pod_holds_its_node_and_a_finished_one_does_not() -> None:
    running = pod_info(name="a", node="n1", phase="Running")
    finished = pod_info(name="b", node="n1", phase="Succeeded")
    pending = pod_info(name="c")
    assert running.holds_resources and running.active and not running.terminal
    assert finished.terminal and not finished.active and not finished.holds_resources
    assert pending.active and not pending.holds_resources
    assert running.key == "default/a"


def test_a_pod_being_deleted_no_longer_counts_as_active() -> None:
    raw = pod("d", node="n1", phase="Running")
    raw["metadata"]["deletionTimestamp"] = "2026-12-01T10:05:00Z"
    leaving = pod_from_api(raw)
    assert leaving.deleting and not leaving.active and leaving.holds_resources


def test_a_node_s_free_capacity_is_allocatable_less_requested() -> None:
    n1 = node_info("n1", gpu=8)
    assert n1.free("nvidia.com/gpu") == 8
    assert n1.free("example.com/fpga") == 0, "a resource the node lacks is not free"


def test_podgroups_and_jobs_are_keyed_as_their_gangs_are() -> None:
    assert PodGroupInfo("volcano", "ml", "pg", 4).key == "volcano:ml/pg"
    assert JobInfo("ml", "train", 4).key == "ml/train"
