"""`gangplank simulate` as a new user runs it from the README: the console script in a
subprocess, small workloads of a few seconds each. Each test is a defect a user met: a
traceback after a plain install, a report stopping on the lifecycle figures, a comparison of
two policies on queues neither has, reasons cut mid-word."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tests.sim.console import ROOT, gangplank

EXAMPLE = ROOT / "policies/example.yaml"
LIFECYCLE = ROOT / "policies/lifecycle.yaml"
SMALL = ("--cluster", "synthetic:8x8", "--jobs", "40", "--hours", "4", "--workers", "1")


def report(out: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((out / "report.json").read_text())
    return data


def row(text: str, name: str) -> list[str]:
    """The cells of the summary's row `name` (cells are two or more spaces apart)."""
    found = [line for line in text.splitlines() if line.startswith(name + "  ")]
    assert found, f"no row {name!r} in:\n{text}"
    return re.split(r"\s{2,}", found[0].strip())[1:]


# ---- a policy with lifecycle rules ------------------------------------------------------------
def test_a_policy_with_lifecycle_rules_reports_its_waste_and_dashes_where_none_was_modelled(
    tmp_path: Path,
) -> None:
    done = gangplank(
        "simulate", *SMALL, "--policy", str(LIFECYCLE), "--seeds", "1", "--no-html",
        "--quiet", "--out", "out", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    gangplank_run, alone = report(tmp_path / "out")["runs"]
    assert row(done.stdout, "jobs that ran their work to the end") == [
        str(gangplank_run["jobs_completed"]),
        "—",
    ]
    assert row(done.stdout, "GPU-hours held by jobs not ready") == ["0", "—"]
    assert "—: not modelled in kube-scheduler alone" in done.stdout
    assert "jobs_completed" not in alone


def test_a_what_if_of_lifecycle_rules_draws_no_verdict_from_figures_not_modelled(
    tmp_path: Path,
) -> None:
    done = gangplank(
        "simulate", *SMALL, "--policy", str(LIFECYCLE), "--seeds", "2", "--no-html",
        "--quiet", "--out", "out", "--compare", "label=without,lifecycle=off", "label=with",
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    differences = report(tmp_path / "out")["differences"]
    assert not [
        d
        for d in differences
        if d["variant"] == "kube-scheduler alone" and d["figure"].startswith("gpu_hours_")
    ]


# ---- reasons ------------------------------------------------------------------------------------
def test_a_long_reason_is_cut_at_a_word_with_an_ellipsis(tmp_path: Path) -> None:
    done = gangplank(
        "simulate", "--cluster", "synthetic:8x8", "--jobs", "80", "--hours", "4",
        "--policy", str(EXAMPLE), "--seeds", "1", "--workers", "1", "--no-html", "--quiet",
        "--no-baseline", "--out", "out", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    reasons = [r for r, _ in report(tmp_path / "out")["runs"][0]["never_started_reasons"]]
    assert any(len(r) > 200 for r in reasons), "the workload has a long reason"
    shown = [
        line.split(" not started by the end: ", 1)[1]
        for line in done.stdout.splitlines()
        if " not started by the end: " in line
    ]
    assert len(shown) == len(reasons)
    for reason, line in zip(reasons, shown, strict=True):
        if len(reason) <= 200:
            assert line == reason
        else:
            assert len(line) <= 200 and line.endswith(" …"), line
            kept = line.removesuffix(" …")
            assert reason.startswith(kept) and reason[len(kept)] == " ", "cut between words"
