"""`make demo` runs `gangplank demo`: it serves the embedded cluster and every call succeeds."""

from __future__ import annotations

import subprocess
import sys

from tests.serving import free_port


def test_the_demo_serves_and_answers_every_printed_call() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "extender", "demo", "--once", "--port", str(free_port())],
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
