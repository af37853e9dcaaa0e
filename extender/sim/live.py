"""`make demo`: gangplank under gunicorn, a simulated cluster as its API server, and a generated
multi-team workload driven through it over HTTP in real time, as kube-scheduler would.

Prints what happens as it happens (gangs admitted whole, queues holding work back, reasons),
writes the HTML report, and keeps gangplank serving (/metrics, /queues, `gangplank status`)
until Ctrl-C, or exits at the end with --once.
"""

from __future__ import annotations

import shutil
import sys
import time
from importlib.resources import files
from pathlib import Path
from typing import Any

from extender.cli.demo import DemoServer, run_guarded, show_queues
from extender.core.model.text import shorten
from extender.core.queues.policy import Policy
from extender.policy.file import load_policy
from extender.sim.cluster import load_cluster, node_gpus
from extender.sim.driver import Driver, Options, WallClock
from extender.sim.http import HttpExtender
from extender.sim.report import figures, summary, write_html, write_json
from extender.sim.workload import Mix, Shape, generate

DATA = Path(str(files("extender") / "data"))
# Shapes that fit the demo's 32 GPUs and its queues: single pods, gangs of two and of four.
DEMO_SHAPES = (
    Shape(1, 1, 20),
    Shape(1, 2, 15),
    Shape(2, 4, 20),
    Shape(4, 1, 10),
    Shape(4, 2, 20),
    Shape(2, 8, 10),
)


class LiveView:
    """One line per thing worth seeing, stamped with the demo's clock."""

    def __init__(self, driver_now: Any, jobs: dict[str, Any]) -> None:
        self.now = driver_now
        self.jobs = jobs
        self.told: dict[str, str] = {}

    def __call__(self, kind: str, text: str) -> None:
        name = text.split(" ", 1)[0]
        spec = self.jobs.get(name)
        what = ""
        if spec is not None:
            shape = (
                f"gang of {spec.members} x {spec.gpus} GPUs"
                if spec.members > 1
                else f"{spec.gpus} GPU pod"
            )
            what = f" ({shape}, queue {spec.queue})"
        line = {
            "started": f"started    {name}{what}: every member bound",
            "finished": f"finished   {name}",
            "preempted": f"preempted  {text}",
        }.get(kind, f"{kind} {text}")
        print(f"{self.now():6.1f}s  {line}", flush=True)

    def waiting(self, reasons: dict[str, str]) -> None:
        for job, reason in reasons.items():
            if self.told.get(job) != reason and reason:
                self.told[job] = reason
                print(f"{self.now():6.1f}s  waiting    {job}: {shorten(reason, 160)}", flush=True)


def run_live_demo(port: int, once: bool, jobs: int, seconds: float, out: Path) -> int:
    return run_guarded(port, lambda server: _live_demo(server, once, jobs, seconds, out))


def _live_demo(server: DemoServer, once: bool, jobs: int, seconds: float, out: Path) -> int:
    nodes = load_cluster(str(DATA / "demo-cluster.yaml"))
    policy_path = DATA / "demo-policy.yaml"
    policy = load_policy(policy_path)
    per_node = node_gpus(nodes)
    gpus = sum(per_node)
    mix = Mix(
        jobs=jobs,
        hours=seconds / 3600,
        load=1.4,  # more than fits: queues and gangs have to wait their turn
        seed=3,
        queues={"team-a": 2, "team-b": 1, "team-c": 1},
        shapes=DEMO_SHAPES,
        sigma=0.5,
        min_duration=3.0,
    )
    workload = generate(mix, per_node)
    clock = WallClock()
    extender = HttpExtender(
        server.port,
        policy_path,
        log_level="error",
        server=server,
        epoch=time.time() - clock.now(),  # pods are stamped from the real clock, as gangplank's
    )
    view = LiveView(clock.now, {j.name: j for j in workload})
    print(
        f"gangplank demo: {len(nodes)} nodes ({gpus} GPUs) served by a fake API server on "
        f"loopback; gangplank under gunicorn on {extender.base} (queues from {policy_path}).\n"
        f"{len(workload)} jobs of teams a, b and c arrive over {seconds:.0f} s and run a few "
        "seconds each; a kube-scheduler stand-in drives each pod through filter, prioritize "
        "and bind over HTTP.\n",
        flush=True,
    )

    def progress(t: float) -> None:
        view.waiting(driver.reasons)

    driver = Driver(
        nodes,
        workload,
        extender,
        Options(kick_seconds=0.5, sample_seconds=1.0, stall_seconds=10.0),
        clock=clock,
        progress=progress,
        on_event=view,
    )
    original_stop = extender.stop  # the server, the fake API server, the temp folder
    extender.stop = lambda: None  # type: ignore[method-assign]  # kept serving after the run
    try:
        return _run_and_report(driver, extender, server, policy, once, out)
    finally:
        original_stop()


def _run_and_report(
    driver: Driver,
    extender: HttpExtender,
    server: DemoServer,
    policy: Policy,
    once: bool,
    out: Path,
) -> int:
    try:
        driver.run()
    except (RuntimeError, OSError) as err:
        print(f"gangplank demo: {err}", file=sys.stderr)
        return 1
    if not server.alive():  # it died during the run: the figures are not gangplank's
        print(f"gangplank demo: gangplank on {extender.base} exited; no report", file=sys.stderr)
        return 1
    runs = [figures(driver, "gangplank", policy)]
    print("\n" + summary(runs))
    try:
        out.mkdir(parents=True, exist_ok=True)
        write_json(runs, out / "report.json")
    except OSError as err:
        print(
            f"gangplank demo: cannot write the report in {out}: {err.strerror or err}",
            file=sys.stderr,
        )
        return 1
    try:
        write_html(runs, out / "report.html", "gangplank demo", [])
        print(
            f"\nreport: {out / 'report.html'} (open it in a browser), figures in "
            f"{out / 'report.json'}"
        )
    except ImportError:
        print("no HTML report: matplotlib is missing (pip install 'gangplank[sim]')")
    print(f"\nqueues now (curl -s {extender.base}/queues):")
    show_queues(f"{extender.base}/queues")
    if once:
        return 0
    print(
        f"\ngangplank keeps serving on {extender.base}:\n"
        f"  curl -s {extender.base}/queues\n  curl -s {extender.base}/metrics | grep gangplank_\n"
        f"  {typed_as(sys.argv[0], shutil.which('gangplank'))} status --url {extender.base}\n"
        "Ctrl-C stops it.",
        flush=True,
    )
    assert server.process is not None
    code = server.process.wait()
    print(f"gangplank demo: gangplank on {extender.base} exited with {code}", file=sys.stderr)
    return 1


def typed_as(script: str, on_path: str | None) -> str:
    """How to type the `gangplank` that runs (`script`, sys.argv[0]): `gangplank` when PATH finds
    that one (`on_path`), else its path: after `make demo`, `.venv/bin/gangplank` (not on PATH
    until the venv is activated)."""
    if Path(script).name != "gangplank":  # python -m extender
        return "gangplank"
    if on_path and Path(on_path).resolve() == Path(script).resolve():
        return "gangplank"
    return script
