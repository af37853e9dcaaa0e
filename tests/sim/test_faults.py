"""Jobs that waste what they hold, in `gangplank simulate`: a seeded share of the workload never
becomes ready, crash-loops, loses a node or idles; the driver plays each fault out as the
kubelet and the job would show it, carries out what gangplank's lifecycle rules evict, and the
report counts the GPU-hours each kind of waste held and those the rules freed."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from extender.cli.main import main
from extender.core.engine import Engine
from extender.core.model.gpu_use import GpuUse
from extender.core.queues.policy import Policy
from extender.core.queues.policy_parse import parse_policy
from extender.policy.file import load_policy
from extender.sim.baseline import Baseline
from extender.sim.calls import Tick
from extender.sim.cluster import synthetic
from extender.sim.driver import Driver, Options
from extender.sim.inprocess import InProcess
from extender.sim.report.figures import figures
from extender.sim.report.tables import summary
from extender.sim.runs import SimPod
from extender.sim.simulate import without_lifecycle
from extender.sim.simulate_args import Variant, parse_variant
from extender.sim.workload import JobSpec, Mix, generate
from extender.sim.workload_faults import CONTROLLER, Faults, with_faults
from tests.builders import policy_doc, queue

ROOT = Path(__file__).resolve().parents[2]
LIFECYCLE_POLICY = ROOT / "policies/lifecycle.yaml"
GOLDEN = ROOT / "tests/data/sim/no-faults-8x8-80-jobs.json"
HOUR = 3600.0


def job(
    name: str,
    at: float = 0.0,
    *,
    members: int = 1,
    gpus: int = 1,
    hours: float = 1.0,
    queue: str = "",
    fault: str = "",
    fault_at: float = 0.0,
    symptom: str = "",
    faulty_runs: int = 1,
) -> JobSpec:
    return JobSpec(
        name,
        queue,
        members,
        gpus,
        1000,
        1024,
        hours * HOUR,
        at,
        namespace=queue or "default",
        fault=fault,
        fault_at=fault_at,
        symptom=symptom,
        faulty_runs=faulty_runs if fault else 0,
        controller=CONTROLLER,
    )


def played(jobs: list[JobSpec], extender: Any = None, nodes: int = 2, **options: Any) -> Driver:
    """The jobs played out on `nodes` nodes of 8 GPUs, until the last ends (or `until`)."""
    options.setdefault("stall_seconds", 100 * HOUR)  # a job running long is not a stall here
    driver = Driver(synthetic(nodes, 8), jobs, extender or Baseline(), Options(**options))
    driver.run()
    return driver


def pods_in_store(extender: InProcess) -> dict[str, Any]:
    """The pods gangplank's cache holds on nodes and in gangs (failed ones too), by name."""
    snapshot = extender.store.snapshot()
    found = {p.name: p for node in snapshot.nodes.values() for p in node.pods}
    found.update({p.name: p for pods in snapshot.groups.values() for p in pods})
    return found


# ---- the share of jobs with each fault ---------------------------------------------------------
SHARES = Faults(never_ready=0.05, crash=0.02, node_loss=0.1, idle=0.05, seed=3)


def generated(jobs: int = 4000) -> list[JobSpec]:
    return generate(Mix(jobs=jobs, hours=24, seed=3), [8] * 64)


def test_fault_shares_are_seeded_and_each_job_draws_its_own() -> None:
    jobs = generated()
    faulty = with_faults(jobs, SHARES)
    assert faulty == with_faults(jobs, SHARES)
    assert faulty != with_faults(jobs, dataclasses.replace(SHARES, seed=4))
    # a job's fault is its own draw: the same whatever other jobs the workload has
    assert with_faults(jobs[1000:1100], SHARES) == faulty[1000:1100]
    counts = Counter(j.fault for j in faulty)
    gangs = sum(j.members > 1 for j in jobs)
    assert counts == {"": 3374, "never-ready": 198, "crash": 86, "idle": 215, "node-loss": 127}
    assert gangs == 1211  # node-loss is a share of gangs: 10.5% of them
    assert all(j.members > 1 for j in faulty if j.fault == "node-loss")
    # the jobs themselves are unchanged but for the fault and their pods' controller
    assert [dataclasses.replace(j, fault="", fault_at=0.0, symptom="", faulty_runs=0,
                                controller="") for j in faulty] == jobs  # fmt: skip


def test_a_stuck_job_is_fixed_on_each_new_attempt_with_the_chance_given() -> None:
    faulty = with_faults(generated(), dataclasses.replace(SHARES, never_ready=0.5))
    runs = Counter(j.faulty_runs for j in faulty if j.fault == "never-ready")
    # fixed on the first retry half the time, on the second a quarter of the time, ...
    assert sorted(runs.items()) == [
        (1, 1024), (2, 534), (3, 252), (4, 142), (5, 64), (6, 23), (7, 13), (8, 8), (9, 4),
        (10, 3), (12, 1), (13, 1), (19, 1),
    ]  # fmt: skip
    always = with_faults(generated(), Faults(never_ready=0.5, fixed_on_retry=1.0, seed=3))
    assert {j.faulty_runs for j in always if j.fault} == {1}
    symptoms = Counter(j.symptom for j in faulty if j.fault == "never-ready")
    assert symptoms == {"ImagePullBackOff": 1025, "": 1045}  # the others: Running, not Ready


def test_without_faults_the_workload_is_as_it_was_and_shares_above_one_are_refused() -> None:
    jobs = generated(100)
    assert with_faults(jobs, Faults(seed=3)) == jobs  # no controller either: the same pods
    with pytest.raises(ValueError, match="more than 1"):
        Faults(never_ready=0.6, idle=0.5)


def golden_run(out: Path) -> dict[str, Any]:
    """A run without faults (its figures less the wall time, and its summary), as `GOLDEN` has
    it; from the repository's root (the policy is named as there)."""
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        code = main(
            [
                "simulate", "--cluster", "synthetic:8x8", "--jobs", "80", "--hours", "4",
                "--policy", "policies/example.yaml", "--seeds", "1", "--workers", "1",
                "--no-html", "--quiet", "--out", str(out),
            ]
        )  # fmt: skip
    assert code == 0
    report = json.loads((out / "report.json").read_text())
    for run in report["runs"]:
        run.pop("wall_seconds")
    lines = text.getvalue().splitlines()
    shown = "\n".join(line for line in lines if not line.startswith(("wall time", "wrote ")))
    return {"report": report, "summary": shown}


def test_a_run_without_faults_gives_exactly_what_it_gave_before_faults_were_modelled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Written by the simulator before it modelled faults. When the engine's decisions change on
    purpose (only then), write it again: `PYTHONPATH=. python -m tests.sim.test_faults`."""
    monkeypatch.chdir(ROOT)
    assert golden_run(tmp_path) == json.loads(GOLDEN.read_text())


# ---- each fault, played out ---------------------------------------------------------------------
def test_a_job_that_never_gets_ready_holds_its_gpus_until_its_owner_gives_up() -> None:
    stuck = job("stuck", members=2, gpus=4, fault="never-ready", symptom="ImagePullBackOff")
    extender = InProcess(None)
    driver = played([stuck], extender, until=600.0)
    pods = pods_in_store(extender)
    assert (pods["stuck-0"].phase, pods["stuck-0"].ready, pods["stuck-0"].waiting_reason) == (
        "Running",
        True,
        "",
    )
    assert (pods["stuck-1"].phase, pods["stuck-1"].ready, pods["stuck-1"].waiting_reason) == (
        "Pending",
        False,
        "ImagePullBackOff",
    )
    driver = played([stuck], stuck_factor=2.0)
    record = driver.records[0]
    assert (record.started, record.ended, record.outcome) == (0.0, 2 * HOUR, "gave up")
    assert driver.waste_seconds == {"not-ready": 8 * 2 * HOUR}
    result = figures(driver, "t")
    assert result["gpu_hours_not_ready"] == 16.0 and result["jobs_completed"] == 0
    assert result["jobs_by_end"] == {"gave up": 1}


def test_a_crash_looping_pod_restarts_on_the_kubelet_s_back_off() -> None:
    crash = job("crash", gpus=4, hours=1000 / HOUR, fault="crash", fault_at=0.5)
    extender = InProcess(None)
    # crashes at 500 s, restarts after 10 s of running and 10, 20, 40, 80 s of back-off
    played([crash], extender, until=689.0)
    assert pods_in_store(extender)["crash"].restarts == 4
    played([crash], extender := InProcess(None), until=690.0)
    pod = pods_in_store(extender)["crash"]
    assert (pod.restarts, pod.ready, pod.waiting_reason) == (5, False, "CrashLoopBackOff")
    driver = played([crash])  # its owner deletes it 3 x its duration after it got stuck
    assert (driver.records[0].ended, driver.records[0].outcome) == (3500.0, "gave up")
    assert driver.waste_seconds == {"not-ready": 4 * 3000.0}


def test_a_gang_that_loses_a_node_hangs_on_the_members_left_until_its_duration_ends() -> None:
    gang = job("g", members=2, gpus=8, hours=1000 / HOUR, fault="node-loss", fault_at=0.5)
    extender = InProcess(None)
    played([gang], extender, until=600.0)
    assert {n: p.phase for n, p in pods_in_store(extender).items()} == {
        "g-0": "Running",
        "g-1": "Failed",
    }
    driver = played([gang])
    record = driver.records[0]
    assert (record.started, record.ended, record.outcome) == (0.0, 1000.0, "hung")
    assert driver.waste_seconds == {"broken": 8 * 500.0}  # the member left, from 500 s
    assert [s.allocated for s in driver.samples] == [0, 16, 8, 8]  # at 0 (before), 300, 600, 900 s


def test_an_idle_job_shows_its_gpus_near_zero_once_its_busy_start_is_out_of_the_window() -> None:
    idle = job("nb", hours=2, queue="q", fault="idle", fault_at=0.1)  # idle from 720 s
    busy = job("busy", hours=2, queue="q")
    policy = idle_policy("10m")
    extender = InProcess(policy)
    played([idle, busy], extender, until=1319.0)
    assert extender.gpu_use(1319.0) == GpuUse({("q", "nb"): 90.0, ("q", "busy"): 90.0}, window=600)
    assert extender.gpu_use(1320.0) == GpuUse({("q", "nb"): 1.0, ("q", "busy"): 90.0}, window=600)
    driver = played([idle, busy])
    assert driver.waste_seconds == {"idle": 2 * HOUR - 720.0}
    assert [r.outcome for r in driver.records] == ["completed", "completed"]


def idle_policy(window: str, action: str = "report") -> Policy:
    doc = policy_doc(queue("q"))
    return parse_policy({**doc, "lifecycle": {"idleGpu": {"for": window, "action": action}}})


def test_pods_without_data_for_the_whole_window_are_left_out_of_the_gpu_use() -> None:
    jobs = [
        job("young", at=300.0, queue="q"),  # running 500 s of the 600 s window
        job("stuck", queue="q", fault="never-ready"),  # its container never ran
        job("crash", queue="q", fault="crash", fault_at=0.0),  # restarting: gaps
    ]
    extender = InProcess(idle_policy("10m"))
    played(jobs, extender, until=800.0)
    assert extender.gpu_use(800.0) == GpuUse({}, window=600)
    assert InProcess(parse_policy(policy_doc(queue("q")))).gpu_use(0.0) is None  # no idle rule


def test_the_engine_is_given_the_gpu_use_when_it_takes_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    given: list[GpuUse | None] = []
    kick = Engine.kick_candidates

    def taking_use(
        self: Engine, snapshot: Any, now: float, stale: str = "", use: GpuUse | None = None
    ) -> Any:
        given.append(use)
        return kick(self, snapshot, now, stale)

    monkeypatch.setattr(Engine, "kick_candidates", taking_use)
    played(
        [job("nb", hours=1, queue="q", fault="idle", fault_at=0.0)], InProcess(idle_policy("10m"))
    )
    assert given[0] is None  # no pod bound yet: nothing to read
    read = [use for use in given if use is not None and use.busiest]
    assert read[0] == GpuUse({("q", "nb"): 1.0}, window=600)  # idle from the start


# ---- what the driver does with lifecycle evictions ----------------------------------------------
class Evicting(Baseline):
    """kube-scheduler alone, and a stand-in for gangplank's lifecycle rules: evicts every pod of
    job `name` by `rule` at the first pass from `at` on, once."""

    watches_running = True  # asked every pass, as gangplank with lifecycle rules is

    def __init__(self, name: str, rule: str, at: float) -> None:
        super().__init__()
        self.target, self.rule, self.at = name, rule, at
        self.pods: dict[str, SimPod] = {}
        self.done = False

    def created(self, pods: Any, now: float) -> None:
        self.pods.update({p.uid: p for p in pods})

    def tick(self, now: float) -> Tick:
        if self.done or now < self.at:
            return Tick()
        self.done = True
        uids = [u for u, p in self.pods.items() if p.info.labels["job-name"] == self.target]
        uids = [u for u in uids if self.where.get(u)]
        return Tick(evicted=uids, rules=dict.fromkeys(uids, self.rule))


def test_a_job_evicted_for_not_being_ready_is_recreated_as_the_same_job() -> None:
    stuck = job("stuck", members=2, gpus=4, fault="never-ready")
    extender = Evicting("stuck", "not-ready", at=600.0)
    driver = played([stuck], extender)
    first, again = sorted(extender.pods.values(), key=lambda p: p.uid)[::2]
    assert (first.info.name, again.info.name) == ("stuck-0", "stuck-0")
    assert first.uid != again.uid and first.info.owner == again.info.owner
    assert first.info.labels == again.info.labels
    record = driver.records[0]
    assert (record.requeued, record.runs, record.outcome) == (1, 2, "completed")
    assert record.ended == 600.0 + HOUR  # fixed on its second attempt
    assert driver.waste_seconds == {"not-ready": 8 * 600.0}
    assert driver.lifecycle_evictions == {"not-ready": 1}
    # it would have held them until 3 h; the run ends at 4,200 s, and so does what is counted
    assert driver.freed_seconds() == {"not-ready": 8 * (4200.0 - 600.0)}
    result = figures(driver, "t")
    assert (result["jobs_requeued"], result["lifecycle_evictions_by_rule"]) == (1, {"not-ready": 1})
    assert result["gpu_hours_freed_by_rule"] == {"not-ready": 8.0}


def test_a_job_evicted_for_idling_ends_and_what_it_would_have_held_is_freed() -> None:
    idle = job("nb", gpus=2, hours=2, fault="idle", fault_at=0.1)
    driver = played([idle, job("long", hours=3)], Evicting("nb", "idle", at=HOUR))
    record = driver.records[0]
    assert (record.ended, record.outcome, record.runs) == (HOUR, "evicted: idle", 1)
    assert driver.waste_seconds == {"idle": 2 * (HOUR - 720.0)}
    assert driver.freed_seconds() == {"idle": 2 * HOUR}
    assert figures(driver, "t")["jobs_by_end"] == {"completed": 1, "evicted: idle": 1}


def test_evictions_of_other_rules_go_the_way_preemption_s_do() -> None:
    driver = played([job("a", hours=2)], Evicting("a", "reclaim", at=HOUR))
    record = driver.records[0]
    assert (record.preempted, record.requeued, driver.evictions_by_extender) == (1, 0, 1)
    assert driver.lifecycle_evictions == {}


# ---- the command -------------------------------------------------------------------------------
def test_a_variant_may_leave_the_policy_s_lifecycle_rules_out() -> None:
    policy = load_policy(LIFECYCLE_POLICY)
    assert policy.lifecycle_of("notebooks") is not None
    off = without_lifecycle(policy)
    assert all(off.lifecycle_of(q) is None for q in (None, *off.queues))
    assert off.source == f"{LIFECYCLE_POLICY} (lifecycle: off)"
    assert list(off.queues) == list(policy.queues)
    base = parse_variant("label=x", parse_variant("", _base()))
    assert parse_variant("lifecycle=off,label=without", base).lifecycle is False
    with pytest.raises(ValueError, match=r"lifecycle=on\|off"):
        parse_variant("lifecycle=maybe", base)


def _base() -> Any:
    return Variant("gangplank", "synthetic:2x8", str(LIFECYCLE_POLICY))


def simulate(tmp_path: Path, *args: str) -> tuple[int, str, dict[str, Any]]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(
            [
                "simulate", "--cluster", "synthetic:8x8", "--jobs", "40", "--hours", "8",
                "--policy", str(LIFECYCLE_POLICY), "--seeds", "1", "--workers", "1",
                "--no-html", "--quiet", "--out", str(tmp_path), *args,
            ]
        )  # fmt: skip
    path = tmp_path / "report.json"
    return code, out.getvalue(), json.loads(path.read_text()) if path.exists() else {}


FAULT_FLAGS = ("--never-ready", "0.1", "--crash", "0.05", "--node-loss", "0.1", "--idle", "0.1")


def test_the_report_says_what_each_kind_of_waste_held_in_every_variant(tmp_path: Path) -> None:
    code, out, report = simulate(
        tmp_path, *FAULT_FLAGS, "--compare", "label=without,lifecycle=off", "label=with"
    )
    assert code == 0
    assert out.splitlines()[0] == (
        "40 jobs, 9.43 simulated hours; with faults: 2 never-ready, 3 crash, 1 node-loss "
        "gangs, 5 idle"
    )
    assert "without: synthetic:8x8: 8 nodes, 64 GPUs; gangplank with " in out
    assert "lifecycle.yaml (lifecycle: off), seed 1" in out
    without, _, alone = report["runs"]
    # the workload is the same in every variant; without rules, gangplank and kube-scheduler
    # alone leave each fault to play out
    assert (
        without["faults"]
        == alone["faults"]
        == {
            "never-ready": 2,
            "crash": 3,
            "node-loss": 1,
            "idle": 5,
        }
    )
    figures_ = {k: without[k] for k in ("gpu_hours_not_ready", "gpu_hours_broken_gangs",
                                        "gpu_hours_idle", "gpu_hours_wasted", "gpu_hours_freed",
                                        "lifecycle_evictions", "jobs_completed")}  # fmt: skip
    assert figures_ == {
        "gpu_hours_not_ready": 24.7,
        "gpu_hours_broken_gangs": 7.8,
        "gpu_hours_idle": 45.4,
        "gpu_hours_wasted": 77.9,
        "gpu_hours_freed": 0.0,
        "lifecycle_evictions": 0,
        "jobs_completed": 21,
    }
    assert without["jobs_by_end"] == {"completed": 21, "gave up": 3, "hung": 1, "not ended": 15}
    rows = [
        "GPU-hours held by jobs not ready",
        "GPU-hours held by broken gangs",
        "GPU-hours held by idle jobs",
        "GPU-hours freed by lifecycle evictions",
    ]
    assert all(row in out for row in rows)
    assert all(row in summary([without]) for row in rows)
    assert "without: evicted by lifecycle rules" not in out  # none evicted, no line


def test_fault_shares_that_add_up_to_more_than_one_are_refused(tmp_path: Path) -> None:
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code, _, _ = simulate(tmp_path, "--never-ready", "0.7", "--idle", "0.7")
    assert code == 2
    assert "--never-ready, --crash, --node-loss and --idle add up to more than 1" in err.getvalue()
    with contextlib.redirect_stderr(err):
        code, _, _ = simulate(tmp_path, "--policy", "", "--compare", "lifecycle=off", "label=b")
    assert code == 2


# ---- with gangplank's lifecycle rules -----------------------------------------------------------
def wasteful() -> list[JobSpec]:
    """One job of each kind of waste on 64 GPUs, room for all: a gang that never gets ready
    (fixed on its second attempt), a gang that loses a node half an hour in, a notebook idle
    after 18 minutes, and a healthy job."""
    return [
        job("stuck", members=2, gpus=8, hours=2, queue="training", fault="never-ready"),
        job("lost", members=2, gpus=8, hours=2, queue="training", fault="node-loss", fault_at=0.25),
        job("nb", hours=3, queue="notebooks", fault="idle", fault_at=0.1),
        job("ok", gpus=8, hours=1, queue="training"),
    ]


def wasted(driver: Driver) -> dict[str, float]:
    return {k: round(v / HOUR, 2) for k, v in sorted(driver.waste_seconds.items())}


def test_without_lifecycle_rules_each_fault_holds_its_gpus_to_its_end() -> None:
    policy = without_lifecycle(load_policy(LIFECYCLE_POLICY))
    driver = played(wasteful(), InProcess(policy), nodes=8)
    # never ready: 16 GPUs for 3 x 2 h; the gang left hanging: 8 GPUs from 30 min to 2 h; the
    # idle notebook: 1 GPU from 18 min to 3 h
    assert wasted(driver) == {"broken": 12.0, "idle": 2.7, "not-ready": 96.0}
    assert [r.outcome for r in driver.records] == ["gave up", "hung", "completed", "completed"]
    assert driver.lifecycle_evictions == {}


def test_with_lifecycle_rules_the_waste_is_evicted_and_the_jobs_sent_back_run_whole() -> None:
    driver = played(wasteful(), InProcess(load_policy(LIFECYCLE_POLICY)), nodes=8)
    # the gang not ready after readyTimeout (10 min, at the next review) goes, and is back after
    # the backoff (1 min), fixed; the broken gang goes after staleGangGrace (5 min) and comes
    # back whole; the notebook idle for an hour (its queue's idleGpu) is evicted and ends
    assert driver.lifecycle_evictions == {"not-ready": 1, "stale-gang": 1, "idle": 1}
    assert [(r.outcome, r.ended) for r in driver.records] == [
        ("completed", 670.0 + 2 * HOUR),
        ("completed", 2100.0 + 2 * HOUR),
        ("evicted: idle", 1080.0 + HOUR),
        ("completed", HOUR),
    ]
    assert wasted(driver) == {"broken": 0.67, "idle": 1.0, "not-ready": 2.71}
    # what they would have held, up to the end of the run (9,300 s)
    assert {k: round(v / HOUR, 2) for k, v in driver.freed_seconds().items()} == {
        "not-ready": 38.62,
        "stale-gang": 11.33,
        "idle": 1.28,
    }


def test_with_lifecycle_rules_a_crash_looping_job_goes_as_not_ready_past_its_restart_limit() -> (
    None
):
    crash = job("crash", gpus=4, hours=2, queue="training", fault="crash", fault_at=0.25)
    driver = played([crash], InProcess(load_policy(LIFECYCLE_POLICY)), nodes=1)
    # it crashes at 30 min; its 6th restart (restartLimit 5) comes 6 minutes later, at 2,160 s:
    # evicted then as not ready, back after the backoff (1 min), fixed
    assert driver.lifecycle_evictions == {"not-ready": 1}
    assert (driver.records[0].outcome, driver.records[0].ended) == ("completed", 2220.0 + 2 * HOUR)
    assert wasted(driver) == {"not-ready": 0.4}


if __name__ == "__main__":  # writes GOLDEN again (see the test that reads it)
    import os
    import tempfile

    os.chdir(ROOT)
    with tempfile.TemporaryDirectory() as scratch:
        GOLDEN.write_text(json.dumps(golden_run(Path(scratch)), indent=1, sort_keys=True))
