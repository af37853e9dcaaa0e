"""Elastic jobs in `gangplank simulate` (extender/sim/elastic.py): which jobs of a workload are
elastic, how their pods say so, and how their work goes at the pace of their workers as extras
come and go."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from extender.core.queues.policy_parse import parse_policy
from extender.sim.cluster import synthetic
from extender.sim.driver import Driver, Options
from extender.sim.elastic import with_elastic
from extender.sim.inprocess import InProcess
from extender.sim.workload import GANG_MAX, GANG_SIZE, JobSpec, Mix, generate, pod_object
from tests.builders import gpus, policy_doc, queue

HOUR = 3600.0
# research borrows what vision, guaranteed 8 GPUs, does not use: vision reclaims it
QUEUES = parse_policy(policy_doc(queue("research"), queue("vision", guarantee=gpus(8))), "p.yaml")


def job(
    name: str, at: float = 0.0, *, least: int = 1, most: int = 0, hours: float = 1.0, q: str = ""
) -> JobSpec:
    """Pods of 8 GPUs: `least` of them at the least, `most` at the most (0: not elastic)."""
    return JobSpec(
        name, q, least, 8, 1000, 1024, hours * HOUR, at, namespace=q or "default", max_members=most
    )


def played(jobs: list[JobSpec], nodes: int = 3, policy: Any = None) -> Driver:
    driver = Driver(
        synthetic(nodes, 8),
        jobs,
        InProcess(policy),
        Options(stall_seconds=100 * HOUR, period_seconds=HOUR),
    )
    driver.run()
    return driver


# ---- the workload ----------------------------------------------------------------------------
def generated() -> list[JobSpec]:
    return generate(Mix(jobs=2000, hours=24, seed=3), [8] * 64)


def test_a_share_of_the_gangs_is_elastic_from_half_their_pods_to_all_of_them() -> None:
    jobs = generated()
    elastic = with_elastic(jobs, 0.3, seed=3)
    changed = [(a, b) for a, b in zip(jobs, elastic, strict=True) if a != b]
    gangs = [j for j in jobs if j.members > 1]
    assert 0.25 < len(changed) / len(gangs) < 0.35
    for before, after in changed:
        assert after.elastic and after.members == before.members // 2
        assert after.pods == after.max_members == before.members
        assert after.total_gpus == before.total_gpus and after.duration == before.duration
    assert all(a == b for a, b in zip(jobs, elastic, strict=True) if a.members == 1)


def test_which_gangs_are_elastic_is_seeded_and_each_gang_draws_its_own() -> None:
    jobs = generated()
    elastic = with_elastic(jobs, 0.3, seed=3)
    assert elastic == with_elastic(jobs, 0.3, seed=3)
    assert elastic != with_elastic(jobs, 0.3, seed=4)
    assert with_elastic(jobs[500:600], 0.3, seed=3) == elastic[500:600]
    assert with_elastic(jobs, 0.0, seed=3) == jobs


def test_an_elastic_jobs_pods_name_its_minimum_and_its_maximum() -> None:
    spec = job("el", least=2, most=4)
    pods = [pod_object(spec, i, f"u{i}", 0.0) for i in range(spec.pods)]
    assert [p["metadata"]["name"] for p in pods] == ["el-0", "el-1", "el-2", "el-3"]
    assert {
        (p["metadata"]["annotations"][GANG_SIZE], p["metadata"]["annotations"][GANG_MAX])
        for p in pods
    } == {("2", "4")}
    assert GANG_MAX not in pod_object(job("whole", least=4), 0, "u", 0.0)["metadata"]["annotations"]


# ---- its work at the pace of its workers ------------------------------------------------------
@pytest.mark.parametrize(
    "nodes,workers,hours",
    [(3, 3, 4 / 3), (4, 4, 1.0), (2, 2, 2.0)],
    ids=[
        "min 2 / max 4 on room for 3 runs 3 workers and does its 4 worker-hours in 1h20",
        "on room for its maximum it runs its hour",
        "on room for its minimum alone it runs twice as long",
    ],
)
def test_an_elastic_job_runs_as_many_workers_as_fit_and_its_work_takes_as_long_as_they_need(
    nodes: int, workers: int, hours: float
) -> None:
    driver = played([job("el", least=2, most=4)], nodes=nodes)
    [record] = driver.records
    assert record.started == 0.0 and record.ended == pytest.approx(hours * HOUR)
    assert (record.fewest, record.most) == (2 if workers > 2 else workers, workers)
    assert record.worker_seconds == pytest.approx(4 * HOUR)
    assert driver.extras_started == workers - 2


def test_a_reclaimed_extra_slows_the_job_keeps_its_minimum_and_comes_back_when_room_frees() -> None:
    # 3 workers from 0 to 0.5h (1.5 worker-hours), 2 while vision's job runs (to 1h: 1), then
    # 3 again for the 1.5 left: it ends at 1.5h, never preempted whole
    jobs = [
        job("el", least=2, most=4, q="research"),
        job("urgent", 0.5 * HOUR, hours=0.5, q="vision"),
    ]
    driver = played(jobs, policy=QUEUES)
    el, urgent = driver.records
    assert urgent.started == pytest.approx(0.5 * HOUR, abs=60)
    assert el.preempted == 0 and (el.fewest, el.most) == (2, 3)
    assert el.ended == pytest.approx(1.5 * HOUR, abs=60)
    assert (driver.extras_started, driver.extras_taken) == (2, 1)
    # worker-seconds by hour: 0.5h x 3 + 0.5h x 2, then 0.5h x 3
    assert driver.periods is not None
    assert driver.periods.row("elastic workers", 2) == pytest.approx(
        [2.5 * HOUR, 1.5 * HOUR], rel=0.05
    )


def test_taking_workers_of_an_elastic_job_below_its_minimum_takes_it_whole_to_start_again() -> None:
    driver = Driver(
        synthetic(3, 8), [job("el", least=2, most=3)], InProcess(None), Options(until=0.5 * HOUR)
    )
    driver.run()
    run = next(p.run for p in driver.live.values())
    assert run.workers == 3
    driver._take(run, [p for p in run.pods if p.node is not None][:2], "two of its three taken")
    [record] = driver.records
    assert run.gone and record.preempted == 1 and record.runs == 2  # recreated, waiting again
    assert record.worker_seconds == pytest.approx(1.5 * HOUR)  # what it ran is lost


def test_a_workload_without_elastic_jobs_runs_as_before() -> None:
    jobs = [job("a", least=2), job("b", 0.2 * HOUR, least=1)]
    plain = played(jobs)
    assert [r.ended for r in plain.records] == [HOUR, 1.2 * HOUR]
    assert (plain.extras_started, plain.extras_taken) == (0, 0)
    assert dataclasses.replace(jobs[0], max_members=2).elastic is False  # a maximum at its size
