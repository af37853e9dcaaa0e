"""Consolidation on the trace model: a pod that fits no node moves placed pods of whole GPUs so
that it fits, every move checked before anything moves; and the comparison's row beside
gangplank's without moves."""

from __future__ import annotations

from pathlib import Path

import pytest

from extender.core.placement.fragmentation import Shape
from loadtest import fragmentation
from loadtest.fragmentation_moves import Consolidator


def two_gpus(cpu: int = 4000, models: frozenset[str] = frozenset()) -> Shape:
    return Shape(cpu, 16384, 2, 1000, models)


def cluster(
    pods: list[Shape], cpu: int = 64000
) -> tuple[list[fragmentation.SimNode], Consolidator]:
    """Two 4-GPU nodes, the i-th pod placed on node i."""
    nodes = [fragmentation.SimNode(f"node-{i}", "V100", cpu, 262144, 4) for i in range(2)]
    moves = Consolidator(nodes)
    for i, (node, shape) in enumerate(zip(nodes, pods, strict=True)):
        moves.record(f"pod-{i}", node, shape, node.place(shape, None))
    return nodes, moves


def free_gpus(nodes: list[fragmentation.SimNode]) -> list[int]:
    return [sum(1 for g in node.gpu_free if g == 1000) for node in nodes]


def test_a_four_gpu_pod_with_two_gpus_free_on_each_node_fits_after_one_pod_moves() -> None:
    nodes, moves = cluster([two_gpus(), two_gpus()])
    placed = moves.make_room("waiting", Shape(4000, 16384, 4, 1000))
    assert placed is not None
    assert free_gpus(nodes) == [0, 0]
    assert moves.moved == 1 and moves.gained == 1
    together = {moves.placed[uid].node.name for uid in ("pod-0", "pod-1")}
    assert len(together) == 1 and placed.name not in together


@pytest.mark.parametrize(
    ("pods", "waiting", "cpu"),
    [
        ([two_gpus(models=frozenset({"V100"}))] * 2, Shape(4000, 16384, 4, 1000), 64000),
        ([two_gpus(), two_gpus()], Shape(4000, 16384, 1, 500), 64000),
        ([two_gpus(cpu=40000), two_gpus(cpu=40000)], Shape(4000, 16384, 4, 1000), 64000),
        ([two_gpus(), two_gpus()], Shape(4000, 16384, 4, 1000, frozenset({"T4"})), 64000),
    ],
    ids=[
        "pods pinned to a GPU model are not moved",
        "a pod sharing a GPU is not consolidated for (the planner counts whole GPUs)",
        "a moved pod that would not fit its new node's CPU undoes the whole plan",
        "no node of the waiting pod's GPU model: nothing moves",
    ],
)
def test_nothing_moves_when(pods: list[Shape], waiting: Shape, cpu: int) -> None:
    nodes, moves = cluster(pods, cpu)
    before = [(node.cpu_free, node.memory_free, list(node.gpu_free)) for node in nodes]
    assert moves.make_room("waiting", waiting) is None
    assert [(node.cpu_free, node.memory_free, list(node.gpu_free)) for node in nodes] == before
    assert moves.moved == 0 and "waiting" not in moves.placed
    assert {moves.placed[f"pod-{i}"].node.name for i in range(2)} == {"node-0", "node-1"}


def test_the_comparison_gains_the_gpus_that_moves_free(tmp_path: Path) -> None:
    """Two 8-GPU nodes, pods of 3, 2 and 4 GPUs then seeded draws: gangplank's scores alone leave
    a quarter of the GPUs scattered at the first failure; one move fills the cluster."""
    root = tmp_path / fragmentation.TRACE
    root.mkdir()
    (root / "openb_node_list_all_node.csv").write_text(
        "sn,cpu_milli,memory_mib,gpu,model\n"
        "node-0,64000,262144,8,V100\nnode-1,64000,262144,8,V100\n"
    )
    (root / "openb_pod_list_default.csv").write_text(
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,creation_time\n"
        + "".join(f"pod-{i},4000,16384,{g},1000,,{i}\n" for i, g in enumerate((3, 2, 4)))
    )
    without = fragmentation.simulate(tmp_path, "default", "gangplank", seed=1)
    moving = fragmentation.simulate(tmp_path, "default", "gangplank+consolidation", seed=1)
    assert (without.first_failure_share, without.unallocated_at_full) == (0.75, 4)
    assert (moving.first_failure_share, moving.unallocated_at_full) == (1.0, 0)
    assert (moving.moved_at_full, without.moved_at_full) == (1, 0)
    lines = fragmentation.consolidation_verdict(
        {("default", r.policy): r for r in (without, moving)}, ["default"]
    )
    assert lines == [
        "default: consolidation: allocated at first failure 100.0% (without 75.0%), "
        "unallocated GPUs at 100% load 0 (without 4); 1 pods moved by then, 0.25 per GPU gained "
        "(1 in the whole run; 0 plans undone, a pod short of CPU or memory where the plan, which "
        "counts GPUs, put it)"
    ]
