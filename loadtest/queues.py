"""Queue figures for `make bench`: what admission by quota adds to a filter call at 1,000 queues
and 50,000 pods, at two node counts, and how long a policy reload takes.

The trace cluster's pods are spread over 1,000 namespaces, one leaf queue each (10 parents of
100 leaves); every pending pod is work waiting in its queue (about 30,000 of them). The same pod
is filtered once in a queue and once in a namespace of no queue, on one store: the difference
is what queues add.
"""

from __future__ import annotations

import copy
import gc
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import orjson
import yaml

from extender.cache.handlers import handlers_for
from extender.cache.store import ClusterStore
from extender.core.queues.policy_parse import parse_policy
from extender.core.report.queue_report import collect_report, render_report
from extender.kube.binder import StoreBinder
from extender.observe.metrics import Metrics
from extender.policy.file import load_policy
from extender.service.runtime import Runtime
from extender.web.app import create_app

QUEUES = 1000
PARENTS = 10


def policy_document(queues: int = QUEUES, parents: int = PARENTS) -> dict[str, Any]:
    per_parent = queues // parents
    entries: list[dict[str, Any]] = []
    for p in range(parents):
        entries.append(
            {
                "name": f"org-{p}",
                "guarantee": {"nvidia.com/gpu": 2 * per_parent},
                "max": {"nvidia.com/gpu": 40 * per_parent},
            }
        )
        for leaf in range(p * per_parent, (p + 1) * per_parent):
            entries.append(
                {
                    "name": f"team-{leaf}",
                    "parent": f"org-{p}",
                    "weight": 1 + leaf % 3,
                    "guarantee": {"nvidia.com/gpu": 2},
                    "max": {"nvidia.com/gpu": 64},
                    "namespaces": [f"team-{leaf}"],
                }
            )
    return {"apiVersion": "gangplank.io/v1alpha1", "kind": "Policy", "queues": entries}


def spread(pods: list[dict[str, Any]], queues: int = QUEUES) -> list[dict[str, Any]]:
    out = []
    for i, pod in enumerate(pods):
        copied = {**pod, "metadata": {**pod["metadata"], "namespace": f"team-{i % queues}"}}
        out.append(copied)
    return out


def queued_filter_body(fixture_pod: dict[str, Any], namespace: str, names: list[str]) -> bytes:
    """A filter call for a 1-GPU pod of gangplank's profile in `namespace`, sent `names`."""
    pod = copy.deepcopy(fixture_pod)
    pod["metadata"].update(namespace=namespace, name="bench-pod", uid="bench-pod-uid")
    pod["spec"]["schedulerName"] = "gangplank"
    pod["spec"]["containers"][0]["resources"] = {
        "requests": {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "1"}
    }
    return orjson.dumps({"Pod": pod, "NodeNames": names, "Nodes": None})


def _caller(app: Any, body: bytes) -> Callable[[], None]:
    from loadtest.bench import wsgi_caller

    return wsgi_caller(app, "/scheduler/filter", body)


def _median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1e3


def bench_queues(
    nodes: list[dict[str, Any]],
    pods: list[dict[str, Any]],
    fixture_pod: dict[str, Any],
    calls: int,
) -> list[str]:
    from loadtest.bench import percentiles, timed

    rows: list[str] = []
    doc = policy_document()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "policy.yaml"
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
        started = time.perf_counter()
        policy = load_policy(path)
        parse_seconds = time.perf_counter() - started

    store = ClusterStore()
    handlers = handlers_for(store)
    handlers["nodes"].replace(nodes)
    spread_pods = spread(pods)
    handlers["pods"].replace(spread_pods)
    store.snapshot()
    waiting = sum(1 for p in spread_pods if not p["spec"].get("nodeName"))

    queued_runtime = Runtime(store, StoreBinder(), Metrics(), preloaded=True)
    plain_runtime = Runtime(store, StoreBinder(), Metrics(), preloaded=True)
    started = time.perf_counter()
    queued_runtime.policy_switch.set_policy(policy)
    first = time.perf_counter() - started
    count_samples, switch_samples = [], []
    for _ in range(5):
        started = time.perf_counter()
        book = queued_runtime.scheduler.new_book(policy)
        book.refresh(store.snapshot(), {}, ())
        counted = time.perf_counter()
        with queued_runtime.lock:
            old = queued_runtime.scheduler.set_policy(policy, book)
            queued_runtime.scheduler.book_for(store.snapshot())
        switch_samples.append(time.perf_counter() - counted)
        del old
        count_samples.append(counted - started)
    rows.append(
        f"| policy reload, {QUEUES:,} queues, {len(pods):,} pods ({waiting:,} waiting): parse "
        f"and validate / count usage and waiting jobs (no lock held) / switch under the lock | "
        f"{parse_seconds * 1e3:.0f} ms / {_median_ms(count_samples):.0f} ms / "
        f"{_median_ms(switch_samples):.2f} ms (first load {first * 1e3:.0f} ms) |"
    )

    queued_app = create_app(queued_runtime)
    plain_app = create_app(plain_runtime)
    names = [n["metadata"]["name"] for n in nodes]

    def body(namespace: str, count: int) -> bytes:
        return queued_filter_body(fixture_pod, namespace, names[:count])

    one_pod = next(p for p in spread_pods if p["metadata"]["namespace"] == "team-7")
    for count in (len(names) // 10, len(names)):
        queued = _caller(queued_app, body("team-7", count))
        plain = _caller(plain_app, body("no-queue", count))
        q_samples = timed(calls, queued)
        p_samples = timed(calls, plain)
        rows.append(
            f"| server time, filter of a queued pod, {QUEUES:,} queues, {count:,} nodes sent "
            f"(no queue: {_median_ms(p_samples):.3f} ms) | {percentiles(q_samples)}; "
            f"added {_median_ms(q_samples) - _median_ms(p_samples):.3f} ms |"
        )

        def after_change(call: Callable[[], None] = queued) -> None:
            handlers["pods"].apply("MODIFIED", one_pod)
            call()

        def plain_after_change(call: Callable[[], None] = plain) -> None:
            handlers["pods"].apply("MODIFIED", one_pod)
            call()

        c_samples = timed(calls // 2, after_change)
        pc_samples = timed(calls // 2, plain_after_change)
        rows.append(
            f"| same, a pod of its queue changed before each call (the cache moved on) | "
            f"{percentiles(c_samples)}; added "
            f"{_median_ms(c_samples) - _median_ms(pc_samples):.3f} ms |"
        )

    def kick() -> None:
        handlers["pods"].apply("MODIFIED", one_pod)
        queued_runtime.periodic.kick_candidates()

    rows.append(
        f"| the periodic pass (fair line head, hold, quota nudges), {QUEUES:,} queues, every "
        f"0.5 s | {percentiles(timed(50, kick))} |"
    )

    held: list[float] = []

    def report() -> None:
        with queued_runtime.lock:
            started = time.perf_counter()
            raw = collect_report(
                queued_runtime.scheduler, store.snapshot(), time.time(), jobs_per_queue=20
            )
            held.append(time.perf_counter() - started)
        json.dumps(render_report(raw))

    total = timed(10, report)
    rows.append(
        f"| GET /queues, {QUEUES:,} queues, 20 jobs listed per queue: whole / lock held | "
        f"median {_median_ms(total):.0f} ms / {_median_ms(held[-10:]):.0f} ms |"
    )
    rows += bench_history(store, doc, body("team-7", len(names)), calls)
    return rows


HISTORY_TARGET_MS = 0.5  # what the usage history may add to a filter call (issue 35)


def bench_history(store: ClusterStore, doc: dict[str, Any], body: bytes, calls: int) -> list[str]:
    """The fair order with a usage history (`fairness: {halfLife: 24h}`, a week of hourly
    samples of every queue) against the same policy without, in one run on one store: a filter
    call of a queued pod, the first places of the fair line, and the periodic pass (its sample
    included)."""
    from loadtest.bench import percentiles, timed

    runtimes = {}
    for name, fairness in (("without", None), ("with", {"halfLife": "24h", "window": "7d"})):
        runtime = Runtime(store, StoreBinder(), Metrics(), preloaded=True)
        runtime.policy_switch.set_policy(
            parse_policy({**doc, "fairness": fairness} if fairness else doc)
        )
        runtimes[name] = runtime
    engine = runtimes["with"].scheduler
    book = engine.book_for(store.snapshot())
    now = time.time()
    engine.history.sample(now - 7 * 86400.0, {})
    for hour in range(1, 7 * 24 + 1):
        engine.history.sample(now - 7 * 86400.0 + hour * 3600.0, book_use(book, hour))
    engine.history_known("")
    samples: dict[str, list[float]] = {}
    line: dict[str, list[float]] = {}
    passes: dict[str, list[float]] = {}
    for name in ("without", "with", "without", "with"):  # alternated: the machine's load moves
        runtime = runtimes[name]
        samples.setdefault(name, []).extend(timed(calls, _caller(create_app(runtime), body)))
        ordered = runtime.scheduler.book_for(store.snapshot())
        line.setdefault(name, []).extend(timed(20, partial(_first, ordered)))
        passes.setdefault(name, []).extend(timed(20, runtime.periodic.kick_candidates))
    added = _median_ms(samples["with"]) - _median_ms(samples["without"])
    return [
        f"| filter of a queued pod with the usage history, {QUEUES:,} queues, every node sent "
        f"(without history: {_median_ms(samples['without']):.3f} ms) | "
        f"{percentiles(samples['with'])}; added {added:.3f} ms (target under "
        f"{HISTORY_TARGET_MS} ms) |",
        f"| the fair line's first 64 places, {QUEUES:,} queues: with history / without | "
        f"median {_median_ms(line['with']):.2f} ms / {_median_ms(line['without']):.2f} ms |",
        f"| the periodic pass with the usage history (its sample included) / without | "
        f"median {_median_ms(passes['with']):.1f} ms / {_median_ms(passes['without']):.1f} ms |",
    ]


def book_use(book: Any, hour: int) -> dict[str, dict[str, int]]:
    """A made-up hour of use: each queue's current use, some queues busier at some hours."""
    return {
        q: {r: a * (1 + (hash(q) + hour) % 3) for r, a in state.used.items()}
        for q, state in book.state.items()
    }


def _first(book: Any, count: int = 64) -> list[Any]:
    """The fair line's first `count` places."""
    import itertools

    from extender.core.queues.fair_order import fair_order

    return list(itertools.islice(fair_order(book), count))


def bench_preemption(store: ClusterStore, calls: int = 9) -> list[str]:
    """Planning a preemption for a 64-member gang (8 GPUs each, priority 1000, in no queue) on
    the loaded cluster: the whole decision, from the running jobs to the victims chosen."""
    from extender.core.engine import Engine
    from extender.kube.convert import pod_from_api
    from loadtest.bench import gang_members, percentiles

    snapshot = store.snapshot()
    members = []
    for raw in gang_members("preemptor", 64):
        raw["spec"]["priority"] = 1000
        raw["spec"]["containers"][0]["resources"] = {
            "requests": {"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "8"}
        }
        members.append(pod_from_api(raw))
    key = "gangplank:ml/preemptor"
    samples, victims = [], 0
    now = time.time()
    policy = parse_policy({"preemption": {"evictionsPerMinute": 10_000}})
    gc.collect()
    gc.freeze()  # as the server does once its cache is loaded (Runtime.ready)
    for _ in range(calls):
        preemption = Engine().preemption
        started = time.perf_counter()
        victims = preemption.plan(snapshot, key, members, 64, None, now, policy, None)
        samples.append(time.perf_counter() - started)
    gpus = sum(n.allocatable.get("nvidia.com/gpu", 0) for n in snapshot.nodes.values())
    free = sum(n.free("nvidia.com/gpu") for n in snapshot.nodes.values())
    return [
        f"| preemption planned for a 64-member gang (8 GPUs each, 512 in all) on "
        f"{len(snapshot.nodes):,} nodes / {gpus:,} GPUs ({free:,} free, scattered), every "
        f"running pod of lower priority: {victims} jobs chosen (a process holding only the "
        f"cache, as the server does) | {percentiles(samples)} |"
    ]


def preemption_in_own_process(nodes: int, pods: int, traces: Path | None) -> list[str]:
    """`bench_preemption` in a fresh process that holds only the cache (the server keeps no raw
    JSON after its lists; this process's raw objects would slow every allocation-heavy step)."""
    import subprocess
    import sys

    command = [sys.executable, "-m", "loadtest.queues", "--nodes", str(nodes), "--pods", str(pods)]
    if traces is not None:
        command += ["--traces", str(traces)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600, check=True)
    return [line for line in result.stdout.splitlines() if line.startswith("|")]


def main() -> None:
    import argparse

    from loadtest.bench import load_store
    from loadtest.cluster import build

    parser = argparse.ArgumentParser(prog="loadtest.queues")
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=50000)
    parser.add_argument("--traces", type=Path, default=None)
    parser.add_argument(
        "--history", action="store_true", help="only the usage history's rows (bench_history)"
    )
    parser.add_argument("--calls", type=int, default=300)
    args = parser.parse_args()
    node_objects, pod_objects = build(args.nodes, args.pods, args.traces)
    if args.history:
        print("\n".join(history_only(node_objects, pod_objects, args.calls)))
        return
    store = load_store(node_objects, pod_objects)
    del node_objects, pod_objects
    print("\n".join(bench_preemption(store)))


def history_only(nodes: list[dict[str, Any]], pods: list[dict[str, Any]], calls: int) -> list[str]:
    """`bench_history` on the bench's cluster spread over the 1,000 queues, alone."""
    from loadtest.bench import FIXTURE_POD

    store = ClusterStore()
    handlers = handlers_for(store)
    handlers["nodes"].replace(nodes)
    handlers["pods"].replace(spread(pods))
    store.snapshot()
    fixture = json.loads(FIXTURE_POD.read_text())["Pod"]
    body = queued_filter_body(fixture, "team-7", [n["metadata"]["name"] for n in nodes])
    return bench_history(store, policy_document(), body, calls)


if __name__ == "__main__":
    main()
