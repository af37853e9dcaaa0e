"""The HTTP load-test suite: the real `gangplank serve` (gunicorn, one worker) with 500, 5,000 and
15,000 nodes in its cache (and 10 pods a node, spread over 24 queues of a policy), driven over
HTTP by several concurrent connections with kube-scheduler's request bodies (the fixture's pod,
pass-through: its GPU request taken off, no queue, no gang; and once as captured, with one GPU,
which gangplank scores), in both `nodeCacheCapable` modes. Per verb: throughput, p50 /
p99 / p99.9; the worker's CPU per filter+prioritize pair and its memory before and after; and the
same calls to a bare Flask pass-through under the same gunicorn settings, side by side.

    python -m loadtest.http_suite [--traces PATH] [--sizes 500,5000,15000] [--seconds 20]
                                  [--rate 250] [--steady-seconds 600]

"NodeNames" sends every node; "NodeNames, as sent" the nodes kube-scheduler actually sends an
extender by default (it stops filtering once it has found `feasible_to_find` nodes: 500 of
5,000, 750 of 15,000). At 5,000 nodes a paced run sends pairs at `--rate` a second for
`--steady-seconds`, reading the worker's memory every 30 s.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import yaml

from extender.service.server import serve_command
from extender.service.settings import WORKER_CLASSES, Settings
from loadtest.bench import FIXTURE_POD, rss_mib
from loadtest.cluster import DEFAULT_TRACES, build, traces_present
from loadtest.live import free_port, post
from loadtest.markdown import machine, write_section
from loadtest.queues import policy_document, spread

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def _worker(pid: int) -> int:
    children = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True)
    return int(children.stdout.split()[0])


@contextlib.contextmanager
def serving(command: list[str], port: int) -> Iterator[int]:
    """Start a server; yield its gunicorn worker's pid once /readyz answers."""
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError(f"{command[:4]} exited with {process.returncode}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2):
                    break
            except OSError:
                time.sleep(0.5)
        yield _worker(process.pid)
    finally:
        process.terminate()
        process.wait(30)


def feasible_to_find(nodes: int) -> int:
    """How many feasible nodes kube-scheduler looks for before it stops filtering, with the
    default (adaptive) percentageOfNodesToScore: 50% less 1% per 125 nodes, at least 5%, at least
    100 nodes. Extenders are called with those nodes only."""
    if nodes < 100:
        return nodes
    percentage = max(5, 50 - nodes // 125)
    return min(nodes, max(100, nodes * percentage // 100))


def cache_counts(port: int) -> dict[str, int]:
    """Objects in the server's cache by kind, from its /metrics."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    counts = {}
    for line in text.splitlines():
        if line.startswith("gangplank_cache_objects{"):
            labels, value = line.rsplit(" ", 1)
            counts[labels.split('kind="', 1)[1].split('"', 1)[0]] = int(float(value))
    return counts


COMPARED = ("NodeNames", "NodeNames, as sent")  # the modes measured against the bare server


def bodies(nodes: list[dict[str, Any]]) -> dict[str, bytes]:
    """Request bodies: the fixture pod made a pass-through pod (its GPU request taken off: no
    gang, no queue, nothing to place, so gangplank passes every node with neutral scores), and
    the fixture pod as captured (one GPU: gangplank scores its placement)."""
    gpu_pod = json.loads(FIXTURE_POD.read_text())["Pod"]
    pod = json.loads(FIXTURE_POD.read_text())["Pod"]
    for container in pod["spec"]["containers"]:
        for part in ("requests", "limits"):
            container["resources"].get(part, {}).pop("nvidia.com/gpu", None)
    names = [n["metadata"]["name"] for n in nodes]
    found = names[: feasible_to_find(len(names))]
    return {
        "NodeNames": orjson.dumps({"Pod": pod, "Nodes": None, "NodeNames": names}),
        "NodeNames, as sent": orjson.dumps({"Pod": pod, "Nodes": None, "NodeNames": found}),
        "Nodes": orjson.dumps({"Pod": pod, "Nodes": {"items": nodes}, "NodeNames": None}),
        "1-GPU pod, scored, as sent": orjson.dumps(
            {"Pod": gpu_pod, "Nodes": None, "NodeNames": found}
        ),
    }


def drive(
    port: int, body: bytes, seconds: float, connections: int, rate: float = 0.0
) -> dict[str, list[float]]:
    """`connections` threads each sending filter then prioritize for `seconds`: as fast as the
    server answers, or, with `rate`, pairs at that steady rate a second over all connections (as
    kube-scheduler sends them). Paced latency counts from when each pair was due, so a server
    that falls behind shows it (no coordinated omission)."""
    samples: dict[str, list[float]] = {"filter": [], "prioritize": []}
    lock = threading.Lock()
    start = time.perf_counter() + 0.1
    interval = connections / rate if rate else 0.0

    def loop(offset: int) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        mine: dict[str, list[float]] = {"filter": [], "prioritize": []}
        due = start + offset * interval / connections
        while (due if rate else time.perf_counter()) < start + seconds:
            delay = due - time.perf_counter()
            if rate and delay > 0:
                time.sleep(delay)
            for verb in ("filter", "prioritize"):
                began = due if rate and verb == "filter" else time.perf_counter()
                post(connection, verb, body)
                mine[verb].append(time.perf_counter() - began)
            due += interval
        with lock:
            for verb, values in mine.items():
                samples[verb] += values

    threads = [threading.Thread(target=loop, args=(i,)) for i in range(connections)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return samples


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1e3


@dataclass
class Run:
    """What one server did over one or more measuring windows."""

    samples: dict[str, list[float]] = field(
        default_factory=lambda: {"filter": [], "prioritize": []}
    )
    cpu: float = 0.0
    wall: float = 0.0
    rss: list[float] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        samples = self.samples
        pairs = min(len(samples["filter"]), len(samples["prioritize"]))
        return {
            "pairs_per_s": pairs / max(self.wall, 1e-9),
            "cpu_ms_per_pair": self.cpu / max(pairs, 1) * 1e3,
            "rss": self.rss,
            "verbs": {
                verb: {
                    "calls": len(values),
                    "p50": statistics.median(values) * 1e3,
                    "p99": quantile(values, 0.99),
                    "p999": quantile(values, 0.999),
                }
                for verb, values in samples.items()
            },
        }


def measure_into(
    run: Run,
    port: int,
    pid: int,
    body: bytes,
    seconds: float,
    connections: int,
    rate: float = 0.0,
) -> Run:
    """One window, as fast as the server answers (after a short warm-up), or paced at `rate`
    pairs a second, added to `run`: latency per verb, the worker's CPU, and its RSS at the
    start and every 30 s."""
    if not rate:
        drive(port, body, min(1.0, seconds / 4), connections)  # warm up
    if not run.rss:
        run.rss.append(rss_mib(pid))
    cpu = cpu_seconds(pid)
    wall = time.perf_counter()
    left = seconds
    while left > 0:
        chunk = min(30.0, left)
        for verb, values in drive(port, body, chunk, connections, rate).items():
            run.samples[verb] += values
        run.rss.append(rss_mib(pid))
        left -= chunk
    run.wall += time.perf_counter() - wall
    run.cpu += cpu_seconds(pid) - cpu
    return run


def measure(
    port: int, pid: int, body: bytes, seconds: float, connections: int, rate: float = 0.0
) -> dict[str, Any]:
    return measure_into(Run(), port, pid, body, seconds, connections, rate).summary()


def side_by_side(
    servers: dict[str, tuple[int, int]], body: bytes, seconds: float, connections: int
) -> dict[str, dict[str, Any]]:
    """Each server driven for `seconds` in all, in ROUNDS windows taken in turn (the order
    flipped every round), so that a machine whose speed drifts — these are shared, noisy
    machines — slows both alike and their ratio holds."""
    runs = {name: Run() for name in servers}
    order = list(servers)
    for round_ in range(ROUNDS):
        for name in order if round_ % 2 == 0 else reversed(order):
            port, pid = servers[name]
            measure_into(runs[name], port, pid, body, seconds / ROUNDS, connections)
    return {name: run.summary() for name, run in runs.items()}


ROUNDS = 4


def run_size(
    size: int,
    traces: Path | None,
    seconds: float,
    connections: int,
    workdir: Path,
    rate: float = 0.0,
    steady_seconds: float = 0.0,
    worker_class: str = Settings.worker_class,
) -> list[str]:
    nodes, pods = build(size, size * 10, traces)
    pods = spread(pods)
    cluster = workdir / f"cluster-{size}.json"
    items = [{**n, "kind": "Node"} for n in nodes] + [{**p, "kind": "Pod"} for p in pods]
    cluster.write_bytes(orjson.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    policy = workdir / "policy.yaml"
    policy.write_text(yaml.safe_dump(policy_document()))
    port = free_port()
    gangplank = serve_command(
        port,
        "--cluster-file",
        str(cluster),
        "--policy",
        str(policy),
        "--worker-class",
        worker_class,
        log_level="error",
    )
    bare_port = free_port()
    bare = [
        sys.executable,
        "-m",
        "gunicorn",
        "--workers",
        "1",
        "--threads",
        str(Settings().threads),  # gangplank's own default: the same gunicorn settings
        "--worker-class",
        worker_class,
        "--bind",
        f"127.0.0.1:{bare_port}",
        "--log-level",
        "error",
        "loadtest.bare_app:app",
    ]
    calls = bodies(nodes)
    results: dict[str, dict[str, Any]] = {}
    with serving(gangplank, port) as pid, serving(bare, bare_port) as bare_pid:
        cached = cache_counts(port)
        if cached.get("nodes") != len(nodes) or cached.get("pods") != len(pods):
            raise RuntimeError(f"the server's cache holds {cached}, not the cluster file's")
        rss_before = rss_mib(pid)
        servers = {"gangplank": (port, pid), "bare": (bare_port, bare_pid)}
        for mode, body in calls.items():
            if mode in COMPARED:
                for name, summary in side_by_side(servers, body, seconds, connections).items():
                    results[f"{name} {mode}"] = summary
            elif mode != "Nodes" or size <= 5000:  # 15,000 full Node objects a call: what
                # nodeCacheCapable avoids
                results[f"gangplank {mode}"] = measure(port, pid, body, seconds, connections)
        if rate and steady_seconds:
            results[f"gangplank NodeNames, as sent, {rate:,.0f} pairs/s paced"] = measure(
                port, pid, calls["NodeNames, as sent"], steady_seconds, connections, rate
            )
        rss_after = rss_mib(pid)
    results = dict(sorted(results.items(), key=lambda item: item[0].startswith("bare")))
    rows = []
    for label, r in results.items():
        for verb, v in r["verbs"].items():
            rows.append(
                f"| {size:,} | {label} | {verb} | {v['calls']:,} | {v['p50']:.2f} | "
                f"{v['p99']:.2f} | {v['p999']:.2f} | {r['pairs_per_s']:,.0f} | "
                f"{r['cpu_ms_per_pair']:.2f} |"
            )
    for mode in COMPARED:
        ratio = (
            results[f"gangplank {mode}"]["cpu_ms_per_pair"]
            / results[f"bare {mode}"]["cpu_ms_per_pair"]
        )
        rows.append(
            f"| {size:,} | gangplank / bare, CPU per pair ({mode}) | | | | | | | {ratio:.2f}x |"
        )
    rows.append(
        f"| {size:,} | in the cache: {cached['nodes']:,} nodes, {cached['pods']:,} pods | | | | | "
        "| | |"
    )
    rows.append(
        f"| {size:,} | gangplank worker RSS before / after | | | | | | | "
        f"{rss_before:.0f} / {rss_after:.0f} MiB |"
    )
    for label, r in results.items():
        if "paced" in label:
            rows.append(
                f"| {size:,} | RSS every 30 s of the paced run (MiB) | | | | | | | "
                f"{' '.join(f'{m:.0f}' for m in r['rss'])} |"
            )
    return rows


HEADER = (
    "| nodes | server, mode | verb | calls | p50 ms | p99 ms | p99.9 ms | pairs/s | "
    "CPU ms/pair |\n|---|---|---|---|---|---|---|---|---|"
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="loadtest.http_suite",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--traces", type=Path, default=DEFAULT_TRACES)
    parser.add_argument("--sizes", default="500,5000,15000")
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--connections", type=int, default=4)
    parser.add_argument("--write", type=Path, help="write the figures into this markdown file")
    parser.add_argument(
        "--rate", type=float, default=250.0, help="pairs a second of the paced run (0: none)"
    )
    parser.add_argument(
        "--worker-class",
        default=Settings.worker_class,
        choices=WORKER_CLASSES,
        help="gunicorn worker of both servers (gangplank's --worker-class)",
    )
    parser.add_argument(
        "--steady-seconds",
        type=float,
        default=60.0,
        help="length of the paced run at 5,000 nodes (600: the 10-minute memory check)",
    )
    args = parser.parse_args(argv)
    traces: Path | None = args.traces
    if traces is None or not traces_present(traces):
        print(f"traces not found in {args.traces}: using a synthetic cluster of the same sizes")
        traces = None
    rows = [HEADER]
    with tempfile.TemporaryDirectory() as tmp:
        for size in (int(s) for s in args.sizes.split(",")):
            steady_seconds = args.steady_seconds if size == 5000 else 0.0
            rows += run_size(
                size,
                traces,
                args.seconds,
                args.connections,
                Path(tmp),
                args.rate,
                steady_seconds,
                args.worker_class,
            )
            print("\n".join(rows), flush=True)
    if args.write is not None:
        write(args.write, rows, args, traces is not None)
    return 0


def write(path: Path, rows: list[str], args: argparse.Namespace, traces: bool) -> None:
    """Replace the suite's section of `path` (between its markers), keeping the rest."""
    section = "\n".join(
        [
            f"Measured {time.strftime('%Y-%m-%d')} on {machine()}, client and server on the same "
            f"machine, {args.connections} connections, {args.seconds:g} s per row, both servers "
            f"under gunicorn's {args.worker_class} worker, "
            f"{'the trace cluster' if traces else 'a synthetic cluster'} with 10 pods a node over "
            "24 queues:",
            "",
            f"    python -m loadtest.http_suite --sizes {args.sizes} --seconds {args.seconds:g} "
            f"--rate {args.rate:g} --steady-seconds {args.steady_seconds:g} --worker-class "
            f"{args.worker_class} --write docs/benchmarks.md",
            "",
            *rows,
        ]
    )
    write_section(path, "<!-- http-suite:begin -->", "<!-- http-suite:end -->", section)


if __name__ == "__main__":
    sys.exit(main())
