"""`gangplank simulate`: a kube-scheduler-like driver replays a workload through gangplank's
decision core in simulated time, and through kube-scheduler alone for comparison."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from extender.cli import main
from extender.convert import node_from_api
from extender.sim.baseline import Baseline
from extender.sim.cluster import ClusterError, load_cluster, synthetic
from extender.sim.driver import Driver, Options
from extender.sim.fit import FitIndex
from extender.sim.inprocess import InProcess
from extender.sim.report import figures
from extender.sim.workload import JobSpec, Mix, Shape, from_trace, generate, pressure
from tests.builders import pod_info

DEMO_CLUSTER = Path(__file__).resolve().parent.parent / "extender/data/demo-cluster.yaml"


def job(
    name: str, at: float, *, members: int = 1, gpus: int = 1, hours: float = 1.0, queue: str = ""
) -> JobSpec:
    return JobSpec(name, queue, members, gpus, 1000, 1024, hours * 3600, at)


def contended() -> list[JobSpec]:
    """Two 16-GPU gangs (2 x 8) arrive together on 16 GPUs, then one more: only whole gangs
    make progress."""
    return [
        job("a", 0, members=2, gpus=8),
        job("b", 0, members=2, gpus=8),
        job("c", 1, members=2, gpus=8),
    ]


def run(extender: InProcess | Baseline, jobs: list[JobSpec], nodes: int = 2) -> dict[str, Any]:
    driver = Driver(synthetic(nodes, 8), jobs, extender)
    driver.run()
    return figures(driver, extender.name)


def test_gangplank_starts_gangs_whole_and_holds_nothing_for_incomplete_ones() -> None:
    result = run(InProcess(None), contended())
    assert result["started"] == 3
    assert result["incomplete_gang_gpu_hours"] == 0
    assert result["queues"]["(none)"]["gang_start_p50_h"] == pytest.approx(1.0, abs=0.01)


def test_without_gangplank_half_bound_gangs_hold_gpus_and_can_deadlock() -> None:
    result = run(Baseline(), contended())
    # a and b each bind one member (spread scoring puts them on different nodes): neither can
    # start, both hold 8 GPUs until the run gives up
    assert result["never_started"] >= 2
    assert result["incomplete_gang_gpu_hours"] > 0


def test_gangplank_s_placement_scores_place_single_pods_so_whole_nodes_stay_free() -> None:
    # Two 4-GPU pods, then an 8-GPU pod, on two 8-GPU nodes: packed onto one node, the first two
    # leave the other whole and the third starts at once; spread, it waits for an hour.
    jobs = [job("a", 0, gpus=4), job("b", 60, gpus=4), job("c", 120, gpus=8)]
    for seed in range(8):  # kube-scheduler's pick among equal scores is random: try several
        driver = Driver(synthetic(2, 8), jobs, InProcess(None), Options(seed=seed))
        driver.run()
        started = {r.spec.name: r.started for r in driver.records}
        assert started["c"] == pytest.approx(120, abs=30), seed


def test_a_job_larger_than_the_cluster_ends_the_run_and_is_counted_as_never_started() -> None:
    result = run(InProcess(None), [job("big", 0, members=4, gpus=8)])
    assert result["never_started"] == 1
    assert result["simulated_hours"] <= 2.1


def test_the_stand_in_scheduler_places_one_pod_per_cycle_so_a_backlog_drains_at_a_pace() -> None:
    jobs = [job(f"j{i}", 0.0) for i in range(6)]  # six 1-GPU pods at once, room for all
    driver = Driver(synthetic(1, 8), jobs, Baseline(), Options(cycle_seconds=2.0))
    driver.run()
    assert [r.started for r in driver.records] == [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
    instant = Driver(synthetic(1, 8), jobs, Baseline())
    instant.run()
    assert {r.started for r in instant.records} == {0.0}


def test_a_run_stops_its_drain_time_after_the_last_arrival_even_while_work_goes_on() -> None:
    jobs = [job("long", 0.0, hours=10), job("late", 600.0, hours=10)]
    driver = Driver(synthetic(1, 8), jobs, Baseline(), Options(drain_seconds=3600.0))
    driver.run()
    assert 600.0 < driver.now <= 4200.0
    assert all(r.started is not None and r.ended is None for r in driver.records)


def test_generated_workloads_are_reproducible_and_sized_to_the_load() -> None:
    mix = Mix(jobs=300, hours=10, load=0.5, seed=7, queues={"a": 1, "b": 3})
    jobs = generate(mix, [8] * 64)
    assert jobs == generate(mix, [8] * 64)
    assert jobs != generate(Mix(jobs=300, hours=10, load=0.5, seed=8), [8] * 64)
    asked = sum(j.total_gpus * j.duration for j in jobs) / 3600
    assert 0.25 * 512 * 10 < asked < 1.0 * 512 * 10  # lognormal: near the target, not on it
    assert sum(j.queue == "b" for j in jobs) > sum(j.queue == "a" for j in jobs)


def test_generated_load_is_measured_against_the_nodes_that_can_run_each_pod() -> None:
    # 8 GPUs on 8-GPU nodes, 24 on 1-GPU nodes: jobs of 8-GPU pods can use only the first 8
    # GPUs, so at load 0.5 they ask for 4 GPUs on average over the span, not 16.
    big = Mix(jobs=400, hours=10, load=0.5, seed=3, shapes=(Shape(1, 8, 1),))
    jobs = generate(big, [8] + [1] * 24)
    asked = sum(j.total_gpus * j.duration for j in jobs) / (10 * 3600)
    assert 2 < asked < 8
    assert jobs == generate(big, [1] * 12 + [8] + [1] * 12)  # the same nodes: the same jobs
    # single-GPU pods may use every node: the whole cluster's GPUs count
    small = generate(
        Mix(jobs=400, hours=10, load=0.5, seed=3, shapes=(Shape(1, 1, 1),)), [8] + [1] * 24
    )
    assert 8 < sum(j.total_gpus * j.duration for j in small) / (10 * 3600) < 32
    assert pressure([Shape(1, 16, 1)], [8] * 4) == 0.0  # pods no node can hold count nowhere


def test_the_simulated_scheduler_s_own_filter_follows_every_bind_and_release() -> None:
    nodes = {n.name: n for n in (node_from_api(raw) for raw in synthetic(40, 8))}
    free = {name: dict(n.allocatable) for name, n in nodes.items()}
    index = FitIndex(nodes, free)
    kinds = [pod_info(gpu=g, cpu=c) for g, c in ((1, "1"), (4, "8"), (8, "1"))]
    rng = random.Random(5)
    for _ in range(400):
        name = rng.choice(list(nodes))
        gpus = rng.choice((1, 2, 4))
        taken = free[name]["nvidia.com/gpu"] - gpus
        if taken < 0 or rng.random() < 0.4:
            free[name]["nvidia.com/gpu"] = min(8, free[name]["nvidia.com/gpu"] + gpus)
        else:
            free[name]["nvidia.com/gpu"] = taken
        index.moved(name)
        for kind in kinds:
            want = kind.requests
            walked = {n for n, f in free.items() if all(f.get(r, 0) >= a for r, a in want.items())}
            assert set(index.nodes_for(kind)) == walked


def test_clusters_come_from_yaml_dumps_trace_csvs_and_synthetic_specs(tmp_path: Path) -> None:
    assert [n["metadata"]["name"] for n in load_cluster(str(DEMO_CLUSTER))][:2] == [
        "gpu-a1",
        "gpu-a2",
    ]
    spot = tmp_path / "node_info_df.csv"
    spot.write_text("gpu_model,gpu_capacity_num,cpu_num,node_name\nA100,8,96,3\nT4,2,32,4\n")
    nodes = load_cluster(str(spot))
    assert nodes[0]["status"]["allocatable"]["nvidia.com/gpu"] == "8"
    assert nodes[1]["metadata"]["labels"]["nvidia.com/gpu.product"] == "T4"
    assert len(load_cluster("synthetic:10x4")) == 10
    with pytest.raises(ClusterError, match="not a node list"):
        (tmp_path / "x.csv").write_text("a,b\n1,2\n")
        load_cluster(str(tmp_path / "x.csv"))
    with pytest.raises(ClusterError, match="no such file"):
        load_cluster(str(tmp_path / "absent.yaml"))


def test_trace_pod_lists_replay_in_their_own_time(tmp_path: Path) -> None:
    pods = tmp_path / "pods.csv"
    pods.write_text(
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
        "deletion_time,scheduled_time\n"
        "p1,1000,1024,0,500,,LS,Running,100,4000,200\n"
        "p2,2000,2048,2,1000,,LS,Running,50,1050,60\n"
    )
    jobs = from_trace(pods, ["q"])
    assert [(j.arrival, j.gpus, j.duration, j.queue) for j in jobs] == [
        (0.0, 2, 990.0, "q"),
        (50.0, 1, 3800.0, "q"),  # a share of one GPU asks for a whole one
    ]


def test_the_command_writes_a_summary_json_and_html_and_compares_variants(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            "simulate",
            "--cluster",
            "synthetic:8x8",
            "--jobs",
            "80",
            "--hours",
            "4",
            "--quiet",
            "--out",
            str(tmp_path),
            "--compare",
            "label=today",
            "nodes=+8,label=+8 nodes",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "today" in out and "+8 nodes" in out and "kube-scheduler alone" in out
    assert "+8 nodes (against today):" in out
    runs = json.loads((tmp_path / "report.json").read_text())["runs"]
    assert [r["label"] for r in runs] == ["today", "+8 nodes", "kube-scheduler alone"]
    assert runs[1]["gpus"] == 128 and runs[0]["gpus"] == 64
    page = (tmp_path / "report.html").read_text()
    assert page.count("data:image/png;base64,") >= 5


def test_bad_arguments_get_a_clear_message_and_exit_code_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["simulate", "--cluster", str(tmp_path / "none.yaml"), "--quiet"]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["simulate", "--compare", "size=3", "label=b", "--quiet"]) == 2
    assert "is not label=" in capsys.readouterr().err
