"""The HTTP load-test suite drives the real server and a bare pass-through side by side and
writes its figures into docs/benchmarks.md between its markers."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from loadtest.http_suite import feasible_to_find, run_size, write

pytestmark = pytest.mark.slow  # run by `make test-slow` (and CI), not `make test`


def test_kube_scheduler_sends_an_extender_only_the_feasible_nodes_it_looked_for() -> None:
    assert [feasible_to_find(n) for n in (50, 500, 5000, 15000)] == [50, 230, 500, 750]


def test_the_suite_measures_gangplank_and_the_bare_server_side_by_side(tmp_path: Path) -> None:
    rows = run_size(40, None, 0.5, 2, tmp_path, rate=50, steady_seconds=1.0)
    text = "\n".join(rows)
    assert "| 40 | gangplank NodeNames, as sent, 50 pairs/s paced | filter |" in text
    assert "RSS every 30 s of the paced run (MiB)" in text
    assert "| 40 | in the cache: 40 nodes, 400 pods |" in text
    for label in (
        "gangplank NodeNames",
        "gangplank Nodes",
        "bare NodeNames",
        "bare NodeNames, as sent",
    ):
        assert f"| 40 | {label} | filter |" in text
        assert f"| 40 | {label} | prioritize |" in text
    assert "gangplank / bare, CPU per pair (NodeNames)" in text
    assert "gangplank / bare, CPU per pair (NodeNames, as sent)" in text
    assert "gangplank worker RSS before / after" in text


def test_its_figures_replace_only_their_own_section(tmp_path: Path) -> None:
    page = tmp_path / "benchmarks.md"
    page.write_text(
        "# Benchmarks\n\nintro\n<!-- http-suite:begin -->\nold\n"
        "<!-- http-suite:end -->\n\n## Simulation\nkept\n"
    )
    args = argparse.Namespace(
        connections=4,
        seconds=15.0,
        sizes="500",
        rate=250.0,
        steady_seconds=60.0,
        worker_class="gevent",
    )
    write(page, ["| a | b |"], args, traces=False)
    text = page.read_text()
    assert "old" not in text and "| a | b |" in text
    assert "--sizes 500 --seconds 15 --rate 250 --steady-seconds 60 --worker-class gevent" in text
    assert text.startswith("# Benchmarks\n\nintro\n") and text.endswith("## Simulation\nkept\n")
