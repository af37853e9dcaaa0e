"""Plain pods through gangplank beside the cheapest extender: every pod of a small run is bound
in each of the three ways (kube-scheduler alone, the stdlib pass-through, gangplank serve), and
the figures are written beside the issue's."""

from __future__ import annotations

from pathlib import Path

import pytest

from loadtest.passthrough import main as passthrough_main
from loadtest.plain_pods import WAYS, main, plain_pod


def test_a_plain_pod_asks_for_a_little_cpu_and_memory_from_gangplanks_scheduler() -> None:
    pod = plain_pod(7)
    assert pod["spec"]["schedulerName"] == "gangplank"
    assert pod["spec"]["containers"][0]["resources"]["requests"] == {
        "cpu": "250m",
        "memory": "512Mi",
    }
    assert "labels" not in pod["metadata"], "no queue, no gang"


def test_the_pass_through_asked_without_a_port_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        passthrough_main([])
    assert stopped.value.code == 2 and "port" in capsys.readouterr().err


@pytest.mark.slow  # starts gangplank serve and the pass-through: `make test-slow` (and CI)
def test_every_way_binds_every_pod_and_the_ratio_is_written_beside_the_issues(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "benchmarks.md"
    page.write_text("# Benchmarks\n\nkept\n")
    assert main(["--nodes", "20", "--pods", "100", "--rounds", "1", "--write", str(page)]) == 0
    out = capsys.readouterr().out
    for way in WAYS:
        assert f"- {way}: " in out and "real cluster (issue 36)" in out
    assert "gangplank / stdlib pass-through: " in out and "target: at least 1.00x" in out
    text = page.read_text()
    assert "kept" in text and "<!-- plain-pods:begin -->" in text and "0.83x" in text
