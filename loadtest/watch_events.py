"""Watch events per second, as the reflector applies them: a JSON line in, the cache updated.

Two streams over a cache that was filled by a list first (as a running server's is):
- status churn: a MODIFIED event for each of 20,000 listed pods that changes only what the kubelet
  changes most (status, resourceVersion): the figure the README has quoted since the start;
- pod lifecycles: 5,000 new pods, each created, bound, started, running, finished, marked for
  deletion and deleted, the seven events the API server sends for a short job's pod.
For scale, on the same lines: JSON parsing alone (orjson.loads of each line, nothing else), and
the reflector's reading with every line parsed and nothing applied (what each event cost before
pod lines were read without parsing them in full). Each event arrives as its own chunk, as the
API server flushes them, and goes through the reflector's reading, the pod line reading and memo
(cache/pod_lines.py, cache/pod_memo.py), the store and the watch-event counter, as in the server.
Each figure is the median of three rounds taken in turns.

  python -m loadtest.watch_events [--nodes 5000] [--pods 50000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import copy
import gc
import statistics
import time
from collections.abc import Callable, Iterator
from typing import Any

import orjson

from extender.cache.handlers import handlers_for
from extender.cache.reflector import Reflector, event_lines
from extender.cache.store import ClusterStore
from extender.observe.metrics import Metrics
from loadtest.cluster import build

Obj = dict[str, Any]


class _NoHandler:
    def replace(self, items: Any) -> None:
        pass

    def apply(self, event_type: str, obj: Any) -> None:
        pass

    def apply_line(self, line: bytes) -> None:
        return None


def _line(event_type: str, obj: Obj, version: int) -> bytes:
    """One event as the API server writes it: a JSON line, flushed as its own chunk."""
    obj["metadata"]["resourceVersion"] = str(version)
    return orjson.dumps({"type": event_type, "object": obj}) + b"\n"


def status_churn(pods: list[Obj], first_version: int) -> list[bytes]:
    """One MODIFIED event per pod changing its status conditions and resourceVersion. The
    listed pods have no conditions, so the first round makes each Ready, which gangplank reads
    (the pod is replaced in the store); later rounds bring the same statuses and change nothing
    read, and the median of three rounds is one of theirs."""
    lines = []
    for i, pod in enumerate(pods):
        changed = copy.deepcopy(pod)
        status = changed.setdefault("status", {})
        status["conditions"] = [
            {"type": "Ready", "status": "True", "lastTransitionTime": "2026-12-03T10:00:00Z"}
        ]
        status["podIP"] = f"10.{i // 65536 % 256}.{i // 256 % 256}.{i % 256}"
        lines.append(_line("MODIFIED", changed, first_version + i))
    return lines


def lifecycles(template: Obj, nodes: list[str], count: int, first_version: int) -> list[bytes]:
    """The seven events of each of `count` new pods' lives, pod after pod."""
    lines: list[bytes] = []
    version = first_version
    for i in range(count):
        for event_type, obj in _life(template, f"churn-{i}", nodes[i % len(nodes)]):
            version += 1
            lines.append(_line(event_type, obj, version))
    return lines


def _life(template: Obj, name: str, node: str) -> Iterator[tuple[str, Obj]]:
    pod = copy.deepcopy(template)
    pod["metadata"].update(name=name, uid=f"uid-{name}")
    pod["spec"].pop("nodeName", None)
    pod["status"] = {"phase": "Pending", "qosClass": "Burstable"}
    yield "ADDED", copy.deepcopy(pod)
    pod["spec"]["nodeName"] = node
    pod["status"]["conditions"] = [{"type": "PodScheduled", "status": "True"}]
    yield "MODIFIED", copy.deepcopy(pod)
    pod["status"].update(
        hostIP="192.168.0.10",
        startTime="2026-12-03T10:00:01Z",
        containerStatuses=[{"name": "worker", "ready": False, "restartCount": 0}],
    )
    yield "MODIFIED", copy.deepcopy(pod)
    pod["status"].update(phase="Running", podIP="10.0.0.7")
    pod["status"]["containerStatuses"][0].update(ready=True, state={"running": {}})
    yield "MODIFIED", copy.deepcopy(pod)
    pod["status"]["phase"] = "Succeeded"
    pod["status"]["containerStatuses"][0].update(ready=False, state={"terminated": {}})
    yield "MODIFIED", copy.deepcopy(pod)
    pod["metadata"]["deletionTimestamp"] = "2026-12-03T10:05:00Z"
    yield "MODIFIED", copy.deepcopy(pod)
    yield "DELETED", copy.deepcopy(pod)


def rate(reflector: Reflector, chunks: list[bytes]) -> float:
    """Events per second through the reflector's own reading: chunks split into lines, each
    applied (pods: read for what the memo needs, parsed in full only where it must) and counted
    in gangplank's metrics."""
    gc.collect()
    started = time.perf_counter()
    for line in event_lines(chunks):
        reflector._handle_line(line)
    return len(chunks) / (time.perf_counter() - started)


def parse_rate(chunks: list[bytes]) -> float:
    """Lines per second through orjson.loads and nothing else: JSON parsing alone."""
    gc.collect()
    loads = orjson.loads
    started = time.perf_counter()
    for line in chunks:
        loads(line)
    return len(chunks) / (time.perf_counter() - started)


def bench_watch(nodes: list[Obj], pods: list[Obj], rounds: int = 3) -> dict[str, float]:
    """Events per second for each stream, on a cache listed from `nodes` and `pods`: the median
    of `rounds` rounds, the streams taking turns in each (this machine's speed drifts, so the
    figures to compare are those of one run). Both streams can be applied again: churn brings
    the same statuses, each lifecycle ends with its pod deleted."""
    store = ClusterStore()
    handlers = handlers_for(store)
    handlers["nodes"].replace(nodes)
    handlers["pods"].replace(pods)
    store.snapshot()
    gc.collect()
    gc.freeze()  # as the server does once its cache is loaded (Readiness._settle_heap)
    version = 10**8
    churn = status_churn(pods[:20000], version)
    names = [n["metadata"]["name"] for n in nodes]
    life = lifecycles(pods[0], names, 5000, version + len(churn))
    metrics = Metrics()
    reflector = Reflector("pods", lambda **kw: None, handlers["pods"], observer=metrics)
    parse_only = Reflector("pods", lambda **kw: None, _NoHandler())
    streams: dict[str, Callable[[], float]] = {
        "status churn": lambda: rate(reflector, churn),
        "pod lifecycles": lambda: rate(reflector, life),
        "JSON parsing alone": lambda: parse_rate(churn + life),
        "reflector, parsing alone": lambda: rate(parse_only, churn + life),
    }
    figures: dict[str, list[float]] = {name: [] for name in streams}
    for _ in range(rounds):
        for name, measure in streams.items():
            figures[name].append(measure())
            store.snapshot()
    gc.unfreeze()
    return {name: statistics.median(values) for name, values in figures.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=50000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    nodes, pods = build(args.nodes, args.pods, None)
    for stream, per_second in bench_watch(nodes, pods, args.rounds).items():
        print(f"{stream}: {per_second:,.0f} events/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
