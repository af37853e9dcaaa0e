"""The HTTP load-test suite drives the real server and a bare pass-through side by side and
writes its figures into docs/benchmarks.md between its markers."""

from __future__ import annotations

import argparse
from pathlib import Path

from loadtest.http_suite import run_size, write


def test_the_suite_measures_gangplank_and_the_bare_server_side_by_side(tmp_path: Path) -> None:
    rows = run_size(40, None, 0.5, 2, tmp_path)
    text = "\n".join(rows)
    for label in ("gangplank NodeNames", "gangplank Nodes", "bare NodeNames"):
        assert f"| 40 | {label} | filter |" in text
        assert f"| 40 | {label} | prioritize |" in text
    assert "gangplank / bare, CPU per pair (NodeNames)" in text
    assert "gangplank worker RSS before / after" in text


def test_its_figures_replace_only_their_own_section(tmp_path: Path) -> None:
    page = tmp_path / "benchmarks.md"
    page.write_text(
        "# Benchmarks\n\nintro\n<!-- http-suite:begin -->\nold\n"
        "<!-- http-suite:end -->\n\n## Simulation\nkept\n"
    )
    args = argparse.Namespace(connections=4, seconds=15.0)
    write(page, ["| a | b |"], args, traces=False)
    text = page.read_text()
    assert "old" not in text and "| a | b |" in text
    assert text.startswith("# Benchmarks\n\nintro\n") and text.endswith("## Simulation\nkept\n")
