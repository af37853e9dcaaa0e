"""`make soak`'s harness works end to end, here for half a minute instead of thirty: a live
gangplank under gunicorn with gangs, queues and churn from the stand-in scheduler and
pass-through pairs beside them; no call answered other than 200, and the figures land in the
document's soak section."""

from __future__ import annotations

from pathlib import Path

import pytest

from loadtest.soak import BEGIN, END, run, write

pytestmark = pytest.mark.slow  # run by `make test-slow` (and CI), not `make test`


def test_half_a_minute_of_soak_answers_every_call_and_writes_its_figures(tmp_path: Path) -> None:
    result = run(minutes=0.5, rate=20, node_count=8, logs=tmp_path)
    assert result["windows"], "one 30-second window measured"
    window = result["windows"][0]
    assert window["probe_worst_ms"] > 0
    assert window["gc_share"] > 0, "the worker collects garbage; its pauses are measured"
    assert (tmp_path / "server.log").exists()
    assert result["workload_error"] == "" and result["pair_errors"] == 0
    assert {code for code, count in result["codes"].items() if count} == {"200"}
    assert result["codes"]["200"] > 600, "the pass-through pairs and the workload's calls"
    assert result["jobs_started"] > 0
    doc = tmp_path / "reliability.md"
    doc.write_text(f"# x\n\n{BEGIN}\nold\n{END}\n\nafter\n")
    write(result, doc, tmp_path / "soak.png")
    text = doc.read_text()
    assert "| answered other than 200 (4xx, 5xx) | 0 |" in text and "\nold\n" not in text
    assert "| garbage collections of 100 ms or more (times) / longest |" in text
    assert text.endswith("\n\nafter\n") and (tmp_path / "soak.png").stat().st_size > 10_000
