"""`gangplank simulate` over days: arrivals over several days, a queue's beginning later than the
others', totals by period, and the report's share of GPU-time by period against fair share and
elastic jobs' workers by period; with and without the policy's usage history (`fairness:`)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from extender.core.model.resources import GPU
from extender.policy.file import load_policy
from extender.sim.cluster import synthetic
from extender.sim.driver import Driver, Options
from extender.sim.inprocess import InProcess
from extender.sim.periods import PeriodTotals
from extender.sim.report.over_time_tables import elastic_table, period_name, share_table
from extender.sim.workload import EPOCH, JobSpec, Mix, Shape, generate
from tests.sim.console import gangplank

HOUR = 3600.0
DAY = 24 * HOUR
ROOT = Path(__file__).resolve().parents[2]
POLICY = ROOT / "policies/fair-over-days.yaml"
QUEUES = {"team-a": 1.0, "team-b": 1.0, "team-c": 1.0}


# ---- arrivals over days ------------------------------------------------------------------------
def test_a_queue_that_begins_later_has_no_arrivals_before_and_the_others_take_them_all() -> None:
    mix = Mix(jobs=3000, hours=96, seed=2, queues=QUEUES, starts={"team-b": DAY, "team-c": DAY})
    jobs = generate(mix, [8] * 16)
    first = [j for j in jobs if j.arrival < DAY]
    assert first and {j.queue for j in first} == {"team-a"}
    later = [j.queue for j in jobs if j.arrival >= DAY]
    assert {q: later.count(q) / len(later) for q in QUEUES} == pytest.approx(
        dict.fromkeys(QUEUES, 1 / 3), abs=0.04
    )
    assert max(j.arrival for j in jobs) > 3.9 * DAY  # over the whole span


def test_without_starts_the_arrivals_are_the_same_job_for_job() -> None:
    mix = Mix(jobs=500, hours=48, seed=2, queues=QUEUES)
    assert generate(mix, [8] * 16) == generate(
        Mix(jobs=500, hours=48, seed=2, queues=QUEUES, starts={"team-a": 0.0}), [8] * 16
    )


def test_shapes_name_the_jobs_generated() -> None:
    mix = Mix(jobs=400, seed=2, shapes=(Shape(1, 4, 3), Shape(4, 4, 1)))
    shapes = {(j.members, j.gpus) for j in generate(mix, [8] * 16)}
    assert shapes == {(1, 4), (4, 4)}


# ---- the usage history in simulated time --------------------------------------------------------
def test_the_engine_samples_the_usage_history_in_simulated_time_while_nothing_waits() -> None:
    """team-a holds 16 GPUs for a simulated day (a second of wall time), nothing waiting: the
    history has what it used, decayed at a 24h half-life, sampled every pass of simulated time."""
    jobs = [
        JobSpec(f"a{i}", "team-a", 1, 8, 1000, 1024, DAY, 0.0, namespace="team-a") for i in (1, 2)
    ]
    extender = InProcess(load_policy(str(POLICY)))
    driver = Driver(
        synthetic(2, 8), jobs, extender, Options(until=DAY, stall_seconds=2 * DAY, kick_seconds=60)
    )
    driver.run()
    history = extender.engine.history
    assert history.last == pytest.approx(EPOCH + DAY, abs=60)
    # 16 GPUs over the day, each second counted half a day later at half: 16 x 1d x 0.5 / ln 2
    expected = 16 * DAY * 0.5 / math.log(2)
    assert history.decayed(EPOCH + DAY)["team-a"][GPU] == pytest.approx(expected, rel=0.01)
    assert not history.decayed(EPOCH + DAY).get("team-b")


# ---- totals by period --------------------------------------------------------------------------
def test_what_is_held_across_periods_is_split_between_them() -> None:
    totals = PeriodTotals(DAY)
    totals.add("q", 0.5 * DAY, 2.25 * DAY, 4)  # 4 GPUs from mid-day 1 to a quarter into day 3
    totals.count("started", 1.5 * DAY, 2)
    assert totals.periods(2.25 * DAY) == 3
    assert totals.row("q", 3) == [2 * DAY, 4 * DAY, DAY]
    assert totals.row("started", 3) == [0, 2, 0]
    assert totals.row("nothing", 2) == [0, 0]


@pytest.mark.parametrize(
    "index,seconds,name",
    [(0, DAY, "day 1"), (3, DAY, "day 4"), (1, 4 * HOUR, "h 4-8"), (2, 1800.0, "h 1-1.5")],
    ids=["a day is named by its number", "the fourth", "hours as a span", "half hours"],
)
def test_a_period_is_named_for_the_reader(index: int, seconds: float, name: str) -> None:
    assert period_name(index, seconds) == name


def run(label: str, shares: dict[str, list[float]], all_: dict[str, float]) -> dict[str, Any]:
    return {
        "label": label,
        "seed": 1,
        "period_s": DAY,
        "queues": {q: {"share": s, "fair_share": 0.5} for q, s in all_.items()},
        "by_period": {
            "share": shares,
            "elastic": {
                "jobs_running": [1.5, 2.0],
                "workers_of_max": [0.75, 0.5],
                "extras_started": [3, 1],
                "extras_taken": [0, 2],
            },
        },
    }


def test_the_share_table_gives_each_queue_by_period_and_over_the_run_against_its_fair_share() -> (
    None
):
    runs = [
        [run("without", {"a": [1.0, 0.6], "b": [0.0, 0.4]}, {"a": 0.8, "b": 0.2})],
        [run("with", {"a": [1.0, 0.3], "b": [0.0, 0.7]}, {"a": 0.65, "b": 0.35})],
    ]
    lines = share_table(runs, ["a", "b"]).splitlines()
    assert lines[1].split() == ["period", "queue", "fair", "without", "with"]
    assert [line.split() for line in lines[3:]] == [
        ["day", "1", "a", "50%", "100%", "100%"],
        ["b", "50%", "0%", "0%"],
        ["day", "2", "a", "50%", "60%", "30%"],
        ["b", "50%", "40%", "70%"],
        ["all", "a", "50%", "80%", "65%"],
        ["b", "50%", "20%", "35%"],
    ]
    assert share_table(runs, ["a"]) == ""  # one queue: nothing to compare


def test_the_elastic_table_gives_workers_against_their_maximum_and_extras_by_period() -> None:
    text = elastic_table([[run("with", {"a": [1.0, 1.0]}, {"a": 1.0})]])
    rows = [line.split("  ")[-1].strip() for line in text.splitlines()[3:]]
    assert rows == ["1.5", "75%", "3", "0", "2", "50%", "1", "2"]
    assert elastic_table([[{"label": "x", "queues": {}}]]) == ""


# ---- the command ---------------------------------------------------------------------------------
COMMAND = (
    "simulate",
    "--cluster",
    "synthetic:4x8",
    "--policy",
    str(POLICY),
    "--jobs",
    "80",
    "--hours",
    "72",
    "--load",
    "2",
    "--shapes",
    "1x4:2,4x4:1",
    "--queue-start",
    "team-b=1d,team-c=1d",
    "--elastic",
    "0.6",
    "--kick-seconds",
    "120",
    "--seeds",
    "1",
    "--no-baseline",
    "--workers",
    "2",
    "--quiet",
)


def test_a_run_over_days_shows_shares_by_day_with_and_without_history_and_elastic_workers(
    tmp_path: Path,
) -> None:
    done = gangplank(
        *COMMAND, "--compare", "label=none,halfLife=0", "label=24h", "--out", "out", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "policies/fair-over-days.yaml (no usage history)" in out
    table = out.split("each queue's share of the GPU-time used, by period")[1].split("\n\n")[0]
    lines = table.splitlines()
    assert lines[1].split() == ["period", "queue", "fair", "none", "24h"]
    assert lines[3].split() == ["day", "1", "team-a", "33%", "100%", "100%"]  # alone the first day
    firsts = [line.split()[0] for line in lines[3:] if not line.startswith(" ")]
    assert firsts[:3] == ["day", "day", "day"] and firsts[-1] == "all"  # a day a period
    report = json.loads((tmp_path / "out/report.json").read_text())
    none, history = report["runs"]
    for each in (none, history):
        assert each["period_s"] == DAY
        shares = each["by_period"]["share"]
        assert shares["team-a"][0] == 1.0 and shares["team-b"][0] == 0.0
        assert len(shares["team-a"]) >= 3
    for day in range(len(none["by_period"]["share"]["team-a"])):
        assert sum(history["by_period"]["share"][q][day] or 0 for q in QUEUES) == pytest.approx(
            1.0, abs=0.01
        )
    # elastic jobs' workers came and went: fewer than their maximum some of the time
    elastic = history["by_period"]["elastic"]
    assert history["elastic_jobs"] > 0 and history["extras_started"] > 0
    assert any(w is not None and w < 1.0 for w in elastic["workers_of_max"])
    assert {d["fewest"] for d in history["elastic_detail"] if d["most"]} != {
        d["max"] for d in history["elastic_detail"] if d["most"]
    }
    assert "elastic jobs' workers by period (time-weighted):" in out
    page = (tmp_path / "out/report.html").read_text()
    assert "share of the GPU-time by period (dotted: its fair share)</h2><img" in page
    assert "workers in use by period (time-weighted)</h2><img" in page


@pytest.mark.parametrize(
    "extra,said",
    [
        (("--compare", "halfLife=24h", "halfLife=0", "--policy", ""), "halfLife= needs a policy"),
        (("--queue-start", "team-z=1d"), "--queue-start: team-z is not a queue of the arrivals"),
        (("--queue-start", "team-b"), "write QUEUE=DURATION"),
        (("--compare", "halfLife=soon", "label=b"), "halfLife=DURATION"),
        (("--shapes", "4by8"), "write PODSxGPUS[:WEIGHT]"),
        (("--period", "0"), "not a duration above 0"),
    ],
    ids=[
        "a half-life without a policy to put it in",
        "a queue the arrivals do not go to",
        "a queue without its time",
        "a half-life that is no duration",
        "a shape that is not PODSxGPUS",
        "a period of nothing",
    ],
)
def test_bad_arguments_are_refused_in_one_line(
    tmp_path: Path, extra: tuple[str, ...], said: str
) -> None:
    done = gangplank(*COMMAND, *extra, cwd=tmp_path)
    assert done.returncode == 2, done.stdout
    assert said in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) <= 2  # argparse: the usage line, then the reason


@pytest.mark.slow
def test_with_a_usage_history_the_queue_that_ran_alone_the_first_day_gets_less_after_it(
    tmp_path: Path,
) -> None:
    """docs/fairness.md's run: 64 GPUs, three saturated queues of weight 1, team-a alone the
    first day; with `halfLife: 24h` team-a gets less of days 3 and 4 than without history."""
    done = gangplank(
        *FAIR_RUN, "--compare", "label=none,halfLife=0", "label=24h", "--out", "out", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    none, history = json.loads((tmp_path / "out/report.json").read_text())["runs"]
    without = none["by_period"]["share"]["team-a"]
    held = history["by_period"]["share"]["team-a"]
    assert without[0] == held[0] == 1.0
    assert max(held[2:4]) < 1 / 3 < min(without[2:4])


FAIR_RUN = (
    "simulate",
    "--cluster",
    "synthetic:8x8",
    "--policy",
    str(POLICY),
    "--jobs",
    "1000",
    "--hours",
    "72",
    "--load",
    "1.5",
    "--shapes",
    "1x4:3,4x1:1",
    "--queue-start",
    "team-b=1d,team-c=1d",
    "--elastic",
    "1",
    "--kick-seconds",
    "60",
    "--seeds",
    "1",
    "--no-baseline",
    "--no-html",
    "--workers",
    "2",
    "--quiet",
)
