"""Consolidation in `gangplank simulate`: a pod no node has room for, while the cluster has its
GPUs free in total, makes room by moving running single-pod jobs (gangplank's move planner); the
moved jobs are recreated and land on the nodes planned for them, and the report counts the moves
and the waits of 8-GPU jobs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from extender.sim.cluster import synthetic
from extender.sim.driver import Driver, Options
from extender.sim.inprocess import InProcess
from extender.sim.report.figures import figures
from extender.sim.report.rows import summary_rows
from extender.sim.simulate_args import Variant, parse_variant
from extender.sim.workload import JobSpec
from extender.sim.workload_faults import CONTROLLER
from loadtest import simulate_bench
from tests.sim.console import gangplank

HOUR = 3600.0


def job(name: str, gpus: int, at: float, hours: float) -> JobSpec:
    return JobSpec(name, "", 1, gpus, 1000, 1024, hours * HOUR, at, controller=CONTROLLER)


def scattered(waiting_gpus: int = 8, long_gpus: int = 4) -> list[JobSpec]:
    """Two 8-GPU nodes: a long job and a short one on each (gangplank packs them), the short ones
    end after 6 minutes, leaving the GPUs free half on each node; then a job of `waiting_gpus`."""
    short = 8 - long_gpus
    return [
        job("long-a", long_gpus, 0.0, 10),
        job("short-a", short, 1.0, 0.1),
        job("short-b", short, 2.0, 0.1),
        job("long-b", long_gpus, 3.0, 10),
        job("waiting", waiting_gpus, 0.2 * HOUR, 1),
    ]


def played(jobs: list[JobSpec], **options: Any) -> Driver:
    options.setdefault("stall_seconds", 100 * HOUR)
    driver = Driver(synthetic(2, 8), jobs, InProcess(None), Options(**options))
    driver.run()
    return driver


def started(driver: Driver, name: str) -> float | None:
    return next(r.started for r in driver.records if r.spec.name == name)


def test_an_eight_gpu_job_waits_for_a_long_job_to_end_without_consolidation() -> None:
    driver = played(scattered())
    assert started(driver, "waiting") == pytest.approx(10 * HOUR, abs=60)
    assert driver.jobs_moved == 0


def test_with_consolidation_one_job_moves_to_the_other_node_and_the_eight_gpu_job_starts() -> None:
    events: list[tuple[str, str]] = []
    jobs = scattered()
    driver = Driver(
        synthetic(2, 8),
        jobs,
        InProcess(None),
        Options(consolidate=True, stall_seconds=100 * HOUR),
        on_event=lambda kind, text: events.append((kind, text)),
    )
    driver.run()
    waited = (started(driver, "waiting") or 0) - 0.2 * HOUR
    assert 0 <= waited < 60
    assert (driver.jobs_moved, driver.gpus_moved) == (1, 4)
    moved = [text for kind, text in events if kind == "moved"]
    assert len(moved) == 1 and moved[0].startswith("long-")
    # the moved job was recreated, started again and ran its work to the end
    record = next(r for r in driver.records if moved[0].startswith(r.spec.name))
    assert record.runs == 2 and record.outcome == "completed" and record.preempted == 0
    assert not driver.held  # every hold was taken by the pod it was for
    report = figures(driver, "moves", moves=True)
    assert report["jobs_moved"] == 1 and report["gpus_moved"] == 4
    assert report["wait_8gpu_p95_h"] == pytest.approx(waited / HOUR, abs=0.001)
    assert ("jobs_moved", "jobs moved to make room (consolidation)") in summary_rows([report])


@pytest.mark.parametrize(
    ("jobs", "options"),
    [
        (scattered(waiting_gpus=8, long_gpus=6), {"consolidate": True}),
        (scattered(), {"consolidate": True, "moves_per_minute": 0}),
        (scattered(waiting_gpus=10), {"consolidate": True}),
    ],
    ids=[
        "a job that would have no place on the other node is not moved (and nothing else is)",
        "no job moves when the moves allowed per minute are spent",
        "a job that fits no node even when one is emptied moves nothing",
    ],
)
def test_nothing_moves_when(jobs: list[JobSpec], options: dict[str, Any]) -> None:
    driver = played(jobs, until=2 * HOUR, **options)
    assert driver.jobs_moved == 0
    assert started(driver, "waiting") is None


def test_a_run_that_does_not_consolidate_reports_no_move_figures_unless_asked() -> None:
    driver = played(scattered(), until=HOUR)
    assert "jobs_moved" not in figures(driver, "off")
    assert figures(driver, "off", moves=True)["jobs_moved"] == 0


def test_a_variant_consolidates_with_consolidate_on_and_a_wrong_value_is_refused() -> None:
    base = Variant("gangplank", "synthetic:2x8", None)
    assert parse_variant("consolidate=on,label=moves", base).consolidate
    assert not parse_variant(
        "consolidate=off", Variant("g", "c", None, consolidate=True)
    ).consolidate
    with pytest.raises(ValueError, match="consolidate=on\\|off"):
        parse_variant("consolidate=yes", base)


@pytest.mark.slow
def test_simulate_with_consolidation_prints_the_moves_and_the_8_gpu_waits_side_by_side(
    tmp_path: Path,
) -> None:
    done = gangplank(
        "simulate", "--cluster", "synthetic:4x8", "--jobs", "60", "--hours", "2", "--load", "1.2",
        "--seeds", "1", "--workers", "1", "--compare", "label=off", "consolidate=on,label=on",
        "--no-baseline", "--no-html", "--quiet", "--out", str(tmp_path),
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    shown = done.stdout.splitlines()
    for row in ("jobs moved to make room (consolidation)", "GPUs moved", "8-GPU job wait p95 (h)"):
        assert any(line.startswith(row) for line in shown), row
    runs = json.loads((tmp_path / "report.json").read_text())["runs"]
    assert [r["consolidation"] for r in runs] == [False, True]
    assert runs[0]["jobs_moved"] == 0


def test_make_bench_s_simulate_rows_say_what_a_consolidating_run_moved_and_its_8_gpu_waits() -> (
    None
):
    run = {"jobs_moved": 3, "gpus_moved": 10, "wait_8gpu_p50_h": 0.0, "wait_8gpu_p95_h": 0.25}
    assert simulate_bench._moves(run) == (
        " (3 jobs moved, 10 GPUs; 8-GPU job wait p50 0.0 h, p95 0.25 h)"
    )
    assert simulate_bench._moves({"label": "a run that does not consolidate"}) == ""
    assert "consolidation" in {c.name for c in simulate_bench.COMMANDS}
