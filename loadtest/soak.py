"""`make soak`: gangplank under real gunicorn for 30 minutes with everything at once, on loopback
only, stopping itself; the figures go into docs/reliability.md and a plot into docs/soak.png.

What runs: a fake API server holding a synthetic GPU cluster; `gangplank serve` (one worker)
watching it with three teams' queues sized for the cluster (soak-policy.yaml); the simulator's
kube-scheduler stand-in driving a generated workload of single pods and gangs through filter,
prioritize, preempt and bind over HTTP in wall-clock time (pods created, bound, finished and
deleted: churn on every watch); and, beside it, from a process of its own, pass-through
filter+prioritize pairs at a steady rate, as kube-scheduler sends them for pods outside gangs and
queues. Every 30 s: the worker's memory and CPU, the pairs' latency, the workload's calls.

    python -m loadtest.soak [--minutes 30] [--rate 250] [--nodes 64] [--write docs/reliability.md]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import multiprocessing
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import orjson

from extender.service.settings import Settings
from extender.sim.cluster import load_cluster, node_gpus
from extender.sim.driver import Driver, Options, WallClock
from extender.sim.http import HttpExtender
from extender.sim.live import DEMO_SHAPES
from extender.sim.workload import Mix, generate
from loadtest.bench import FIXTURE_POD, rss_mib
from loadtest.http_suite import _worker, cpu_seconds, drive, quantile
from loadtest.live import free_port, ready

WINDOW_SECONDS = 30.0
PROBE_SLOW = 0.5  # a /healthz answer slower than this: the worker's stacks are dumped (py-spy)
DUMPS = 6  # at most this many dumps a run
SLOW_HOLD = re.compile(r"decision lock held (\d+) ms by (.+?)(?: for pod \S+)? \(")
SLOW_GC = re.compile(r"garbage collection \(generation (\d)\) paused the worker (\d+) ms")
POLICY = Path(__file__).with_name("soak-policy.yaml")  # sized for the soak's 512 GPUs
BEGIN, END = "<!-- soak:begin -->", "<!-- soak:end -->"


def passthrough_body(nodes: list[dict[str, Any]]) -> bytes:
    pod = json.loads(FIXTURE_POD.read_text())["Pod"]
    for container in pod["spec"]["containers"]:
        for part in ("requests", "limits"):
            container["resources"].get(part, {}).pop("nvidia.com/gpu", None)
    names = [n["metadata"]["name"] for n in nodes]
    return orjson.dumps({"Pod": pod, "Nodes": None, "NodeNames": names})


def _metrics(base: str) -> str:
    with urllib.request.urlopen(f"{base}/metrics", timeout=10) as response:
        return str(response.read().decode())


def gc_seconds(base: str) -> float:
    """Seconds the worker has spent stopped for garbage collection (all generations)."""
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in _metrics(base).splitlines()
        if line.startswith("gangplank_gc_pause_seconds_sum{")
    )


def answered_codes(base: str) -> dict[str, float]:
    """gangplank_requests_total by status code, from the server's own metrics."""
    text = _metrics(base)
    codes: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("gangplank_requests_total{"):
            code = line.split('code="', 1)[1].split('"', 1)[0]
            codes[code] = codes.get(code, 0.0) + float(line.rsplit(" ", 1)[1])
    return codes


class Watch:
    """What the harness watches beside the pairs, window by window: the server's log of slow
    holds of its decision lock; how long runnable tasks waited for a core, and the harness's
    own CPU (on 2 cores, a busy harness can starve the worker); and a probe of /healthz every
    half second that dumps the worker's stacks with py-spy when an answer is slow (the dumps go
    beside the log)."""

    def __init__(self, base: str, worker: int, directory: Path) -> None:
        self.base, self.worker, self.directory = base, worker, directory
        self.log = directory / "server.log"
        self._offset = 0
        self._waited = _cpu_waited()
        self._harness = cpu_seconds(os.getpid())
        self._gc = gc_seconds(base)
        self._probe_worst = 0.0
        self._dumps = 0
        self._began = time.monotonic()
        self._stop = threading.Event()
        self._probe = threading.Thread(target=self._probe_loop, name="probe", daemon=True)
        self._probe.start()

    def window(self) -> dict[str, Any]:
        with self.log.open("rb") as log:
            log.seek(self._offset)
            text = log.read().decode(errors="replace")
        self._offset += len(text.encode())
        holds = [(int(m[1]), m[2]) for m in SLOW_HOLD.finditer(text)]
        worst = max(holds, default=(0, ""))
        pauses = [int(m[2]) for m in SLOW_GC.finditer(text)]
        waited, harness, in_gc = _cpu_waited(), cpu_seconds(os.getpid()), gc_seconds(self.base)
        figures = {
            "slow_holds": len(holds),  # holds of the decision lock of 250 ms or more
            "worst_hold_ms": worst[0],
            "worst_hold_by": worst[1],
            # the share of the window in which some runnable task waited for a core
            "cpu_waited": round((waited - self._waited) / WINDOW_SECONDS, 3),
            "harness_cpu": round((harness - self._harness) / WINDOW_SECONDS, 2),
            "probe_worst_ms": round(self._probe_worst * 1e3, 1),
            "slow_gcs": len(pauses),  # collections that stopped the worker 100 ms or more
            "worst_gc_ms": max(pauses, default=0),
            "gc_share": round((in_gc - self._gc) / WINDOW_SECONDS, 7),
        }
        self._waited, self._harness, self._probe_worst = waited, harness, 0.0
        self._gc = in_gc
        return figures

    def stop(self) -> None:
        self._stop.set()
        self._probe.join(5)

    def _probe_loop(self) -> None:
        while not self._stop.wait(0.5):
            began = time.monotonic()
            try:
                with urllib.request.urlopen(f"{self.base}/healthz", timeout=30) as answer:
                    answer.read()
            except OSError:
                pass
            took = time.monotonic() - began
            self._probe_worst = max(self._probe_worst, took)
            if took > PROBE_SLOW and self._dumps < DUMPS:
                self._dumps += 1
                self._dump(took)

    def _dump(self, took: float) -> None:
        spy = Path(sys.executable).with_name("py-spy")
        if not spy.exists():
            return
        minute = (time.monotonic() - self._began) / 60
        dump = subprocess.run(
            [str(spy), "dump", "--pid", str(self.worker)], capture_output=True, text=True
        )
        with (self.directory / "stacks.txt").open("a") as out:
            out.write(f"--- minute {minute:.2f}: /healthz took {took * 1e3:.0f} ms\n")
            out.write(dump.stdout + dump.stderr + "\n")


def _cpu_waited() -> float:
    """Seconds that some runnable task waited for a core, since boot (the kernel's pressure
    stall information; 0 where it is not kept). /proc/stat is no measure here: in this VM its
    per-CPU times miss most of what processes are charged."""
    try:
        line = Path("/proc/pressure/cpu").read_text().split("\n", 1)[0]
    except OSError:
        return 0.0
    return int(line.rsplit("total=", 1)[1]) / 1e6


def run(minutes: float, rate: float, node_count: int, logs: Path) -> dict[str, Any]:
    seconds = minutes * 60
    nodes = load_cluster(f"synthetic:{node_count}x8")
    per_node = node_gpus(nodes)
    gpus = sum(per_node)
    mix = Mix(
        jobs=int(60 * minutes),
        hours=seconds / 3600,
        load=1.0,  # as much as fits: queues hold bursts back, gangs wait for room
        seed=11,
        queues={"team-a": 2, "team-b": 1, "team-c": 1},
        shapes=DEMO_SHAPES,
        sigma=0.7,
        min_duration=5.0,
    )
    workload = generate(mix, per_node)
    port = free_port()
    extender = HttpExtender(port, POLICY, log_level="warning", log_path=logs / "server.log")
    driver = Driver(
        nodes,
        workload,
        extender,
        Options(kick_seconds=0.5, sample_seconds=10.0, until=seconds, stall_seconds=30.0),
        clock=WallClock(),
    )
    failure: list[BaseException] = []
    stop_server = extender.stop
    extender.stop = lambda: None  # type: ignore[method-assign]  # stopped here, after the figures

    def drive_workload() -> None:
        try:
            driver.run()
        except BaseException as err:  # reported below, not lost in the thread
            failure.append(err)

    thread = threading.Thread(target=drive_workload, name="workload", daemon=True)
    started = time.monotonic()
    thread.start()
    while extender.process is None or not ready(extender.base):
        if failure or time.monotonic() - started > 120:
            raise RuntimeError(f"gangplank did not start: {failure}")
        time.sleep(0.5)
    worker = _worker(extender.process.pid)
    watch = Watch(extender.base, worker, logs)
    body = passthrough_body(nodes)
    windows: list[dict[str, Any]] = []
    pair_errors = 0
    began = time.monotonic()
    cpu_before, calls_before = cpu_seconds(worker), _calls(extender.base)
    print(
        f"soak: {minutes:g} min, {len(nodes)} nodes ({gpus} GPUs), {len(workload)} jobs, "
        f"pass-through pairs at {rate:g}/s, gangplank on {extender.base}",
        flush=True,
    )
    # The pairs come from a process of their own, as kube-scheduler's calls would: in this one,
    # the stand-in scheduler's threads would delay them (one interpreter lock) and the delay
    # would count as the server's latency.
    pairs = concurrent.futures.ProcessPoolExecutor(1, multiprocessing.get_context("spawn"))
    while time.monotonic() - began < seconds and thread.is_alive():
        try:
            samples = pairs.submit(drive, port, body, WINDOW_SECONDS, 2, rate).result()
        except RuntimeError as err:  # a non-200 answer
            pair_errors += 1
            print(f"soak: pass-through call failed: {err}", file=sys.stderr, flush=True)
            continue
        cpu, calls = cpu_seconds(worker), _calls(extender.base)
        window = {
            "minute": round((time.monotonic() - began) / 60, 2),
            "rss_mib": round(rss_mib(worker), 1),
            "pairs": len(samples["filter"]),
            # the workload's own calls (the stand-in scheduler's, retries of parked pods included)
            "workload_calls": round(calls - calls_before - 2 * len(samples["filter"])),
            "worker_cpu": round((cpu - cpu_before) / WINDOW_SECONDS, 2),  # cores
            **{
                f"{verb}_{name}": round(value, 2)
                for verb, values in samples.items()
                if values
                for name, value in (
                    ("p50", statistics.median(values) * 1e3),
                    ("p99", quantile(values, 0.99)),
                )
            },
        }
        window.update(watch.window())
        cpu_before, calls_before = cpu, calls
        windows.append(window)
        print(f"soak: {json.dumps(window)}", flush=True)
    pairs.shutdown()
    watch.stop()
    thread.join(max(0.0, seconds + 60 - (time.monotonic() - began)))
    driver_running = thread.is_alive()
    try:
        codes = answered_codes(extender.base)
    finally:
        stop_server()
    started_jobs = sum(1 for r in driver.records if r.started is not None)
    return {
        "minutes": minutes,
        "nodes": len(nodes),
        "gpus": gpus,
        "jobs": len(workload),
        "jobs_started": started_jobs,
        "rate": rate,
        "windows": windows,
        "codes": codes,
        "pair_errors": pair_errors,
        "workload_error": repr(failure[0]) if failure else "",
        "driver_ran_to_the_end": not driver_running,
    }


def _calls(base: str) -> float:
    return sum(answered_codes(base).values())


def markdown(result: dict[str, Any]) -> str:
    windows = result["windows"]
    errors = sum(v for code, v in result["codes"].items() if code != "200")
    calls = sum(result["codes"].values())
    first, last = windows[0], windows[-1]
    p99s = [w["filter_p99"] for w in windows]
    slow_holds = sum(w.get("slow_holds", 0) for w in windows)
    worst = max(windows, key=lambda w: w.get("worst_hold_ms", 0))
    worst.setdefault("worst_hold_ms", 0)
    worst.setdefault("worst_hold_by", "")
    lines = [
        BEGIN,
        f"Measured {time.strftime('%Y-%m-%d')} on this machine (2 cores), `make soak`: "
        f"{result['minutes']:g} minutes, gunicorn's {Settings.worker_class} worker, "
        f"{result['nodes']} nodes ({result['gpus']} GPUs), "
        f"{result['jobs']:,} jobs of three teams ({result['jobs_started']:,} started), "
        f"pass-through pairs at {result['rate']:g}/s beside them.",
        "",
        "| figure | value |",
        "|---|---|",
        f"| extender calls answered | {calls:,.0f} |",
        f"| answered other than 200 (4xx, 5xx) | {errors:,.0f} |",
        f"| pass-through pairs refused or failed | {result['pair_errors']} |",
        f"| worker RSS, first / last / highest window | {first['rss_mib']:.0f} / "
        f"{last['rss_mib']:.0f} / {max(w['rss_mib'] for w in windows):.0f} MiB |",
        f"| worker RSS growth, first third / last third of the run | {_growth(windows, 0):+.1f} / "
        f"{_growth(windows, 2):+.1f} MiB |",
        f"| filter p99, first / last / worst window | {first['filter_p99']:.1f} / "
        f"{last['filter_p99']:.1f} / {max(p99s):.1f} ms |",
        f"| filter p50, first / last window | {first['filter_p50']:.2f} / "
        f"{last['filter_p50']:.2f} ms |",
        f"| prioritize p99, first / last window | {first['prioritize_p99']:.1f} / "
        f"{last['prioritize_p99']:.1f} ms |",
        f"| the workload's calls a window (30 s), first / last / most | "
        f"{first.get('workload_calls', 0):,} / {last.get('workload_calls', 0):,} / "
        f"{max(w.get('workload_calls', 0) for w in windows):,} |",
        f"| worker CPU (cores), first / last / most | {first.get('worker_cpu', 0):.2f} / "
        f"{last.get('worker_cpu', 0):.2f} / {max(w.get('worker_cpu', 0) for w in windows):.2f} |",
        f"| share of the time some task waited for a core, first / last / most | "
        f"{first.get('cpu_waited', 0):.0%} / {last.get('cpu_waited', 0):.0%} / "
        f"{max(w.get('cpu_waited', 0) for w in windows):.0%} |",
        f"| decision lock held 250 ms or more (times) / longest hold | {slow_holds} / "
        f"{worst['worst_hold_ms']} ms{' by ' + worst['worst_hold_by'] if slow_holds else ''} |",
        f"| garbage collections of 100 ms or more (times) / longest | "
        f"{sum(w.get('slow_gcs', 0) for w in windows)} / "
        f"{max(w.get('worst_gc_ms', 0) for w in windows)} ms |",
        f"| share of the worker's time in garbage collection, first / last / most | "
        f"{first.get('gc_share', 0):.3%} / {last.get('gc_share', 0):.3%} / "
        f"{max(w.get('gc_share', 0) for w in windows):.3%} |",
        f"| slowest /healthz probe (every 0.5 s) | "
        f"{max(w.get('probe_worst_ms', 0) for w in windows):.0f} ms |",
        "",
        "![memory and latency over the soak](soak.png)",
        END,
    ]
    return "\n".join(lines)


def _growth(windows: list[dict[str, Any]], third: int) -> float:
    """How much the worker's RSS grew over one third of the run (0: the first, 2: the last)."""
    size = max(1, len(windows) // 3)
    part = windows[third * size : (third + 1) * size] if third < 2 else windows[-size:]
    return float(part[-1]["rss_mib"] - part[0]["rss_mib"])


def plot(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    windows = result["windows"]
    minutes = [w["minute"] for w in windows]
    figure, (memory, latency) = plt.subplots(2, 1, figsize=(8, 5.5), sharex=True)
    memory.plot(minutes, [w["rss_mib"] for w in windows], color="tab:blue")
    memory.set_ylabel("worker RSS (MiB)")
    memory.set_ylim(bottom=0)
    memory.set_title("gangplank soak: memory and pass-through latency, 30 s windows")
    for key, style in (("filter_p50", "-"), ("filter_p99", "--"), ("prioritize_p99", ":")):
        latency.plot(minutes, [w.get(key, 0) for w in windows], style, label=key.replace("_", " "))
    latency.set_ylabel("ms")
    latency.set_xlabel("minutes")
    latency.set_ylim(bottom=0)
    latency.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def write(result: dict[str, Any], doc: Path, picture: Path) -> None:
    text = doc.read_text()
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{doc} has no {BEGIN} ... {END} section to write the figures into")
    head, rest = text.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    doc.write_text(head + markdown(result) + tail)
    plot(result, picture)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="loadtest.soak", description=__doc__)
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument(
        "--rate",
        type=float,
        default=250.0,
        help="pass-through pairs a second (the HTTP suite's paced rate)",
    )
    parser.add_argument("--nodes", type=int, default=64, help="nodes of 8 GPUs")
    parser.add_argument("--write", type=Path, help="markdown file with a soak section to fill")
    parser.add_argument("--plot", type=Path, default=Path("docs/soak.png"))
    parser.add_argument("--json", type=Path, help="write every figure here too")
    parser.add_argument(
        "--logs", type=Path, help="directory for the server's log and any stack dumps"
    )
    args = parser.parse_args(argv)
    logs = args.logs or Path(tempfile.mkdtemp(prefix="gangplank-soak-"))
    logs.mkdir(parents=True, exist_ok=True)
    print(f"soak: the server's log and any stack dumps go to {logs}", flush=True)
    result = run(args.minutes, args.rate, args.nodes, logs)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    if not result["windows"]:
        print("soak: no window completed", file=sys.stderr)
        return 1
    print(markdown(result))
    if args.write:
        write(result, args.write, args.plot)
    errors = sum(v for code, v in result["codes"].items() if code != "200")
    return 1 if errors or result["pair_errors"] or result["workload_error"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
