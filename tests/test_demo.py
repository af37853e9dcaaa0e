"""`make demo` runs `gangplank demo`: gangplank under gunicorn, a simulated cluster behind a fake
API server, a generated workload driven over HTTP as kube-scheduler would; `--curl` keeps the
walk-through of one call per verb."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.serving import free_port


def test_the_live_demo_runs_jobs_through_gangplank_over_http_and_writes_its_report(
    tmp_path: Path,
) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "extender",
            "demo",
            "--once",
            "--port",
            str(free_port()),
            "--jobs",
            "12",
            "--seconds",
            "6",
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "every member bound" in out and "(gang of 2 x" in out, "gangs start whole"
    assert "jobs started" in out and "GPU-hours held by incomplete gangs            0" in out
    assert "-> queue team-a:" in out, "GET /queues answers after the run"
    runs = json.loads((tmp_path / "report.json").read_text())["runs"]
    assert runs[0]["started"] == 12
    assert runs[0]["extender_calls"]["bind"] >= 12
    assert "data:image/png;base64," in (tmp_path / "report.html").read_text()


def test_the_curl_demo_serves_and_answers_every_printed_call() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "extender", "demo", "--curl", "--once", "--port", str(free_port())],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    for verb in ("filter", "prioritize", "preempt", "bind"):
        assert f"/scheduler/{verb} -H 'Content-Type: application/json' -d @" in out
    assert out.count("-> HTTP 200") == 9
    assert "gpu-new-9 is not in gangplank's cache yet" in out
    assert '"NodeNames": ["gpu-b1"]' in out, "the gang member passes its planned node only"
    assert '{"Host": "gpu-b1", "Score": 10}' in out
    assert "gang team-a/sweep: 2 of 4 pods exist" in out
    assert "queue team-a: nvidia.com/gpu 24 of max 24 in use, pod team-a/llm-eval needs 4" in out
    assert "-> queue team-a: 24 GPUs in use (guarantee 16, max 24)" in out


def test_the_cli_names_its_commands() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "extender", "--help"], capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 0
    for command in ("serve", "demo", "probe"):
        assert command in result.stdout
