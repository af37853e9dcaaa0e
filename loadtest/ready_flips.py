"""What a kubelet's status line that changes only a running pod's readiness costs the verbs: the
CPU time (`time.process_time`) of a pass-through filter+prioritize pair right after a running
pod's Ready condition flipped in the cache, against a pair with nothing changed. In one process,
the bench's cluster (10 pods a node over the queues of loadtest/queues.py), every node named
(gangplank's scheduler configuration has `percentageOfNodesToScore: 100`). Each figure: the
fastest and the median of 5 rounds.

    python -m loadtest.ready_flips [--nodes 200] [--calls 300]
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import statistics
import sys
import tempfile
import time
from pathlib import Path

import orjson
import yaml

from extender.cache.pod_memo import with_status
from extender.service.runtime import build_runtime
from extender.service.settings import Settings
from extender.web.verbs import Verbs
from loadtest.bench import FIXTURE_POD
from loadtest.cluster import DEFAULT_TRACES, build, traces_present
from loadtest.queues import policy_document, spread

ROUNDS = 5


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="loadtest.ready_flips", description=__doc__)
    parser.add_argument("--nodes", type=int, default=200)
    parser.add_argument("--calls", type=int, default=300, help="pairs of each kind a round")
    parser.add_argument("--traces", type=Path, default=DEFAULT_TRACES)
    args = parser.parse_args(argv)
    logging.disable(logging.WARNING)
    traces = args.traces if traces_present(args.traces) else None
    nodes, pods = build(args.nodes, args.nodes * 10, traces)
    pods = spread(pods)
    with tempfile.TemporaryDirectory() as tmp:
        cluster, policy = Path(tmp) / "cluster.json", Path(tmp) / "policy.yaml"
        items = [{**n, "kind": "Node"} for n in nodes] + [{**p, "kind": "Pod"} for p in pods]
        cluster.write_bytes(orjson.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
        policy.write_text(yaml.safe_dump(policy_document()))
        runtime = build_runtime(Settings(cluster_file=str(cluster), policy=str(policy)))
    verbs, store = Verbs(runtime), runtime.store
    pod = json.loads(FIXTURE_POD.read_text())["Pod"]
    for container in pod["spec"]["containers"]:
        for part in ("requests", "limits"):
            container["resources"].get(part, {}).pop("nvidia.com/gpu", None)
    names = [n["metadata"]["name"] for n in nodes]
    body = orjson.dumps({"Pod": pod, "Nodes": None, "NodeNames": names})
    running = [
        p for node in store.snapshot().nodes.values() for p in node.pods if p.phase == "Running"
    ][:500]

    def pair() -> None:
        verbs.answer("filter", body, None)
        verbs.answer("prioritize", body, None)

    def flip(i: int) -> None:
        """The pod as the watch would bring it after its Ready condition flipped."""
        now = running[i % len(running)]
        flipped = with_status(
            now,
            now.node_name,
            now.phase,
            now.started,
            now.restarts,
            not now.ready,
            now.waiting_reason,
            now.deleting,
        )
        store.upsert_pod(flipped)
        running[i % len(running)] = flipped

    gc.collect()
    gc.freeze()
    for i in range(50):
        pair()
        flip(i)
    figures: dict[str, list[float]] = {"nothing changed": [], "after a Ready flip": []}
    clock = time.process_time
    for _ in range(ROUNDS):
        began = clock()
        for _ in range(args.calls):
            pair()
        figures["nothing changed"].append((clock() - began) / args.calls)
        flipping = 0.0
        began = clock()
        for i in range(args.calls):
            at = clock()
            flip(i)
            flipping += clock() - at
            pair()
        figures["after a Ready flip"].append((clock() - began - flipping) / args.calls)
    print(f"{args.nodes:,} nodes, {len(names)} sent, CPU ms a pass-through filter+prioritize pair:")
    for label, values in figures.items():
        print(f"  {label}: {min(values) * 1e3:.3f} (median {statistics.median(values) * 1e3:.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
