"""`gangplank simulate` as a new user runs it from the README: the console script in a
subprocess, small workloads of a few seconds each. Each test is a defect a user met: a
traceback after a plain install, a report stopping on the lifecycle figures, a comparison of
two policies on queues neither has, reasons cut mid-word."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.sim.console import ROOT, gangplank

# Each runs `gangplank simulate` as a user does, in a subprocess (about 36 s in all): slow.
pytestmark = pytest.mark.slow

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


# ---- a plain `pip install gangplank`: no tqdm, no matplotlib -----------------------------------
def without_the_sim_extra(tmp_path: Path) -> Path:
    """A directory whose tqdm and matplotlib fail to import as a plain install's absent ones do:
    put first on PYTHONPATH, it hides the suite's own."""
    blocked = tmp_path / "plain"
    for name in ("tqdm", "matplotlib"):
        (blocked / name).mkdir(parents=True)
        (blocked / name / "__init__.py").write_text(
            f"raise ModuleNotFoundError({f'No module named {name!r}'!r}, name={name!r})\n"
        )
    return blocked


def test_without_the_sim_extra_a_run_shows_plain_progress_and_writes_a_page_without_charts(
    tmp_path: Path,
) -> None:
    done = gangplank(
        "simulate", *SMALL, "--seeds", "1", "--out", "out",
        cwd=tmp_path, path=(without_the_sim_extra(tmp_path),),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    hints = [line for line in done.stderr.splitlines() if "pip install 'gangplank[sim]'" in line]
    assert len(hints) == 2, done.stderr  # one for the progress bar, one for the charts
    assert "gangplank: done" in done.stderr and "kube-scheduler alone: done" in done.stderr
    page = (tmp_path / "out/report.html").read_text()
    assert "data:image/png" not in page
    assert "pip install &#x27;gangplank[sim]&#x27;" in page and "Every figure" in page
    assert "wrote out/report.json, out/report.html" in done.stdout


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


# ---- --compare of two policies without --policy ------------------------------------------------
def policy_file(path: Path, *queues: tuple[str, str]) -> Path:
    """A policy of leaf queues (name, state), each guaranteed 16 GPUs."""
    lines = ["apiVersion: gangplank.io/v1alpha1", "kind: Policy", "queues:"]
    for name, state in queues:
        lines += [f"  - name: {name}", "    guarantee: {nvidia.com/gpu: 16}", f"    state: {state}"]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_two_policies_compared_without_policy_get_the_arrivals_of_their_own_queues(
    tmp_path: Path,
) -> None:
    a = policy_file(tmp_path / "a.yaml", ("train", "open"), ("serve", "open"))
    b = policy_file(tmp_path / "b.yaml", ("serve", "open"), ("train", "open"))
    done = gangplank(
        "simulate", *SMALL, "--seeds", "1", "--no-html", "--quiet", "--out", "out",
        "--compare", f"policy={a},label=a", f"policy={b},label=b", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    runs = report(tmp_path / "out")["runs"]
    assert [sorted(r["queues"]) for r in runs] == [["serve", "train"]] * 3
    assert all(r["started"] > 0 for r in runs)
    assert "nothing started" not in done.stdout


def test_a_variant_of_policy_none_runs_and_says_it_runs_without_a_policy(tmp_path: Path) -> None:
    """The README's `policy=` (a file or `none`): before, the variant said (and report.json
    recorded) `gangplank with a.yaml`, the policy its fair shares are measured against."""
    a = policy_file(tmp_path / "a.yaml", ("train", "open"), ("serve", "open"))
    done = gangplank(
        "simulate", *SMALL, "--seeds", "1", "--no-html", "--quiet", "--out", "out",
        "--compare", f"policy={a},label=a", "policy=none,label=free", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "free: synthetic:8x8: 8 nodes, 64 GPUs; gangplank without a policy" in done.stdout
    assert f"a: synthetic:8x8: 8 nodes, 64 GPUs; gangplank with {a}" in done.stdout
    runs = {r["label"]: r for r in report(tmp_path / "out")["runs"]}
    assert (runs["free"]["policy"], runs["a"]["policy"]) == (None, str(a))
    assert runs["free"]["queues"]["train"]["fair_share"] == 0.5, "shares still against a.yaml"


def test_policies_compared_on_different_queues_are_refused_in_one_line(tmp_path: Path) -> None:
    a = policy_file(tmp_path / "a.yaml", ("train", "open"), ("serve", "open"))
    b = policy_file(tmp_path / "b.yaml", ("train", "open"), ("batch", "open"))
    done = gangplank(
        "simulate", *SMALL, "--quiet", "--out", "out",
        "--compare", f"policy={a}", f"policy={b}", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr == (
        f"gangplank simulate: --compare: {a} has the leaf queues serve, train and {b} has "
        "batch, train: the same arrivals cannot run on both (compare policies of the same leaf "
        "queues)\n"
    )
    assert not (tmp_path / "out").exists()


def test_a_variant_in_which_nothing_started_is_said_loudly_and_no_verdict_drawn_from_it(
    tmp_path: Path,
) -> None:
    a = policy_file(tmp_path / "a.yaml", ("train", "open"), ("serve", "open"))
    closed = policy_file(tmp_path / "closed.yaml", ("train", "closed"), ("serve", "closed"))
    done = gangplank(
        "simulate", *SMALL, "--seeds", "1", "--quiet", "--out", "out",
        "--compare", f"policy={a},label=open", f"policy={closed},label=closed", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    warning = (
        "NOTHING STARTED in closed: not one of its 40 jobs started (the commonest reason: "
        "queue train is closed"
    )
    assert warning in done.stdout
    assert done.stdout.index(warning) < done.stdout.index("closed against open"), "said first"
    assert "closed against open: no verdict: nothing started in closed" in done.stdout
    found = report(tmp_path / "out")["differences"]
    assert {d["variant"] for d in found} == {"kube-scheduler alone"}
    page = (tmp_path / "out/report.html").read_text()
    assert "NOTHING STARTED in closed" in page and "class='warning'" in page


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
