"""Gangs started as fast as kube-scheduler's own (issue 36, items 1 and 2): a gang's time to whole
(its first member asked → its last member bound) and gang throughput (pods bound a second), on
the issue's shapes, through two kube-scheduler stand-ins:

    python -m loadtest.gang_start [--only NAME,...] [--drivers sim,http,...] [--rounds N]
                                  [--write docs/benchmarks.md]

- `sim`: the simulator's kube-scheduler model (`extender/sim/kube_scheduler.py`: its queue,
  parking, backoff, a cycle of `CYCLE_MS`) with gangplank in process, which binds a plan's other
  members itself as `gangplank serve` does by default (`_PlanBinding`); simulated seconds;
  `sim-one-by-one`: the same with `--no-bind-planned-members` (every member bound by
  kube-scheduler in its turn);
- `http`: the HTTP stand-in (`extender/sim/standin.py`, the tests' one) driving a real
  `gangplank serve` (gunicorn) that watches, binds and nudges through the fake API server in this
  process; wall-clock seconds, the stand-in's own work (its filters over the API server's
  objects) counted apart from the time in gangplank's verbs; `http-one-by-one`: with
  `--no-bind-planned-members` (not in the default drivers: two minutes more).

Shapes: Volcano #3373 (two interleaved gangs of 8-GPU pods on as many one-slot 8-GPU nodes as one
gang has members, the first gang whole) at 8, 100 and 512 members; 50 gangs of 8 one-GPU pods on
200 8-GPU nodes, created while kube-scheduler is stopped, then started. The references are
kube-scheduler 1.36's own gang scheduling on a real cluster, as issue 36 gives them (1.3 s and
264 pods/s): not measured here, and not on this machine.
"""

from __future__ import annotations

import argparse
import collections
import http.client
import json
import statistics
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

from extender.service.plan_binds import AT_ONCE
from extender.sim.apiserver import FakeApiServer
from extender.sim.driver import Driver, Options
from extender.sim.inprocess import InProcess
from extender.sim.runs import SimPod
from extender.sim.standin import KubeScheduler
from extender.sim.workload import JobSpec, pod_object
from loadtest.live import wait_for
from loadtest.markdown import machine, write_section
from loadtest.restart_ready import gangplank, node

BEGIN, END = "<!-- gang-start:begin -->", "<!-- gang-start:end -->"
CYCLE_MS = 5.0  # the simulator's default cycle (`gangplank simulate --cycle-ms`)
KICK_SECONDS = 0.5  # gangplank's kicker pass (`Runtime(kick_interval=)`)
RECORD_MS = BIND_MS = 2.0  # a write to the fake API server over HTTP (docs/benchmarks.md)
GANG = "gangplank.io/gang"
REAL = "kube-scheduler 1.36's own gangs, real cluster (issue 36)"


@dataclass(frozen=True)
class Shape:
    name: str
    gangs: int
    members: int
    gpus: int  # per pod
    nodes: int  # of 8 GPUs
    first_whole: bool  # timed until the first gang is whole (else: until every pod is bound)
    stopped: bool  # pods created while kube-scheduler is stopped (else: while it runs)
    reference: str  # kube-scheduler's own, from the issue

    def jobs(self) -> list[JobSpec]:
        return [
            JobSpec(f"g{i}", "", self.members, self.gpus, 1000, 1024, 3600.0, 0.0)
            for i in range(self.gangs)
        ]

    def pods(self) -> list[dict[str, Any]]:
        """Every gang's pods, interleaved (member 0 of each gang, then member 1, ...)."""
        jobs = self.jobs()
        return [
            pod_object(job, i, f"uid-{job.name}-{i}", i * 0.001)
            for i in range(self.members)
            for job in jobs
        ]


# kube-scheduler's own pod-group cycle places a gang at once but binds each member in its own
# binding cycle: at other sizes its 100-member figure scaled by the members (not measured)
SCALED = "1.3 s at 100 members scaled by the members:"
SHAPES = (
    Shape("#3373, 8 members", 2, 8, 8, 8, True, False, f"none given ({SCALED} 0.10 s)"),
    Shape("#3373, 100 members", 2, 100, 8, 100, True, False, "1.3 s"),
    Shape("#3373, 512 members", 2, 512, 8, 512, True, False, f"none given ({SCALED} 6.7 s)"),
    Shape("50 gangs of 8", 50, 8, 1, 200, False, True, "264 pods/s"),
)


@dataclass
class Figure:
    shape: Shape
    driver: str
    seconds: float  # first member asked → last member bound (of the first gang whole, or all)
    bound: int
    cycles: int
    notes: list[str] = field(default_factory=list)

    def line(self) -> str:
        unit = "simulated" if self.driver.startswith("sim") else "wall-clock"
        if self.shape.first_whole:
            places = 2 if self.seconds >= 0.1 else 3
            figure = f"first gang whole {self.seconds:.{places}f} s ({unit})"
        else:
            rate = self.bound / self.seconds if self.seconds else 0.0
            figure = f"{rate:.0f} pods/s ({self.bound} pods in {self.seconds:.2f} s, {unit})"
        return (
            f"{self.shape.name}, {self.driver}: {figure}, {self.cycles} scheduling cycles; "
            f"{REAL}: {self.shape.reference}"
        )


# ---- (a) the simulator's kube-scheduler model ----------------------------------
class _Traced(Driver):
    """The driver, noting for each pod where its simulated seconds went: cycles, the active
    queue, backoff, parked (until a nudge, a cluster event or the 5-minute flush)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.first_ask: dict[str, float] = {}
        self.bound_at: dict[str, float] = {}
        self.cycle_times: list[tuple[float, str]] = []  # when, whose job
        self.spent: dict[str, dict[str, float]] = collections.defaultdict(
            lambda: collections.defaultdict(float)
        )
        self._woken_by = "cluster event"

    def _cycle(self, pod: SimPod) -> None:
        self.first_ask.setdefault(pod.run.record.spec.name, self.now)
        self.spent[pod.uid]["cycles"] += 1
        self.cycle_times.append((self.now, pod.run.record.spec.name))
        super()._cycle(pod)
        if pod.node is not None:
            self.bound_at[pod.uid] = self.now

    def _activate(self, pod: SimPod) -> None:
        parked_at = pod.parked_at
        super()._activate(pod)
        if parked_at is not None and pod.uid not in self.parked:
            self.spent[pod.uid][f"parked until {self._woken_by}"] += self.now - parked_at
            if pod.in_backoff:
                self.spent[pod.uid]["backoff"] += self._backoff_until(pod) - self.now

    def _tick(self) -> None:
        self._woken_by = "a nudge"
        try:
            super()._tick()
        finally:
            self._woken_by = "cluster event"

    def _handle(self, kind: str, payload: Any) -> bool:
        if kind == "flush":
            self._woken_by = "the flush"
        try:
            return super()._handle(kind, payload)
        finally:
            self._woken_by = "cluster event"


class _PlanBinding(_Traced):
    """`--bind-planned-members` in the model: once a cycle's filter has planned a gang, gangplank
    binds the plan's other members itself — the plan recorded once (`RECORD_MS`), then Bindings
    `AT_ONCE` at a time, each batch `BIND_MS` (the fake API server's, measured over HTTP;
    docs/benchmarks.md) — and kube-scheduler skips them once they are bound."""

    def _cycle(self, pod: SimPod) -> None:
        super()._cycle(pod)
        reservations = self.extender.engine.reservations  # type: ignore[attr-defined]
        others = [
            (member, where)
            for member in pod.run.pods
            if member is not pod
            and member.node is None
            and (where := reservations.planned_node(member.info)) is not None
        ]
        for i, (member, where) in enumerate(others):
            done = self.now + (RECORD_MS + (i // AT_ONCE + 1) * BIND_MS) / 1000
            self._push(done, "plan-bind", (member, where))

    def _handle(self, kind: str, payload: Any) -> bool:
        if kind != "plan-bind":
            return super()._handle(kind, payload)
        member, where = payload
        bindable = member.uid in self.pending and member.node is None
        if bindable and not self.extender.bind(member, where, self.now):
            self.parked.pop(member.uid, None)
            self.first_ask.setdefault(member.run.record.spec.name, self.now)
            self.bound_at[member.uid] = self.now
            self._bound(member, where)
        return False


def run_sim(shape: Shape, planned: bool = True) -> Figure:
    nodes = [node(i) for i in range(shape.nodes)]
    options = Options(kick_seconds=KICK_SECONDS, cycle_seconds=CYCLE_MS / 1000, until=3600.0)
    driver = (_PlanBinding if planned else _Traced)(nodes, shape.jobs(), InProcess(None), options)
    driver.run()
    started = [r for r in driver.records if r.started is not None]
    if shape.first_whole:
        timed = [min(started, key=lambda r: r.started or 0.0)] if started else []
    else:
        timed = started
    begin = min((driver.first_ask[r.spec.name] for r in timed), default=0.0)
    end = max((r.started or 0.0 for r in timed), default=0.0)
    names = {r.spec.name for r in timed}
    members = [p for p in driver.live.values() if p.run.record.spec.name in names]
    cycles = sum(1 for t, _ in driver.cycle_times if t <= end)
    others = sum(1 for t, job in driver.cycle_times if begin <= t <= end and job not in names)
    label = "sim" if planned else f"sim {ONE_BY_ONE}"
    figure = Figure(shape, label, end - begin, len(timed) * shape.members, cycles)
    total: dict[str, float] = collections.defaultdict(float)
    for member in members:
        for what, seconds in driver.spent[member.uid].items():
            total[what] += seconds
    cycle_seconds = total.pop("cycles", 0) * CYCLE_MS / 1000
    # what is left of each member's wait, from its gang's first ask to its own bind: its turn
    # in the active queue, behind the other pods' cycles
    waits = sum(driver.bound_at.get(m.uid, end) - begin for m in members)
    queue = max(0.0, waits - cycle_seconds - sum(total.values()))
    parts = [
        f"own cycles {cycle_seconds:.2f}",
        f"the active queue {queue:.2f} (behind {others} cycles of other gangs' members, refused)",
    ]
    parts += [f"{what} {seconds:.2f}" for what, seconds in sorted(total.items())]
    figure.notes.append(
        f"where the timed members' simulated seconds went (from the first ask to each one's "
        f"bind, summed over {len(members)} members): " + ", ".join(parts)
    )
    return figure


# ---- (b) the HTTP stand-in against `gangplank serve` ----------------------------------
class _TimedVerbs:
    """The extender's verbs over one kept-alive connection (as kube-scheduler keeps it), noting
    when each gang's first member was asked, and the time spent in the calls."""

    def __init__(self, base: str) -> None:
        host, port = base.removeprefix("http://").split(":")
        self._connection = http.client.HTTPConnection(host, int(port), timeout=60)
        self.first_ask: dict[str, float] = {}
        self.in_calls: dict[str, float] = collections.defaultdict(float)
        self.calls: collections.Counter[str] = collections.Counter()

    def post(self, verb: str, body: dict[str, Any]) -> tuple[int, Any]:
        start = time.monotonic()
        if verb == "filter":
            meta = body["Pod"]["metadata"]
            self.first_ask.setdefault((meta.get("labels") or {}).get(GANG, ""), start)
        self._connection.request(
            "POST", f"/scheduler/{verb}", json.dumps(body), {"Content-Type": "application/json"}
        )
        response = self._connection.getresponse()
        status, answer = response.status, json.loads(response.read())
        done = time.monotonic()
        self.in_calls[verb] += done - start
        self.calls[verb] += 1
        return status, answer


class Bound(threading.Thread):
    """When each pod got its node, by gang, from the API server's pod events (whoever bound
    it: kube-scheduler through the bind verb, or gangplank itself)."""

    def __init__(self, api: FakeApiServer) -> None:
        super().__init__(daemon=True)
        self.api = api
        self.times: dict[str, list[float]] = collections.defaultdict(list)
        self._seen: set[str] = set()
        self._done = threading.Event()

    def run(self) -> None:
        read = 0
        while not self._done.is_set():
            with self.api.cond:
                self.api.cond.wait(0.05)
                events = self.api.state.events["pods"][read:]
                read += len(events)
            now = time.monotonic()
            for event in events:
                meta, spec = event.obj["metadata"], event.obj["spec"]
                if spec.get("nodeName") and meta["uid"] not in self._seen:
                    self._seen.add(meta["uid"])
                    self.bound(event.obj, now)

    def bound(self, pod: dict[str, Any], now: float) -> None:
        """`pod` was seen bound for the first time, at `now`."""
        self.times[(pod["metadata"].get("labels") or {}).get(GANG, "")].append(now)

    def stop(self) -> None:
        self._done.set()
        self.join()

    def whole(self, members: int) -> list[str]:
        return [g for g, times in list(self.times.items()) if len(times) >= members]

    def count(self) -> int:
        return sum(len(t) for t in list(self.times.values()))


def cached_pods(base: str) -> int:
    with urllib.request.urlopen(f"{base}/metrics", timeout=10) as response:
        for line in response.read().decode().splitlines():
            if line.startswith('gangplank_cache_objects{kind="pods"'):
                return int(float(line.rsplit(" ", 1)[1]))
    return 0


@contextmanager
def _served(shape: Shape, *flags: str) -> Iterator[tuple[FakeApiServer, str, int]]:
    with FakeApiServer() as api, TemporaryDirectory() as tmp:
        api.load("nodes", [node(i) for i in range(shape.nodes)])
        with gangplank(api.url, Path(tmp), *flags) as (base, process):
            wait_for(f"{base}/readyz", process, 120)
            yield api, base, process.pid


def run_http(shape: Shape, *flags: str) -> Figure:
    pods = shape.pods()
    with _served(shape, *flags) as (api, base, _):
        verbs = _TimedVerbs(base)
        bound = Bound(api)
        bound.start()
        scheduler = KubeScheduler(api, verbs)
        creating = threading.Thread(target=lambda: [api.put("pods", p) for p in pods])
        if shape.stopped:
            creating.run()
            deadline = time.monotonic() + 60
            while cached_pods(base) < len(pods) and time.monotonic() < deadline:
                time.sleep(0.05)
        else:
            creating.start()  # a controller creating pods while kube-scheduler runs

        def done() -> bool:
            if shape.first_whole:
                return bool(bound.whole(shape.members))
            return bound.count() >= len(pods)

        started = time.monotonic()
        scheduler.settle(timeout=300, until=done)
        wall = time.monotonic() - started
        if creating.is_alive():
            creating.join()
        bound.stop()
    timed = bound.whole(shape.members)[:1] if shape.first_whole else list(bound.times)
    begin = min((verbs.first_ask[g] for g in timed), default=0.0)
    end = max((max(bound.times[g]) for g in timed), default=0.0)
    count = sum(len(bound.times[g]) for g in timed)
    driver = " ".join(["http", *flags])
    figure = Figure(shape, driver, end - begin if timed else float("nan"), count, scheduler.cycles)
    in_calls = sum(verbs.in_calls.values())
    calls = ", ".join(
        f"{verb} {verbs.calls[verb]} calls {verbs.in_calls[verb]:.2f} s" for verb in verbs.calls
    )
    figure.notes.append(
        f"of {wall:.2f} s scheduling: {in_calls:.2f} s in gangplank's verbs ({calls}), "
        f"{wall - in_calls:.2f} s in the stand-in itself and waiting"
    )
    return figure


ONE_BY_ONE = "--no-bind-planned-members"  # kube-scheduler binds each member in its turn
DRIVERS: dict[str, Callable[[Shape], Figure]] = {
    "sim": run_sim,  # gangplank as it runs by default: it binds a plan's other members
    "sim-one-by-one": lambda shape: run_sim(shape, planned=False),
    "http": run_http,
    "http-one-by-one": lambda shape: run_http(shape, ONE_BY_ONE),
}
DEFAULT_DRIVERS = "sim,sim-one-by-one,http"  # http-one-by-one: 2 minutes more, on demand


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m loadtest.gang_start", description=__doc__)
    parser.add_argument("--only", default="", help="shapes whose name contains one of these")
    parser.add_argument("--drivers", default=DEFAULT_DRIVERS, help="of " + ", ".join(DRIVERS))
    parser.add_argument("--rounds", type=int, default=1, help="HTTP rounds (the median is shown)")
    parser.add_argument("--write", type=Path, help="also write the figures into this markdown file")
    args = parser.parse_args(argv)
    wanted = [w for w in args.only.split(",") if w]
    shapes = [s for s in SHAPES if not wanted or any(w in s.name for w in wanted)]
    rows = []
    for driver in [d for d in args.drivers.split(",") if d]:
        for shape in shapes:
            rounds = 1 if driver.startswith("sim") else args.rounds
            runs = [DRIVERS[driver](shape) for _ in range(rounds)]
            figure = sorted(runs, key=lambda f: f.seconds)[len(runs) // 2]
            if rounds > 1:
                figure.notes.append(
                    "rounds: " + ", ".join(f"{f.seconds:.2f} s" for f in runs)
                    + f" (median {statistics.median(f.seconds for f in runs):.2f} s)"
                )  # fmt: skip
            print(figure.line(), flush=True)
            for note in figure.notes:
                print(f"    {note}", flush=True)
            rows.append(f"- {figure.line()}")
            rows += [f"  - {note}" for note in figure.notes]
    if args.write:
        command = "python -m loadtest.gang_start --write docs/benchmarks.md"
        body = "\n".join(
            [f"Measured on {machine()} (`{command}`, part of `make bench`):", "", *rows]
        )
        write_section(args.write, BEGIN, END, body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
