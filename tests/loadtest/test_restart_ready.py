"""Restart to ready at scale: a fresh `gangplank serve` over the fake API server is timed until
it answers a waiting gang's filter correctly, and its figures are written between their markers."""

from __future__ import annotations

from pathlib import Path

import pytest

from loadtest.restart_ready import FREE, cluster, main

pytestmark = pytest.mark.slow  # starts gangplank serve: run by `make test-slow` (and CI)


def test_the_cluster_leaves_exactly_the_free_nodes_with_every_gpu_free() -> None:
    nodes, pods, free = cluster(60, 600)
    used: dict[str, int] = {}
    for p in pods:
        gpus = int(p["spec"]["containers"][0]["resources"]["requests"].get("nvidia.com/gpu", 0))
        used[p["spec"]["nodeName"]] = used.get(p["spec"]["nodeName"], 0) + gpus
    assert len(free) == FREE and not free & used.keys()
    assert all(used.get(n["metadata"]["name"], 0) > 0 for n in nodes[FREE:])


def test_a_restarted_gangplank_is_timed_until_it_answers_correctly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "benchmarks.md"
    page.write_text("# Benchmarks\n\nkept\n")
    assert main(["--nodes", "60", "--pods", "600", "--rounds", "1", "--write", str(page)]) == 0
    out = capsys.readouterr().out
    assert "round 1: ready " in out and "answers correctly" in out
    text = page.read_text()
    assert "kept" in text and "<!-- restart-ready:begin -->" in text
    assert "restart to a correct answer, 60 nodes and 600 pods: median " in text
    assert ": meets;" in text
