"""`gangplank simulate`: a kube-scheduler-like driver replays a workload through gangplank's
decision core in simulated time, and through kube-scheduler alone for comparison."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

import pytest

from extender.cli.main import main
from extender.core.gangs.placer import GangConfig
from extender.core.queues.fair_order import fair_shares
from extender.core.queues.policy_parse import parse_policy
from extender.kube.convert import node_from_api
from extender.policy.file import load_policy
from extender.sim.baseline import Baseline
from extender.sim.cluster import ClusterError, load_cluster, synthetic
from extender.sim.driver import Driver, Options
from extender.sim.fit import FitIndex
from extender.sim.inprocess import InProcess
from extender.sim.report.cells import by_variant
from extender.sim.report.charts import colours, time_unit
from extender.sim.report.figures import figures, waited_by_cause
from extender.sim.report.page import write_html
from extender.sim.report.rows import SUMMARY_ROWS
from extender.sim.report.tables import summary
from extender.sim.report.verdicts import difference_table, differences
from extender.sim.runs import SimPod
from extender.sim.workload import (
    JobSpec,
    Mix,
    Shape,
    fgd_arrivals,
    from_trace,
    generate,
    pressure,
)
from loadtest import simulate_bench
from tests.builders import gpus, pod_info, policy_doc, queue
from tests.sim.console import gangplank

DEMO_CLUSTER = Path(__file__).resolve().parents[2] / "extender/data/demo-cluster.yaml"


def job(
    name: str, at: float, *, members: int = 1, gpus: int = 1, hours: float = 1.0, queue: str = ""
) -> JobSpec:
    return JobSpec(
        name, queue, members, gpus, 1000, 1024, hours * 3600, at, namespace=queue or "default"
    )


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
    # start, both hold 8 GPUs until the run gives up, and c never finds room
    assert result["started"] == 0 and result["never_started"] == 3
    assert result["incomplete_gang_gpu_hours"] == 16.0


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


def test_the_command_writes_a_summary_json_and_html_and_compares_variants_over_three_seeds(
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
            "--workers",
            "1",
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
    assert "+8 nodes against today (medians of 3 seeds):" in out
    report = json.loads((tmp_path / "report.json").read_text())
    runs = report["runs"]
    assert [(r["label"], r["seed"]) for r in runs] == [
        (label, seed)
        for seed in (1, 2, 3)
        for label in ("today", "+8 nodes", "kube-scheduler alone")
    ]
    assert runs[1]["gpus"] == 128 and runs[0]["gpus"] == 64
    assert {d["variant"] for d in report["differences"]} == {"+8 nodes", "kube-scheduler alone"}
    page = (tmp_path / "report.html").read_text()
    assert page.count("data:image/png;base64,") >= 6


def test_bad_arguments_get_a_clear_message_and_exit_code_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["simulate", "--cluster", str(tmp_path / "none.yaml"), "--quiet"]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["simulate", "--compare", "size=3", "label=b", "--quiet"]) == 2
    assert "is not label=" in capsys.readouterr().err


# ---- the fair share a queue's share is measured against --------------------------------------
EXAMPLE_POLICY = Path(__file__).resolve().parents[2] / "policies/example.yaml"


def test_a_queue_s_fair_share_is_its_weight_among_siblings_down_the_tree() -> None:
    # example.yaml: production (weight 2), research (1: vision and language, 1 each),
    # best-effort (0.5) share the cluster; legacy is draining and takes no part.
    policy = load_policy(str(EXAMPLE_POLICY))
    shares = fair_shares(policy, ["production", "vision", "language", "best-effort"])
    assert shares["production"] == pytest.approx(2 / 3.5)  # 57%, not 2 / 4.5 of the leaves
    assert shares["research"] == pytest.approx(1 / 3.5)
    assert shares["vision"] == shares["language"] == pytest.approx(0.5 / 3.5)
    assert shares["best-effort"] == pytest.approx(0.5 / 3.5)
    assert "legacy" not in shares
    # language idle: vision has all of research's share; research idle: the others split all
    assert fair_shares(policy, ["production", "vision"])["vision"] == pytest.approx(1 / 3)
    assert fair_shares(policy, ["production", "best-effort"])["production"] == pytest.approx(0.8)


def test_the_report_measures_each_queue_s_share_against_its_fair_share_in_the_tree() -> None:
    policy = load_policy(str(EXAMPLE_POLICY))
    jobs = [
        job(f"{q}-{i}", i * 60.0, queue=q)
        for i, q in enumerate(["production", "vision", "language", "best-effort"] * 2)
    ]
    driver = Driver(synthetic(2, 8), jobs, InProcess(policy))
    driver.run()
    result = figures(driver, "gangplank", policy)
    fair = {q: v["fair_share"] for q, v in result["queues"].items()}
    assert fair == {"best-effort": 0.143, "language": 0.143, "production": 0.571, "vision": 0.143}
    assert "share of GPU-hours (fair 57%)" in summary([result])


# ---- what each job waited for --------------------------------------------------------------
def waited(extender: InProcess | Baseline, jobs: list[JobSpec], nodes: int = 2) -> dict[str, Any]:
    driver = Driver(synthetic(nodes, 8), jobs, extender)
    driver.run()
    return {
        r.spec.name: {c: round(s) for c, s in waited_by_cause(r, driver.now).items()}
        for r in driver.records
    }


def test_a_job_its_queue_s_max_refuses_waits_for_quota() -> None:
    policy = parse_policy(policy_doc(queue("a", max=gpus(8))))
    jobs = [job("x", 0, gpus=8, queue="a"), job("y", 0, gpus=8, queue="a")]
    assert waited(InProcess(policy), jobs)["y"] == {"quota": 3600}


def test_a_job_no_node_has_room_for_waits_for_room() -> None:
    jobs = [job("x", 0, gpus=8), job("y", 0, gpus=8)]
    assert waited(InProcess(None), jobs, nodes=1)["y"] == {"room": 3600}


def test_a_half_bound_gang_waits_for_its_gang() -> None:
    found = waited(Baseline(), contended())
    assert set(found["a"]) == {"gang"} and set(found["b"]) == {"gang"}


def test_a_pod_that_fits_in_capacity_held_for_the_head_of_the_line_waits_for_the_hold() -> None:
    # a and b fill both nodes; the gang g (16 GPUs) heads the line and holds what frees up:
    # b's node, when b ends at 300 s. t (4 GPUs, at 400 s) fits there, but it is held.
    policy = parse_policy(policy_doc(queue("q")))
    jobs = [
        job("a", 0, gpus=8, hours=10, queue="q"),
        job("b", 0, gpus=8, hours=300 / 3600, queue="q"),
        job("g", 60, members=2, gpus=8, queue="q"),
        job("t", 400, gpus=4, queue="q"),
    ]
    found = waited(InProcess(policy, GangConfig(hold_seconds=3600)), jobs)
    assert set(found["t"]) == {"hold"} and found["t"]["hold"] > 3000


def test_the_summary_says_what_each_queue_s_jobs_waited_for() -> None:
    policy = parse_policy(policy_doc(queue("a", max=gpus(8)), queue("b")))
    jobs = [job("x", 0, gpus=8, queue="a"), job("y", 0, gpus=8, queue="a")]
    jobs += [job("z", 0, gpus=8, queue="b"), job("w", 0, gpus=8, queue="b")]
    driver = Driver(synthetic(2, 8), jobs, InProcess(policy))
    driver.run()
    result = figures(driver, "gangplank", policy)
    assert result["queues"]["a"]["wait_by_cause_h"] == {"quota": 1.0}
    assert result["queues"]["b"]["wait_by_cause_h"] == {"room": 1.0}
    text = summary([result])
    rows = [line.split() for line in text.splitlines()]
    assert ["a", "1:", "quota", "100%"] in rows and ["b", "1:", "room", "100%"] in rows


# ---- what-if over seeds -----------------------------------------------------------------------
def one_run(label: str, seed: int, p95: float, never: int) -> dict[str, Any]:
    queue = {"wait_p50_h": 0.0, "wait_p95_h": p95, "share": 1.0}
    return {
        "label": label,
        "seed": seed,
        "queues": {"q": queue},
        **{key: 0 for key, _ in SUMMARY_ROWS},
        "never_started": never,
    }


def test_a_difference_that_changes_sign_between_seeds_is_within_noise() -> None:
    today = [one_run("today", s, p95, 5) for s, p95 in ((1, 0.1), (2, 0.5), (3, 0.2))]
    more = [
        one_run("+16", s, p95, n)
        for s, p95, n in ((1, 0.7, 3), (2, 0.3, 3), (3, 0.2, 3), (4, 0.9, 9))
    ]
    found = {d["what"]: d for d in differences(today, more)}
    wait = found["q p95 wait (h)"]
    assert wait["change"] == pytest.approx([0.6, -0.2, 0.0])  # seed by seed; seed 4 unmatched
    assert wait["verdict"] == "within noise (up in 1, down in 1, unchanged in 1 of 3 seeds)"
    assert found["jobs not started by the end"]["verdict"] == "down in every seed"
    lines = difference_table(list(found.values())).splitlines()
    assert lines[0] == "+16 against today (medians of 3 seeds):"
    assert lines[3].split() == ["jobs", "not", "started", "by", "the", "end", "5", "3", "-2",
                                "(-2", "to", "-2)", "down", "in", "every", "seed"]  # fmt: skip
    assert "within noise" in lines[4], "those that go one way come first"


def test_one_seed_says_that_it_cannot_tell_noise() -> None:
    found = differences([one_run("today", 1, 0.1, 5)], [one_run("+16", 1, 0.7, 5)])
    assert [d["verdict"] for d in found] == ["one seed: noise unknown"]
    assert "--seeds 3 or more" in difference_table(found)


def test_a_what_if_runs_every_variant_on_each_seed_and_reports_the_spread(
    tmp_path: Path,
) -> None:
    result = gangplank(
        "simulate",
        *("--cluster", "synthetic:4x8", "--jobs", "40", "--hours", "1", "--seeds", "3"),
        *("--policy", str(EXAMPLE_POLICY), "--quiet", "--no-html", "--out", "out"),
        *("--compare", "label=today", "nodes=+2,label=+2 nodes"),
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "(median and range over 3 seeds)" in out
    assert "today: synthetic:4x8: 4 nodes, 32 GPUs; gangplank with" in out
    assert "+2 nodes: synthetic:4x8 +2 nodes: 6 nodes, 48 GPUs;" in out
    assert "+2 nodes against today (medians of 3 seeds):" in out
    report = json.loads((tmp_path / "out/report.json").read_text())
    assert sorted({r["seed"] for r in report["runs"]}) == [1, 2, 3]
    assert report["differences"], "more nodes change something"
    for d in report["differences"]:
        assert len(d["change"]) == len(d["seeds"]) and set(d["seeds"]) <= {1, 2, 3}
        one_way = all(c > 0 for c in d["change"]) or all(c < 0 for c in d["change"])
        assert d["verdict"].startswith("within noise") != one_way, d
        assert d["what"] in out


# ---- trace replays ----------------------------------------------------------------------------
def test_fgd_arrivals_are_the_list_then_seeded_draws_until_the_gpus_asked_exceed_the_cluster() -> (
    None
):
    listed = [job("a", 0, gpus=2), job("b", 5, gpus=0), job("c", 9, gpus=1)]
    arrivals = fgd_arrivals(listed, 10, seed=3)
    assert [j.gpus for j in arrivals[:3]] == [2, 0, 1]
    assert sum(j.gpus for j in arrivals) > 10 >= sum(j.gpus for j in arrivals[:-1])
    assert [j.arrival for j in arrivals] == [float(i) for i in range(len(arrivals))]
    assert {j.duration for j in arrivals} == {math.inf}, "no pod leaves"
    assert arrivals == fgd_arrivals(listed, 10, seed=3) != fgd_arrivals(listed, 10, seed=4)


def trace_csv(path: Path, rows: int) -> Path:
    lines = [
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
        "deletion_time,scheduled_time"
    ]
    for i in range(rows):
        gpus = (1, 2, 4)[i % 3]
        lines.append(
            f"p{i},1000,1024,{gpus},1000,,LS,Running,{i * 3600},{i * 3600 + 600},{i * 3600}"
        )
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_trace_replayed_in_its_own_time_says_how_light_it_is_and_fgd_fills_the_cluster(
    tmp_path: Path,
) -> None:
    pods = trace_csv(tmp_path / "pods.csv", 6)
    own = gangplank(
        "simulate", "--cluster", "synthetic:2x8", "--workload", str(pods), "--quiet",
        "--no-html", "--no-baseline", "--out", "own", cwd=tmp_path,
    )  # fmt: skip
    assert own.returncode == 0, own.stderr
    assert "the trace in its own time: 6 pods arriving over 5 hours, asking for 2.1% of " in (
        own.stderr
    )
    fgd = gangplank(
        "simulate", "--cluster", "synthetic:2x8", "--workload", str(pods), "--arrivals", "fgd",
        "--quiet", "--no-html", "--out", "fgd", cwd=tmp_path,
    )  # fmt: skip
    assert fgd.returncode == 0, fgd.stderr
    assert "GPU allocation at the end" in fgd.stdout
    runs = json.loads((tmp_path / "fgd/report.json").read_text())["runs"]
    assert all(r["allocated_at_end"] >= 0.75 for r in runs), "arrivals until 16 GPUs are asked"
    assert all(r["allocated_at_first_no_room"] is not None for r in runs)


def test_fgd_arrivals_without_a_trace_are_refused_in_one_line(tmp_path: Path) -> None:
    result = gangplank("simulate", "--arrivals", "fgd", "--quiet", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr == (
        "gangplank simulate: --arrivals fgd replays a trace's pods: give one with --workload\n"
    )


# ---- the report page --------------------------------------------------------------------------
def test_time_axes_are_in_a_unit_that_fits_the_run() -> None:
    def lasting(seconds: float) -> dict[str, Any]:
        return {"series": {"t_s": [0.0, seconds]}}

    assert time_unit([lasting(90)]) == ("seconds", 1.0)
    assert time_unit([lasting(5400)]) == ("minutes", 60.0)
    assert time_unit([lasting(86400), lasting(60)]) == ("hours", 3600.0)


def test_the_page_names_each_variant_s_cluster_and_gives_it_one_colour(tmp_path: Path) -> None:
    runs = []
    for label, nodes in (("today", 2), ("+1 node", 3)):
        for seed in (1, 2):
            driver = Driver(synthetic(nodes, 8), contended(), InProcess(None), Options(seed=seed))
            driver.run()
            cluster = "synthetic:2x8" + (" +1 nodes" if nodes == 3 else "")
            runs.append(figures(driver, label, cluster=cluster, seed=seed))
    colour = colours(by_variant(runs))
    assert len(set(colour.values())) == 2
    write_html(runs, tmp_path / "report.html", "t", [])
    page = (tmp_path / "report.html").read_text()
    assert "today: synthetic:2x8: 2 nodes, 16 GPUs; gangplank without a policy, seeds 1, 2" in page
    assert f"background:{colour['+1 node']}" in page and "+1 node: synthetic:2x8 +1 nodes" in page


def test_the_baseline_s_remembered_scores_follow_binds_and_releases() -> None:
    nodes = synthetic(3, 8)
    names = [n["metadata"]["name"] for n in nodes]
    driver = Driver(nodes, [job(f"j{i}", 0, gpus=2) for i in range(3)], Baseline())
    for record in driver.records:
        driver._create_run(record)
    pods = list(driver.pending.values())
    places = ["node-00000", "node-00000", "node-00001"]

    def scored_afresh(placed: list[SimPod], where: list[str]) -> dict[str, int]:
        fresh = Baseline()
        fresh.start(nodes)
        for pod, name in zip(placed, where, strict=True):
            fresh.bind(pod, name, 0)
        return fresh.prioritize(pods[0], names, 0)

    remembering = Baseline()
    remembering.start(nodes)
    for n, (pod, name) in enumerate(zip(pods, places, strict=True)):
        remembering.prioritize(pod, names, 0)
        remembering.bind(pod, name, 0)
        assert remembering.prioritize(pods[0], names, 0) == scored_afresh(
            pods[: n + 1], places[: n + 1]
        )
    remembering.deleted(pods[:1], 0)
    assert remembering.prioritize(pods[0], names, 0) == scored_afresh(pods[1:], places[1:])


def test_the_bench_of_the_readme_s_commands_skips_those_needing_absent_traces(
    tmp_path: Path,
) -> None:
    page = tmp_path / "benchmarks.md"
    page.write_text(
        "# Benchmarks\n\nbefore\n<!-- simulate:begin -->\nold\n<!-- simulate:end -->\nafter\n"
    )
    code = simulate_bench.main(
        ["--only", "fgd,trace-day", "--traces", str(tmp_path / "none"), "--write", str(page)]
    )
    text = page.read_text()
    assert code == 0 and "old" not in text and text.endswith("<!-- simulate:end -->\nafter\n")
    assert "| fgd | the trace's pods on its 1,213 GPU nodes as the FGD paper replays them | " \
        "skipped: no traces | - |" in text  # fmt: skip
