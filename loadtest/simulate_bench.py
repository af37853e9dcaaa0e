"""`make bench`: the README's `gangplank simulate` commands, run as a user runs them, timed.

  python -m loadtest.simulate_bench [--traces PATH] [--only NAME,...] [--write docs/benchmarks.md]

Each command runs the console script next to this Python in a temporary folder, `--quiet
--no-html` added (the same runs; no progress bar, no page drawn), timed from start to exit; each
simulated run's own wall time comes from its report.json. Commands that need the public traces
are skipped, and say so, when they are absent. A what-if runs its runs two at a time on two
cores, as it does for a user.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loadtest.cluster import DEFAULT_TRACES
from loadtest.markdown import machine, write_section

ROOT = Path(__file__).resolve().parent.parent
BEGIN, END = "<!-- simulate:begin -->", "<!-- simulate:end -->"
SHOWN_TRACES = "../shared/traces"  # as the README writes the traces folder


@dataclass(frozen=True)
class Command:
    name: str
    args: str  # after `gangplank simulate`, as the README writes it; {traces}: the traces folder
    what: str
    traces: bool = False


COMMANDS = (
    Command(
        "policy-day",
        "--policy policies/example.yaml --cluster synthetic:64x8 --jobs 2000 --hours 24",
        "a day of 64 nodes x 8 GPUs with the example policy, then kube-scheduler alone",
    ),
    Command(
        "what-if",
        "--policy policies/example.yaml --compare label=today 'nodes=+16,label=+16 nodes'",
        "the what-if on that day: two variants and kube-scheduler alone, 3 seeds each",
    ),
    Command(
        "trace-day",
        "--cluster {traces} --jobs 50000 --hours 24",
        "a day of the 4,278-node trace cluster, 50,000 jobs, then kube-scheduler alone",
        traces=True,
    ),
    Command(
        "fgd",
        "--cluster {traces}/alibaba-gpu-v2023/openb_node_list_gpu_node.csv "
        "--workload {traces}/alibaba-gpu-v2023/openb_pod_list_default.csv --arrivals fgd",
        "the trace's pods on its 1,213 GPU nodes as the FGD paper replays them",
        traces=True,
    ),
    Command(
        "consolidation",
        "--cluster {traces} --jobs 12500 --hours 6 --seeds 1 --no-baseline "
        "--compare label=without consolidate=on,label=consolidation",
        "six hours of the trace-day's arrivals on the 4,278-node cluster, without and with "
        "moves (docs/simulate.md): jobs moved, 8-GPU job wait p50/p95",
        traces=True,
    ),
)


@dataclass
class Timed:
    command: Command
    seconds: float
    code: int
    runs: list[tuple[str, float]]  # (label and seed, its wall seconds) of each simulated run


def run(command: Command, traces: Path) -> Timed:
    argv = shlex.split(command.args.format(traces=traces))
    script = Path(sys.executable).parent / "gangplank"
    with tempfile.TemporaryDirectory(prefix="simulate-bench-") as folder:
        started = time.perf_counter()
        done = subprocess.run(
            [str(script), "simulate", *argv, "--quiet", "--no-html", "--out", folder],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            capture_output=True,
            text=True,
            check=False,
        )
        seconds = time.perf_counter() - started
        report = Path(folder) / "report.json"
        runs = (
            [
                (f"{r['label']}, seed {r['seed']}{_moves(r)}", r["wall_seconds"])
                for r in json.loads(report.read_text())["runs"]
            ]
            if report.exists()
            else []
        )
    if done.returncode != 0:
        print(done.stderr, file=sys.stderr)
    return Timed(command, seconds, done.returncode, runs)


def _moves(run: dict[str, Any]) -> str:
    """What a run of a command that consolidates moved, and its 8-GPU jobs' waits."""
    if "jobs_moved" not in run:
        return ""
    return (
        f" ({run['jobs_moved']} jobs moved, {run['gpus_moved']} GPUs; 8-GPU job wait p50 "
        f"{run['wait_8gpu_p50_h']} h, p95 {run['wait_8gpu_p95_h']} h)"
    )


def markdown(results: list[Timed], skipped: list[Command]) -> str:
    lines = [
        f"Measured {time.strftime('%Y-%m-%d')} on {machine()} (`python -m "
        "loadtest.simulate_bench --write docs/benchmarks.md`, part of `make bench`): the "
        "README's commands as a user runs them, `--quiet --no-html` added, timed from start to "
        "exit; each run's own wall time from its report.json (a what-if's runs go two at a time).",
        "",
        "| command | what | wall time | each run (s) |",
        "|---|---|---|---|",
    ]
    for r in results:
        shown = "gangplank simulate " + r.command.args.format(traces=SHOWN_TRACES)
        each = ", ".join(f"{label}: {seconds:g}" for label, seconds in r.runs) or "-"
        took = f"{r.seconds / 60:.1f} min" if r.code == 0 else f"failed (exit {r.code})"
        lines.append(f"| `{shown}` | {r.command.what} | {took} | {each} |")
    for command in skipped:
        lines.append(f"| {command.name} | {command.what} | skipped: no traces | - |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="loadtest.simulate_bench", description=__doc__)
    parser.add_argument("--traces", type=Path, default=DEFAULT_TRACES)
    parser.add_argument(
        "--only", help="commands to run, by name: " + ", ".join(c.name for c in COMMANDS)
    )
    parser.add_argument("--write", type=Path, help="markdown file to write the figures into")
    args = parser.parse_args(argv)
    names = set(args.only.split(",")) if args.only else {c.name for c in COMMANDS}
    unknown = names - {c.name for c in COMMANDS}
    if unknown:
        parser.error(f"--only: no command {', '.join(sorted(unknown))}")
    have_traces = (args.traces / "alibaba-spot-gpu-v2026").is_dir()
    results, skipped = [], []
    for command in COMMANDS:
        if command.name not in names:
            continue
        if command.traces and not have_traces:
            print(f"{command.name}: skipped, no traces at {args.traces}", flush=True)
            skipped.append(command)
            continue
        timed = run(command, args.traces.resolve())
        runs = ", ".join(f"{label} {s:g} s" for label, s in timed.runs)
        print(f"{command.name}: {timed.seconds:.1f} s (exit {timed.code}); {runs}", flush=True)
        results.append(timed)
    if args.write is not None:
        write_section(args.write, BEGIN, END, markdown(results, skipped))
        print(f"wrote {args.write}")
    return 0 if all(r.code == 0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
