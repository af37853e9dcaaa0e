"""What one lifecycle review costs: the watchdog over every running pod of the bench's cluster
(5,000 nodes, 50,000 pods from the Alibaba traces, synthetic without them), with a policy that
turns on every rule. It runs off the decision lock (`service/periodic.py`), every 10 s.

    python -m loadtest.lifecycle_review [--traces ../shared/traces] [--runs 7]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from extender.cache.handlers import handlers_for
from extender.cache.store import ClusterStore
from extender.core.engine import Engine
from extender.core.lifecycle.watchdog import Look
from extender.core.model.gpu_use import GpuUse
from extender.core.queues.policy_parse import parse_policy
from loadtest.cluster import DEFAULT_TRACES, build, traces_present

POLICY = {
    "apiVersion": "gangplank.io/v1alpha1",
    "kind": "Policy",
    "queues": [{"name": "q"}],
    "lifecycle": {
        "readyTimeout": "10m",
        "staleGangGrace": "5m",
        "maxRuntime": "72h",
        "idleGpu": {"below": 5, "for": "30m", "action": "report"},
    },
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=Path, default=DEFAULT_TRACES)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args(argv)
    traces = args.traces if traces_present(args.traces) else None
    if traces is None:
        print(f"no traces at {args.traces}: a synthetic cluster instead")
    nodes, pods = build(5000, 50_000, traces)
    for pod in pods:
        pod["spec"]["schedulerName"] = "gangplank"
        if pod["spec"].get("nodeName"):
            ready = [{"type": "Ready", "status": "True"}]
            pod["status"] = {**pod.get("status", {}), "phase": "Running", "conditions": ready}
    store = ClusterStore()
    handlers = handlers_for(store)
    handlers["nodes"].replace(nodes)
    handlers["pods"].replace(pods)
    snapshot = store.snapshot()
    running = sum(1 for p in pods if p["spec"].get("nodeName"))
    engine = Engine(policy=parse_policy(POLICY, "bench.yaml"))
    assert engine.policy is not None
    use = GpuUse({}, window=1800.0)
    samples = []
    now = time.time()
    for run in range(args.runs):
        started = time.perf_counter()
        engine.lifecycle.judge(
            Look(snapshot, now + run * 10, engine.policy, use, engine.scheduler_names, ())
        )
        samples.append((time.perf_counter() - started) * 1000)
    print(
        f"| lifecycle review (every rule on), {len(nodes):,} nodes, {running:,} running pods "
        f"| median {statistics.median(samples):.1f} ms, max {max(samples):.1f} ms |"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
