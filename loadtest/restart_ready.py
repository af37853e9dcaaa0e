"""Restart to ready at scale (issue 36, item 4): how long a freshly started `gangplank serve`
takes, against an API server holding 5,000 nodes and 140,000 running pods (the size of Volcano
#5819, which reports 8 minutes to the first bind there), until it answers a filter correctly, and
the memory it took.

    python -m loadtest.restart_ready [--nodes 5000] [--pods 140000] [--rounds 2]

The API server is the project's fake one (`extender/sim/apiserver.py`, over HTTP, paged lists
and watches) in this process; gangplank is the real `gangplank serve` (gunicorn) in its own,
with the real kubernetes client, as after a restart or on a replica taking over with nothing in
memory. The cluster: every node 8 GPUs, 128 CPUs and 110 pod slots; 28 pods a node (one GPU pod
of 1-8 GPUs and small CPU pods), except `FREE` nodes left with all 8 GPUs free. Ready means
`/readyz` answers 200; correct means the filter of the first member of a waiting gang of `FREE`
8-GPU pods (which fits only on the free nodes, all of them) passes one node, a free one: a view
missing any pod would see busy nodes free. Each round also times the fake server's own part: its
answer to the same paged lists, read by a bare client in this process (the real API server
answers lists from its watch cache, faster).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

from extender.service.server import serve_command
from extender.sim.apiserver import FakeApiServer
from extender.sim.http import kubeconfig
from loadtest.bench import rss_mib
from loadtest.http_suite import cpu_seconds
from loadtest.live import free_port, ready
from loadtest.markdown import machine, write_section

FREE = 25  # nodes with all their GPUs free: where the 8-GPU pod of the check fits
PER_NODE = 28  # 140,000 pods on 5,000 nodes
PAGE = 500  # the reflector's page size
TARGET_SECONDS, TARGET_MIB = 30.0, 1024.0


def node(index: int) -> dict[str, Any]:
    name = f"node-{index:05d}"
    allocatable = {"cpu": "128", "memory": "1024Gi", "pods": "110", "nvidia.com/gpu": "8"}
    return {
        "metadata": {
            "name": name,
            "uid": f"node-uid-{index}",
            "labels": {
                "kubernetes.io/hostname": name,
                "topology.kubernetes.io/zone": f"zone-{index // 2048}",
                "network.gangplank.io/rack": f"rack-{index // 16}",
            },
        },
        "status": {
            "allocatable": allocatable,
            "capacity": dict(allocatable),
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def pod(node_name: str, index: int, gpus: int) -> dict[str, Any]:
    requests = {"cpu": "2" if gpus else "250m", "memory": "8Gi" if gpus else "512Mi"}
    if gpus:
        requests["nvidia.com/gpu"] = str(gpus)
    job = f"job-{index // 4}"
    return {
        "metadata": {
            "name": f"{job}-{index % 4}",
            "namespace": f"team-{index % 40}",
            "uid": f"pod-uid-{index:08d}",
            "creationTimestamp": "2026-12-01T00:00:00Z",
            "labels": {"app": "train", "job-name": job},
            "ownerReferences": [
                {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "name": job,
                    "uid": f"job-uid-{index // 4}",
                    "controller": True,
                }
            ],
        },
        "spec": {
            "nodeName": node_name,
            "schedulerName": "default-scheduler" if index % 2 else "gangplank",
            "containers": [
                {"name": "main", "image": "train:1", "resources": {"requests": requests}}
            ],
        },
        "status": {
            "phase": "Running",
            "startTime": "2026-12-01T00:00:05Z",
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def cluster(nodes: int, pods: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]], set[str]]:
    """The nodes, the pods on them, and the names of the nodes whose 8 GPUs are all free."""
    node_objects = [node(i) for i in range(nodes)]
    free = {n["metadata"]["name"] for n in node_objects[:FREE]}
    busy = [n["metadata"]["name"] for n in node_objects[FREE:]]
    pod_objects = []
    for i in range(pods):
        where = busy[i % len(busy)]
        first_on_node = i < len(busy)
        pod_objects.append(pod(where, i, 1 + i % 8 if first_on_node else 0))
    return node_objects, pod_objects, free


def gang(size: int) -> list[dict[str, Any]]:
    """A waiting gang of `size` pods of 8 GPUs: with `FREE` members it needs every free node."""
    members = []
    for i in range(size):
        member = pod("", 10**9 + i, 8)
        member["metadata"] |= {
            "name": f"check-{i}",
            "namespace": "check",
            "uid": f"check-uid-{i}",
            "labels": {"gangplank.io/gang": "check"},
            "annotations": {"gangplank.io/gang-size": str(size)},
        }
        del member["metadata"]["ownerReferences"]
        del member["spec"]["nodeName"]
        member["spec"]["schedulerName"] = "gangplank"
        member["status"] = {"phase": "Pending"}
        members.append(member)
    return members


def filter_body(member: dict[str, Any], names: list[str]) -> bytes:
    return json.dumps({"Pod": member, "NodeNames": names}).encode()


def passed(base: str, body: bytes) -> list[str] | None:
    request = urllib.request.Request(
        f"{base}/scheduler/filter", body, {"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return list(json.loads(response.read()).get("NodeNames") or [])
    except OSError:
        return None


def family(pid: int) -> list[int]:
    children = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True)
    return [pid, *(int(c) for c in children.stdout.split())]


class Peak:
    """The largest resident memory of a process and its children, sampled every 0.1 s."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.mib = 0.0
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()

    def _sample(self) -> None:
        while not self.done.wait(0.1):
            self.mib = max(self.mib, sum(rss_mib(p) for p in family(self.pid)))

    def stop(self) -> float:
        self.done.set()
        self.thread.join()
        return self.mib


def list_seconds(base: str, kind: str) -> float:
    """The fake server's own part: its paged list of `kind`, read whole by a bare client."""
    start = time.monotonic()
    token = ""
    while True:
        url = f"{base}/api/v1/{kind}?limit={PAGE}" + (f"&continue={token}" if token else "")
        with urllib.request.urlopen(url, timeout=60) as response:
            token = json.loads(response.read())["metadata"].get("continue", "")
        if not token:
            return time.monotonic() - start


@contextmanager
def gangplank(
    api_url: str, workdir: Path, *flags: str
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    config = kubeconfig(api_url, workdir)
    port = free_port()
    command = serve_command(port, "--kubeconfig", str(config), *flags)
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        yield f"http://127.0.0.1:{port}", process
    finally:
        process.terminate()
        process.wait(30)


def one_round(
    api: FakeApiServer, free: set[str], names: list[str], workdir: Path
) -> dict[str, float]:
    body = filter_body(gang(FREE)[0], names)
    start = time.monotonic()
    with gangplank(api.url, workdir) as (base, process):
        peak = Peak(process.pid)
        while not ready(base):
            if process.poll() is not None:
                raise RuntimeError(f"gangplank serve exited with {process.returncode}")
            if time.monotonic() - start > 600:
                raise RuntimeError("gangplank was not ready within 600 s")
            time.sleep(0.1)
        ready_at = time.monotonic() - start
        while not ((answer := passed(base, body)) and len(answer) == 1 and answer[0] in free):
            if time.monotonic() - start > 600:
                raise RuntimeError("gangplank did not answer the filter correctly within 600 s")
            time.sleep(0.1)
        correct_at = time.monotonic() - start
        cpu = sum(cpu_seconds(p) for p in family(process.pid))
        mib = peak.stop()
        time.sleep(1.0)  # settled: what it holds while serving
        held = sum(rss_mib(p) for p in family(process.pid))
    load = os.getloadavg()[0]
    return {"ready": ready_at, "correct": correct_at, "cpu": cpu, "peak": mib, "held": held,
            "load": load}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m loadtest.restart_ready", description=__doc__)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=140_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--write", type=Path, help="also write the figures into this markdown file")
    args = parser.parse_args(argv)
    built = time.monotonic()
    nodes, pods, free = cluster(args.nodes, args.pods)
    names = [n["metadata"]["name"] for n in nodes]
    rows = []
    with FakeApiServer() as api, TemporaryDirectory() as tmp:
        api.load("nodes", nodes)
        api.load("pods", pods + gang(FREE))
        took = time.monotonic() - built
        print(f"{args.nodes:,} nodes and {args.pods:,} pods built in {took:.1f} s", flush=True)
        own = list_seconds(api.url, "pods") + list_seconds(api.url, "nodes")
        print(f"the fake API server's own paged lists of them, read by a bare client: {own:.1f} s")
        runs = []
        for i in range(args.rounds):
            run = one_round(api, free, names, Path(tmp))
            runs.append(run)
            print(
                f"round {i + 1}: ready {run['ready']:.1f} s, answers correctly "
                f"{run['correct']:.1f} s ({run['cpu']:.1f} s of CPU), memory peak "
                f"{run['peak']:.0f} MiB, held {run['held']:.0f} MiB; the machine's load average "
                f"{run['load']:.1f}",
                flush=True,
            )
    correct = statistics.median(r["correct"] for r in runs)
    peak = max(r["peak"] for r in runs)
    verdict = "meets" if correct < TARGET_SECONDS and peak < TARGET_MIB else "MISSES"
    line = (
        f"restart to a correct answer, {args.nodes:,} nodes and {args.pods:,} pods: median "
        f"{correct:.1f} s (ready {statistics.median(r['ready'] for r in runs):.1f} s; "
        f"{statistics.median(r['cpu'] for r in runs):.1f} s of gangplank's CPU), memory peak "
        f"{peak:.0f} MiB (gunicorn master and worker) — target < {TARGET_SECONDS:.0f} s and < "
        f"{TARGET_MIB:.0f} MiB: {verdict}; Volcano #5819: 8 minutes to the first bind at this "
        f"size; the fake API server's own lists {own:.1f} s of it; load average "
        f"{statistics.median(r['load'] for r in runs):.1f} on {os.cpu_count()} cores"
    )
    print(line)
    rows.append(f"- {line}")
    if args.write:
        body = "\n".join([f"Measured on {machine()}:", "", *rows])
        write_section(
            args.write, "<!-- restart-ready:begin -->", "<!-- restart-ready:end -->", body
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
