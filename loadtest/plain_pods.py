"""Plain pods through gangplank against the cheapest possible extender (issue 36, item 3):

    python -m loadtest.plain_pods [--nodes 200] [--pods 2000] [--rounds 5]
                                  [--write docs/benchmarks.md]

Plain pods (no queue, no gang; 250m CPU and 512Mi each), all created while the scheduler is
stopped, then scheduled by a stand-in of kube-scheduler's loop that costs little itself, as its
Go original does: its own filter from counters it keeps, then the extender's filter with every
node that fits (`NodeNames`, nodeCacheCapable), prioritize when more than one is left, the
node with the best score, and the bind in the background, 16 at a time (kube-scheduler's
binding cycles run concurrently). Timed: from the first pod's cycle to the last pod bound, as the
API server's watch reports it. A kubelet stand-in marks each bound pod Running and Ready.

Three ways, alternated round by round, the median of each printed beside the issue's real
figures (a real kube-scheduler v1.36 and API server on one machine):
- `kube-scheduler alone`: no extender; the stand-in binds (a Binding to the API server);
- `stdlib pass-through`: `loadtest/passthrough.py` (http.server, its own process) as filter and
  prioritize; the stand-in binds;
- `gangplank`: a real `gangplank serve` (gunicorn, its watches on the fake API server) as filter,
  prioritize and bind, as manifests/ configure it.
The fake API server runs in this process; every way shares these 2 cores with it.
"""

from __future__ import annotations

import argparse
import collections
import http.client
import json
import multiprocessing
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

from extender.kube.convert import pod_requests, resource_list
from extender.sim.apiserver import FakeApiServer
from loadtest.gang_start import Bound, cached_pods
from loadtest.live import free_port, wait_for
from loadtest.markdown import machine, write_section
from loadtest.restart_ready import gangplank, node

BEGIN, END = "<!-- plain-pods:begin -->", "<!-- plain-pods:end -->"
BINDING_CYCLES = 16  # binds in flight at once
# The figures: 200 nodes, 2,000 pods, medians of 5 alternated rounds on one machine.
REAL = {"kube-scheduler alone": 530, "stdlib pass-through": 348, "gangplank": 289}
WAYS = tuple(REAL)


def plain_pod(index: int) -> dict[str, Any]:
    return {
        "metadata": {
            "name": f"plain-{index:05d}",
            "namespace": "default",
            "uid": f"plain-uid-{index}",
            "creationTimestamp": "2026-12-07T00:00:00Z",
        },
        "spec": {
            "schedulerName": "gangplank",
            "containers": [
                {"name": "c", "resources": {"requests": {"cpu": "250m", "memory": "512Mi"}}}
            ],
        },
        "status": {"phase": "Pending"},
    }


class _Connections(threading.local):
    """One kept-alive connection per thread and host."""

    def __init__(self) -> None:
        self.open: dict[str, http.client.HTTPConnection] = {}

    def post(self, base: str, path: str, body: Any) -> tuple[int, Any]:
        connection = self.open.get(base)
        if connection is None:
            host, port = base.removeprefix("http://").split(":")
            connection = self.open[base] = http.client.HTTPConnection(host, int(port), timeout=60)
        connection.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        response = connection.getresponse()
        data = response.read()
        return response.status, json.loads(data) if data else None


class Scheduler:
    """kube-scheduler's loop, cheap in itself: its own view of free CPU and memory per node. It
    runs in a process of its own (`_schedule`), as kube-scheduler does, not beside the fake API
    server's threads."""

    def __init__(
        self, api_url: str, nodes: list[dict[str, Any]], extender: str | None, binder: bool
    ) -> None:
        self.api_url, self.extender, self.binder = api_url, extender, binder
        self.free = {
            n["metadata"]["name"]: collections.Counter(
                resource_list(n["status"]["allocatable"], "allocatable")
            )
            for n in nodes
        }
        self.names = sorted(self.free)
        self._http = _Connections()
        self._pool = ThreadPoolExecutor(BINDING_CYCLES, thread_name_prefix="binding-cycle")
        self.failures: list[str] = []  # pods whose cycle or bind failed (appended by threads)

    def run(self, pods: list[dict[str, Any]]) -> None:
        for pod in pods:
            self._cycle(pod)
        self._pool.shutdown(wait=True)

    def _cycle(self, pod: dict[str, Any]) -> None:
        want = pod_requests(pod["spec"])
        feasible = [
            n for n in self.names if all(self.free[n][r] >= a for r, a in want.items() if a)
        ]
        if self.extender is not None:
            _, answer = self._http.post(
                self.extender,
                "/scheduler/filter",
                {"Pod": pod, "Nodes": None, "NodeNames": feasible},
            )
            feasible = answer["NodeNames"]
        if not feasible:
            self.failures.append(pod["metadata"]["name"])
            return
        chosen = feasible[0]
        if self.extender is not None and len(feasible) > 1:
            _, scores = self._http.post(
                self.extender,
                "/scheduler/prioritize",
                {"Pod": pod, "Nodes": None, "NodeNames": feasible},
            )
            best = max(s["Score"] for s in scores)
            chosen = next(s["Host"] for s in scores if s["Score"] == best)
        self.free[chosen].subtract(want)  # assumed, as kube-scheduler's cache assumes it
        self._pool.submit(self._bind, pod, chosen)

    def _bind(self, pod: dict[str, Any], chosen: str) -> None:
        meta = pod["metadata"]
        if self.binder and self.extender is not None:
            body = {
                "PodName": meta["name"],
                "PodNamespace": meta["namespace"],
                "PodUID": meta["uid"],
                "Node": chosen,
            }
            status, answer = self._http.post(self.extender, "/scheduler/bind", body)
            ok = status == 200 and not (answer or {}).get("Error")
        else:
            binding = {
                "apiVersion": "v1",
                "kind": "Binding",
                "metadata": {
                    "name": meta["name"],
                    "namespace": meta["namespace"],
                    "uid": meta["uid"],
                },
                "target": {"apiVersion": "v1", "kind": "Node", "name": chosen},
            }
            path = f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}/binding"
            status, _ = self._http.post(self.api_url, path, binding)
            ok = status == 201 or status == 200
        if not ok:
            self.failures.append(meta["name"])


def _schedule(
    api_url: str,
    nodes: list[dict[str, Any]],
    pods: list[dict[str, Any]],
    extender: str | None,
    binder: bool,
    started: Any,
) -> None:
    scheduler = Scheduler(api_url, nodes, extender, binder)
    started.put(time.monotonic())  # CLOCK_MONOTONIC: the same clock in every process
    scheduler.run(pods)
    started.put(len(scheduler.failures))


class Kubelets(Bound):
    """Each pod bound is reported Running and Ready (its kubelet's status update)."""

    def bound(self, pod: dict[str, Any], now: float) -> None:
        super().bound(pod, now)
        running = json.loads(json.dumps(pod))
        running["status"] = {
            "phase": "Running",
            "startTime": "2026-12-07T00:00:01Z",
            "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [{"name": "c", "restartCount": 0, "ready": True}],
        }
        self.api.put("pods", running)


@contextmanager
def _extender(way: str, api: FakeApiServer) -> Iterator[str | None]:
    if way == "kube-scheduler alone":
        yield None
        return
    if way == "stdlib pass-through":
        port = free_port()
        command = [sys.executable, "-m", "loadtest.passthrough", str(port)]
        process = subprocess.Popen(command)
        base = f"http://127.0.0.1:{port}"
        try:
            wait_for(f"{base}/readyz", process, 120)
            yield base
        finally:
            process.terminate()
            process.wait(30)
        return
    with TemporaryDirectory() as tmp, gangplank(api.url, Path(tmp)) as (base, process):
        wait_for(f"{base}/readyz", process, 120)
        yield base


def one_round(way: str, nodes: int, count: int) -> float:
    """Pods a second for one way."""
    pods = [plain_pod(i) for i in range(count)]
    listed = [node(i) for i in range(nodes)]
    spawn = multiprocessing.get_context("spawn")
    with FakeApiServer() as api:
        api.load("nodes", listed)
        for pod in pods:
            api.put("pods", pod)
        with _extender(way, api) as base:
            if way == "gangplank" and base is not None:
                deadline = time.monotonic() + 60
                while cached_pods(base) < count and time.monotonic() < deadline:
                    time.sleep(0.05)
            kubelets = Kubelets(api)
            kubelets.start()
            told = spawn.Queue()
            args = (api.url, listed, pods, base, way == "gangplank", told)
            child = spawn.Process(target=_schedule, args=args, daemon=True)
            child.start()
            started: float = told.get(timeout=60)
            failed = told.get(timeout=600)
            child.join(30)
            deadline = time.monotonic() + 120
            while kubelets.count() < count and time.monotonic() < deadline:
                time.sleep(0.01)
            kubelets.stop()
            if kubelets.count() < count:
                raise RuntimeError(
                    f"{way}: {kubelets.count()} of {count} pods bound "
                    f"({failed} cycles or binds failed)"
                )
            return count / (max(kubelets.times[""]) - started)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m loadtest.plain_pods", description=__doc__)
    parser.add_argument("--nodes", type=int, default=200)
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5, help="alternated rounds of each way")
    parser.add_argument("--ways", default=",".join(WAYS), help="of " + ", ".join(WAYS))
    parser.add_argument("--write", type=Path, help="also write the figures into this markdown file")
    args = parser.parse_args(argv)
    ways = [w for w in args.ways.split(",") if w]
    if args.write and ways != list(WAYS):
        parser.error("--write needs every way (the figures compare them)")
    rates: dict[str, list[float]] = {way: [] for way in ways}
    for _ in range(args.rounds):
        for way in ways:
            rates[way].append(one_round(way, args.nodes, args.pods))
    median = {way: statistics.median(r) for way, r in rates.items()}
    rows = [
        f"- {way}: {median[way]:.0f} pods/s (rounds: "
        + ", ".join(f"{r:.0f}" for r in rates[way])
        + f"); real cluster (issue 36): {REAL[way]} pods/s"
        for way in ways
    ]
    if "gangplank" in median and "stdlib pass-through" in median:
        ratio = median["gangplank"] / median["stdlib pass-through"]
        real_ratio = REAL["gangplank"] / REAL["stdlib pass-through"]
        rows.append(
            f"- gangplank / stdlib pass-through: {ratio:.2f}x (target: at least 1.00x; "
            f"real cluster, issue 36: {real_ratio:.2f}x)"
        )
    for row in rows:
        print(row, flush=True)
    if args.write:
        command = "python -m loadtest.plain_pods --write docs/benchmarks.md"
        head = (
            f"Measured on {machine()} (`{command}`, part of `make bench`), {args.nodes} nodes, "
            f"{args.pods} plain pods, medians of {args.rounds} alternated rounds:"
        )
        write_section(args.write, BEGIN, END, "\n".join([head, "", *rows]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
