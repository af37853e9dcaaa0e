"""GPU pools for the metrics: nodes by GPU model; stranded GPUs are free ones on nodes with fewer
free than the smallest GPU pod waiting."""

from __future__ import annotations

from extender.core.report.pools import pools
from tests.builders import gang_pods, node, pod
from tests.cluster import Cluster

H100 = {"nvidia.com/gpu.product": "H100"}
A100 = {"nvidia.com/gpu.product": "A100"}


def test_pools_count_allocatable_allocated_free_and_stranded_gpus() -> None:
    cluster = Cluster(
        nodes=[
            node("h0", labels=H100),
            node("h1", labels=H100),
            node("a0", labels=A100),
            node("cpu", gpu=0),
        ],
        pods=[
            pod("r0", gpu=6, node="h0", phase="Running"),
            pod("r1", gpu=8, node="a0", phase="Running"),
            pod("waits", gpu=4),  # the smallest GPU pod waiting: 4 GPUs
        ],
    )
    by_name = {p.name: p for p in pools(cluster.snap())}
    h100 = by_name["H100"]
    assert (h100.allocatable, h100.allocated, h100.free, h100.stranded) == (16, 6, 10, 2)
    a100 = by_name["A100"]
    assert (a100.allocatable, a100.allocated, a100.free, a100.stranded) == (8, 8, 0, 0)
    assert set(by_name) == {"H100", "A100"}, "nodes without GPUs are in no pool"


def test_nothing_is_stranded_while_no_gpu_pod_waits() -> None:
    cluster = Cluster(nodes=[node("h0", labels=H100)], pods=[pod("r", gpu=7, node="h0")])
    assert pools(cluster.snap())[0].stranded == 0


def test_jobs_failing_repeatedly_are_counted_per_queue() -> None:
    from extender.core.report.failures import failing_jobs

    def restarted(raw: dict[str, object], count: int) -> dict[str, object]:
        status = {"phase": "Running", "containerStatuses": [{"restartCount": count}]}
        return {**raw, "status": status}

    ring = gang_pods("ring", 2, gpu=1, node="h0")
    flaky = [restarted(ring[0], 2), restarted(ring[1], 1)]  # 3 restarts across the gang
    lost = gang_pods("lost", 3, gpu=1)
    lost[0]["status"] = {"phase": "Failed"}
    lost[1]["status"] = {"phase": "Failed"}
    healthy = gang_pods("fine", 2, gpu=1, node="h0")
    single = restarted(pod("solo", gpu=1, node="h0"), 5)
    cluster = Cluster(nodes=[node("h0", labels=H100)], pods=[*flaky, *lost, *healthy, single])
    assert failing_jobs(cluster.snap(), lambda p: "research") == {"research": 3}
