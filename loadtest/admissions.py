"""Admissions per second at 1,000 queues with 10,000 waiting jobs (issue 35), beside Kueue #14477
(about 10 admissions a minute at a queue depth of 536 on 1,300 nodes).

The same shape: 1,300 nodes of 8 GPUs, the 1,000 queues of `loadtest/queues.py`'s policy (10
parents of 100 leaves, guarantees, maxes and weights 1-3), and 10 jobs waiting in each queue —
10,000 jobs, 7 in 10 of one 1-GPU pod, 2 in 10 gangs of 4 x 1 GPU, 1 in 10 gangs of 2 x 8 GPUs
(more GPUs than the cluster has, so the depth stays in the thousands). gangplank is driven the
way kube-scheduler drives it, in its own process without HTTP (server time): each waiting pod in
creation order through filter (every node sent, nodeCacheCapable), prioritize on the nodes left,
bind; the cache sees each bind as its watch would (the pod MODIFIED with its node), and the
periodic pass (fair line, holds, nudges) runs every 0.5 s of the measured time. A pod refused is
asked again in the next round, as a parked pod is after a cluster event. The figure is jobs
admitted (every member bound) per second of the whole run — refusals, passes and the cache's work
included — with the depth at the start and the end.
"""

from __future__ import annotations

import argparse
import copy
import gc
import json
import time
from pathlib import Path
from typing import Any

import orjson

from extender.cache.handlers import handlers_for
from extender.cache.store import ClusterStore
from extender.core.queues.policy_parse import parse_policy
from extender.kube.binder import StoreBinder
from extender.observe.metrics import Metrics
from extender.service.runtime import Runtime
from extender.web.app import create_app
from loadtest.markdown import machine, write_section
from loadtest.queues import QUEUES, policy_document
from loadtest.restart_ready import node

NODES = 1300
JOBS_PER_QUEUE = 10
PASS_SECONDS = 0.5
KUEUE = "Kueue #14477: about 10 admissions a minute at depth 536 on 1,300 nodes"
BEGIN, END = "<!-- admissions:begin -->", "<!-- admissions:end -->"


def job_pods(queue: int, j: int, seq: int) -> list[dict[str, Any]]:
    """Job `j` of queue `queue`: its pods, created `seq` seconds after the first job."""
    shape = (1, 1) if j % 10 < 7 else (4, 1) if j % 10 < 9 else (2, 8)
    size, gpus = shape
    name = f"job-{queue}-{j}"
    pods = []
    for m in range(size):
        labels = {"job-name": name}
        annotations = {}
        if size > 1:
            labels["gangplank.io/gang"] = name
            annotations["gangplank.io/gang-size"] = str(size)
        pods.append(
            {
                "metadata": {
                    "name": f"{name}-{m}",
                    "namespace": f"team-{queue}",
                    "uid": f"{name}-{m}",
                    "labels": labels,
                    "annotations": annotations,
                    "creationTimestamp": time.strftime(
                        "%Y-%m-%dT%H:%M:%SZ", time.gmtime(1_700_000_000 + seq)
                    ),
                },
                "spec": {
                    "schedulerName": "gangplank",
                    "containers": [
                        {
                            "name": "train",
                            "resources": {
                                "requests": {
                                    "cpu": "4",
                                    "memory": "16Gi",
                                    "nvidia.com/gpu": str(gpus),
                                },
                                "limits": {"nvidia.com/gpu": str(gpus)},
                            },
                        }
                    ],
                },
                "status": {"phase": "Pending"},
            }
        )
    return pods


def waiting_jobs(
    queues: int = QUEUES, per_queue: int = JOBS_PER_QUEUE
) -> list[list[dict[str, Any]]]:
    """The jobs in creation order: each queue's first job, then each queue's second, ..."""
    return [job_pods(q, j, j * queues + q) for j in range(per_queue) for q in range(queues)]


class Driver:
    """gangplank's app called as kube-scheduler calls it, the cache fed as its watch would be."""

    def __init__(self, nodes: list[dict[str, Any]], pods: list[dict[str, Any]]) -> None:
        self.store = ClusterStore()
        self.handlers = handlers_for(self.store)
        self.handlers["nodes"].replace(nodes)
        self.handlers["pods"].replace(pods)
        self.runtime = Runtime(self.store, StoreBinder(), Metrics(), preloaded=True)
        self.runtime.policy_switch.set_policy(parse_policy(policy_document()))
        self.client = create_app(self.runtime).test_client()
        # kube-scheduler's own filter (NodeResourcesFit) runs first: the extender is sent only the
        # nodes with room for the pod (every one of them, as the stand-ins do: the worst case).
        # GPUs are what binds here (8 pods of 4 cpu / 16Gi fill a node's GPUs well before its
        # 128 cpu), so the free GPUs stand for its fit.
        self.free = {
            n["metadata"]["name"]: int(n["status"]["allocatable"]["nvidia.com/gpu"]) for n in nodes
        }
        self.calls = 0
        self.passes = 0

    def _post(self, verb: str, body: dict[str, Any]) -> Any:
        self.calls += 1
        answer = self.client.post(
            f"/scheduler/{verb}", data=orjson.dumps(body), content_type="application/json"
        )
        if answer.status_code != 200:
            raise AssertionError(f"{verb}: HTTP {answer.status_code} {answer.data[:200]!r}")
        return orjson.loads(answer.data)

    def schedule(self, pod: dict[str, Any]) -> bool:
        """One scheduling cycle of `pod`: True when it was bound."""
        gpus = int(pod["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"])
        feasible = [name for name, free in self.free.items() if free >= gpus]
        if not feasible:
            return False  # kube-scheduler's own filter: the extender is not called
        fit = self._post("filter", {"Pod": pod, "NodeNames": feasible, "Nodes": None})
        left = fit.get("NodeNames") or []
        if not left:
            return False
        chosen = left[0]
        if len(left) > 1:
            scores = self._post("prioritize", {"Pod": pod, "NodeNames": left, "Nodes": None})
            if scores:  # none: kube-scheduler's own scores decide
                chosen = max(scores, key=lambda s: s["Score"])["Host"]
        meta = pod["metadata"]
        bound = self._post(
            "bind",
            {
                "PodName": meta["name"],
                "PodNamespace": meta["namespace"],
                "PodUID": meta["uid"],
                "Node": chosen,
            },
        )
        if bound.get("Error"):
            return False
        self.free[chosen] -= gpus
        placed = copy.deepcopy(pod)
        placed["spec"]["nodeName"] = chosen
        placed["status"] = {"phase": "Running"}
        self.handlers["pods"].apply("MODIFIED", placed)
        return True

    def periodic(self) -> None:
        self.passes += 1
        self.runtime.periodic.kick_candidates()


def run(nodes: int, per_queue: int, seconds: float) -> dict[str, Any]:
    jobs = waiting_jobs(per_queue=per_queue)
    driver = Driver([node(i) for i in range(nodes)], [p for job in jobs for p in job])
    gc.collect()
    gc.freeze()
    left: dict[str, list[dict[str, Any]]] = {
        j[0]["metadata"]["labels"]["job-name"]: j for j in jobs
    }
    started = time.perf_counter()
    last_pass = started
    admitted = 0
    rounds = 0
    while left and time.perf_counter() - started < seconds:
        rounds += 1
        progress = False
        for name, pods in list(left.items()):
            pending = [p for p in pods if "nodeName" not in p["spec"]]
            for pod in pending:
                if driver.schedule(pod):
                    pod["spec"]["nodeName"] = "bound"
                    progress = True
            if all("nodeName" in p["spec"] for p in pods):
                del left[name]
                admitted += 1
            now = time.perf_counter()
            if now - last_pass >= PASS_SECONDS:
                driver.periodic()
                last_pass = now
            if now - started >= seconds:
                break
        if not progress:
            break
    took = time.perf_counter() - started
    gc.unfreeze()
    partial = sum(1 for pods in left.values() if any("nodeName" in p["spec"] for p in pods))
    return {
        "partial": partial,  # jobs with some members bound: only mid-wave when time ran out
        "over": sum(1 for free in driver.free.values() if free < 0),
        "jobs": len(jobs),
        "admitted": admitted,
        "depth_end": len(left),
        "seconds": took,
        "calls": driver.calls,
        "passes": driver.passes,
        "rounds": rounds,
        "per_second": admitted / took if took else 0.0,
    }


def row(result: dict[str, Any], nodes: int) -> str:
    return (
        f"| admissions, {QUEUES:,} queues, {result['jobs']:,} jobs waiting, {nodes:,} nodes of 8 "
        f"GPUs: jobs admitted (every member bound) per second of server time | "
        f"**{result['per_second']:.0f} a second** ({result['admitted']:,} jobs in "
        f"{result['seconds']:.1f} s, depth {result['jobs']:,} -> {result['depth_end']:,}; "
        f"{result['calls']:,} calls, {result['passes']} periodic passes) | {KUEUE} |"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m loadtest.admissions", description=__doc__)
    parser.add_argument("--nodes", type=int, default=NODES)
    parser.add_argument("--jobs-per-queue", type=int, default=JOBS_PER_QUEUE)
    parser.add_argument("--seconds", type=float, default=60.0, help="stop measuring after this")
    parser.add_argument("--write", type=Path, help="also write the figures into this markdown file")
    args = parser.parse_args(argv)
    result = run(args.nodes, args.jobs_per_queue, args.seconds)
    line = row(result, args.nodes)
    print(line)
    print(json.dumps(result))
    if args.write:
        body = (
            f"Measured {time.strftime('%Y-%m-%d')} on {machine()} "
            f"(`python -m loadtest.admissions`):\n\n| measure | gangplank | reference |\n"
            f"|---|---|---|\n{line}"
        )
        write_section(args.write, BEGIN, END, body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
