"""The consolidation benchmark measures what it says: on its scattered cluster the planner and the
engine both find a plan that moves jobs for the waiting 8-GPU pod (a bench that timed a refusal
would time the wrong thing)."""

from __future__ import annotations

import re

from loadtest.consolidation import bench_consolidation, bench_engine, scattered


def test_the_scattered_cluster_has_gpus_free_but_no_node_with_8() -> None:
    free, movable = scattered(200, seed=1)
    assert sum(free.values()) >= 8 and max(free.values()) < 8
    assert all(1 <= f <= 3 for f in free.values()) and movable


def test_the_planner_rows_name_the_jobs_moved_beside_the_target() -> None:
    single, gang = bench_consolidation(200, calls=1)
    assert re.search(r"median [\d.]+ ms \(\d+ job\(s\) moved, \d+ GPUs\); target < 100 ms", single)
    assert "a gang of 4 x 8 GPUs" in gang and "no plan" not in gang


def test_the_engine_row_times_a_plan_that_moves_jobs() -> None:
    [row] = bench_engine(200, calls=1)
    moved = re.search(r"\((\d+) job\(s\) moved\)", row)
    assert moved is not None and int(moved.group(1)) >= 1, row
