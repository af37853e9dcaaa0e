"""The admissions benchmark measures admissions: jobs go from waiting to every member bound through
filter, prioritize and bind, no node holds more than it has, and no gang is left part-bound."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from loadtest.admissions import main, run, waiting_jobs


def test_the_waiting_jobs_are_spread_over_the_queues_with_gangs_among_them() -> None:
    jobs = waiting_jobs(queues=10, per_queue=10)
    assert len(jobs) == 100
    assert {len(job) for job in jobs} == {1, 2, 4}
    assert len({job[0]["metadata"]["namespace"] for job in jobs}) == 10


def test_a_small_run_admits_jobs_whole_until_the_cluster_is_full() -> None:
    result = run(nodes=40, per_queue=1, seconds=60)
    assert result["admitted"] == 40 * 8  # 1,000 one-GPU jobs waiting, 320 GPUs
    assert result["partial"] == 0 and result["over"] == 0
    assert result["depth_end"] == result["jobs"] - result["admitted"]


def test_the_row_states_the_figure_beside_kueues(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "benchmarks.md"
    assert main(["--nodes", "20", "--jobs-per-queue", "1", "--write", str(page)]) == 0
    assert re.search(r"\*\*\d+ a second\*\*", capsys.readouterr().out)
    assert "Kueue #14477" in page.read_text()
