"""Idle GPUs, measured: a real Prometheus (Debian's package) scrapes a dcgm-exporter stand-in on
each node (tests/dcgm_standin.py: the real metric and labels) and gangplank itself; a real
`gangplank serve` (gunicorn) over the fake API server reads each pod's GPU use from it
(`--prometheus-url`) under a policy whose idle-GPU rule looks back 5 s (`for: 5s`, below 5 %),
and the kube-scheduler stand-in drives the pods it must place. One story, read at its steps:

    start   every job bound and Ready, except evict/late (Running, not Ready)
            watch   (report):        idle-report idle (2 %, 1 %); busy-report one pod at 80 %
            evict   (evict):         idle-evict idle (0 %, 3 %); busy-evict 90 %; late 1 %
            reclaim (reclaim-first): idle-first idle and busy-high busy, both priority 1000,
                                     filling the two nodes of pool `reclaim`
    found   the idle jobs found (a review after 5 s of data): idle-evict evicted whole
    again   the next review: the idle jobs are told once, not again
    room    a priority-500 gang of queue reclaim needs room: idle-first goes, busy-high stays
    down    Prometheus stopped, then late made Ready: two failed reads later it is still there
    back    Prometheus back (its samples kept): late is evicted, idle at 1 % all along

gangplank reviews running jobs every 10 s (REVIEW_SECONDS) and reads GPU use as often: each step
waits with a deadline. About 70 s (65 s measured on 2 shared cores).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any, cast

import pytest
import yaml

from loadtest import live
from tests.builders import bound_pod, gang_pods, node, pod
from tests.dcgm_standin import DcgmStandin, first_sample
from tests.exported import RULES, selectors
from tests.fakeapi import FakeApiServer
from tests.scheduler_sim import Extender, KubeScheduler
from tests.serving import Served, free_port, write_kubeconfig

pytestmark = [
    pytest.mark.skipif(
        live.PROMETHEUS is None,
        reason="prometheus not installed (Debian package prometheus; `make prometheus` installs "
        "it as root)",
    ),
    pytest.mark.slow,
]
QUEUE = "gangplank.io/queue"
WINDOW = 5.0
POLICY = {
    "apiVersion": "gangplank.io/v1alpha1",
    "kind": "Policy",
    "lifecycle": {"idleGpu": {"below": 5, "for": "5s", "action": "report"}},
    "queues": [
        {"name": "watch", "guarantee": {"nvidia.com/gpu": 16}},
        {
            "name": "evict",
            "guarantee": {"nvidia.com/gpu": 24},
            "lifecycle": {"idleGpu": {"action": "evict"}},
        },
        {
            "name": "reclaim",
            "guarantee": {"nvidia.com/gpu": 16},
            "lifecycle": {"idleGpu": {"action": "reclaim-first"}},
        },
    ],
}
NODES: dict[str, dict[str, str]] = {f"n{i}": {} for i in range(5)}
NODES |= {"n5": {"pool": "reclaim"}, "n6": {"pool": "reclaim"}}  # the pool a newcomer needs
# job -> (queue, node, priority, per-pod utilisation %); a job of one pod holds all 8 GPUs
JOBS: dict[str, tuple[str, str, int, tuple[float, ...]]] = {
    "idle-report": ("watch", "n0", 0, (2, 1)),
    "busy-report": ("watch", "n1", 0, (1, 80)),
    "idle-evict": ("evict", "n2", 0, (0, 3)),
    "busy-evict": ("evict", "n3", 0, (90,)),
    "late": ("evict", "n4", 0, (1, 1)),
    "idle-first": ("reclaim", "n5", 1000, (1, 2)),
    "busy-high": ("reclaim", "n6", 1000, (60, 70)),
}
# The lifecycle alerts, asked of Prometheus while it scrapes gangplank (their `for` aside)
ALERTS = ("GangplankIdleGpus", "GangplankGpuUseUnread", "GangplankJobHeld")


# The dashboard's and the alerts' selectors of these are asked of Prometheus here (the demo that
# tests/observe/test_prometheus_live.py scrapes reads no GPU use and evicts nothing).
LIFECYCLE = re.compile(r"gangplank_(waste_|lifecycle_|requeues_|jobs_held|idle_|gpu_use_)")


@dataclass
class Step:
    """What was seen at one step of the story."""

    metrics: str = ""
    status: dict[str, Any] = field(default_factory=dict)
    ready: tuple[int, dict[str, Any]] = (0, {})
    pods: set[str] = field(default_factory=set)
    events: list[dict[str, Any]] = field(default_factory=list)
    took: float = 0.0  # seconds this step waited

    def value(self, sample: str) -> float | None:
        """The value of `sample` (name and labels as exported) on /metrics, None if absent."""
        found = re.search(rf"^{re.escape(sample)} (\S+)$", self.metrics, re.M)
        return float(found.group(1)) if found else None

    def idle(self) -> dict[str, str]:
        return {i["job"]: i["reason"] for i in self.status.get("idleJobs", [])}

    def told(self, reason: str) -> Counter[str]:
        """Events with `reason`, by pod."""
        return Counter(e["involvedObject"]["name"] for e in self.events if e["reason"] == reason)


@dataclass
class Story:
    found: Step
    again: Step
    room: Step
    down: Step
    back: Step
    status_text: str = ""  # `gangplank status` at step again
    why_text: str = ""  # `gangplank why watch/idle-report-0` at step again
    asked: dict[str, list[Any]] = field(default_factory=dict)  # ALERTS' expressions, at again
    selected: dict[str, list[Any]] = field(default_factory=dict)  # LIFECYCLE selectors, then
    rules_health: set[str] = field(default_factory=set)
    newcomer: dict[str, str] = field(default_factory=dict)  # newcomer pod -> node
    evictions: list[tuple[str, str, bool]] = field(default_factory=list)
    log: str = ""


def pods_of(job: str) -> list[dict[str, Any]]:
    queue, node_name, priority, use = JOBS[job]
    labels = {QUEUE: queue}
    if len(use) == 1:
        raw = [pod(job, namespace=queue, gpu=8, labels=labels, priority=priority)]
    else:
        raw = gang_pods(job, len(use), gpu=4, namespace=queue, labels=labels, priority=priority)
    started = time.time() - 600
    return [bound_pod(p, node_name, started, ready=job != "late") for p in raw]


def get_json(url: str | urllib.request.Request) -> tuple[int, Any]:
    """The status and JSON answer of a GET (or of `request`), error answers too."""
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def get_text(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as response:
        text: str = response.read().decode()
        return text


def wait(until: Callable[[], bool], seconds: float) -> float:
    """Wait until `until()` holds (or `seconds` pass); how long it took."""
    start = time.monotonic()
    while time.monotonic() - start < seconds and not until():
        time.sleep(0.2)
    return time.monotonic() - start


class Cluster:
    """The fake API server and gangplank's answers, looked at."""

    def __init__(self, api: FakeApiServer, base: str) -> None:
        self.api = api
        self.base = base

    def pods(self) -> set[str]:
        with self.api.cond:
            return {p["metadata"]["name"] for p in self.api.state.objects["pods"].values()}

    def told(self, name: str) -> bool:
        """Whether an Event about the object `name` was posted."""
        with self.api.cond:
            return any(e["involvedObject"]["name"] == name for e in self.api.state.posted_events)

    def metric(self, sample: str) -> float | None:
        return Step(metrics=get_text(f"{self.base}/metrics")).value(sample)

    def step(self, took: float) -> Step:
        with self.api.cond:
            events = list(self.api.state.posted_events)
        return Step(
            metrics=get_text(f"{self.base}/metrics"),
            status=get_json(f"{self.base}/status")[1],
            ready=get_json(f"{self.base}/readyz"),
            pods=self.pods(),
            events=events,
            took=took,
        )


class OverHttp:
    """The kube-scheduler stand-in's extender: `gangplank serve` at `base`."""

    def __init__(self, base: str) -> None:
        self.base = base

    def post(self, verb: str, body: dict[str, Any]) -> tuple[int, Any]:
        request = urllib.request.Request(
            f"{self.base}/scheduler/{verb}",
            json.dumps(body).encode(),
            {"Content-Type": "application/json"},
        )
        return get_json(request)


def cli(base: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "extender", *args, "--url", base],
        capture_output=True,
        text=True,
        timeout=30,
    )
    return done.stdout + done.stderr


def ask(url: str, expr: str) -> list[Any]:
    answer = live.get(f"{url}/api/v1/query?query=" + urllib.parse.quote(expr))
    assert answer["status"] == "success", (expr, answer)
    result: list[Any] = answer["data"]["result"]
    return result


@pytest.fixture(scope="module")
def story(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Story]:
    workdir = tmp_path_factory.mktemp("idle")
    (workdir / "policy.yaml").write_text(yaml.safe_dump(POLICY, sort_keys=False))
    port, prometheus_port = free_port(), free_port()
    with FakeApiServer() as api, ExitStack() as stack:
        exporters = {name: stack.enter_context(DcgmStandin(name)) for name in NODES}
        for name, labels in NODES.items():
            api.put("nodes", node(name, gpu=8, cpu="64", labels=labels))
        for job, (queue, node_name, _, use) in JOBS.items():
            for member, percent in zip(pods_of(job), use, strict=True):
                api.put("pods", member)
                gpus = 8 if len(use) == 1 else 4
                exporters[node_name].set(queue, member["metadata"]["name"], *[percent] * gpus)
        targets = [e.target for e in exporters.values()] + [f"127.0.0.1:{port}"]

        def start_prometheus() -> ExitStack:
            running = ExitStack()
            stack.enter_context(running)  # stopped at the end, if not before
            running.enter_context(
                live.prometheus(targets, workdir / "prometheus", rules=RULES, port=prometheus_port)
            )
            return running

        (workdir / "prometheus").mkdir()
        prometheus = start_prometheus()
        url = f"http://127.0.0.1:{prometheus_port}"
        first = first_sample(url, "idle-report-0")
        time.sleep(max(0.0, first + WINDOW + 1 - time.time()))  # a whole window of data
        kubeconfig = write_kubeconfig(workdir / "kubeconfig", api.url)
        served = Served(
            "--kubeconfig",
            str(kubeconfig),
            "--policy",
            str(workdir / "policy.yaml"),
            "--prometheus-url",
            url,
            "--log-level",
            "warning",
            port=port,
        )
        stack.enter_context(served)
        base = served.base
        cluster = Cluster(api, base)
        wait(lambda: get_json(f"{base}/readyz")[0] == 200, 30)

        def idle_now() -> set[str]:
            return {i["job"] for i in get_json(f"{base}/status")[1].get("idleJobs", [])}

        took = wait(
            lambda: (
                not {"idle-evict-0", "idle-evict-1"} & cluster.pods()
                and {"gang watch/idle-report", "gang reclaim/idle-first"} <= idle_now()
                and cluster.told("idle-evict-0")  # its Event is posted after the eviction
            ),
            45,
        )
        found = cluster.step(took)
        took = wait(lambda: cluster.metric("gangplank_idle_jobs") == 2.0, 30)
        again = cluster.step(took)
        status_text = cli(base, "status")
        why_text = cli(base, "why", "watch/idle-report-0")
        wait(lambda: bool(ask(url, "sum(gangplank_idle_gpus) == 16")), 10)  # scraped
        rules = yaml.safe_load(RULES.read_text())["groups"]
        exprs = {r["alert"]: r["expr"] for g in rules for r in g["rules"] if "alert" in r}
        asked = {name: ask(url, exprs[name]) for name in ALERTS}
        read = set().union(*selectors().values())
        selected = {s: ask(url, s) for s in read if LIFECYCLE.match(s)}
        groups = live.get(f"{url}/api/v1/rules")["data"]["groups"]
        rules_health = {r["health"] for g in groups for r in g["rules"]}

        for member in gang_pods(
            "newcomer",
            2,
            gpu=4,
            namespace="reclaim",
            labels={QUEUE: "reclaim"},
            priority=500,
            node_selector={"pool": "reclaim"},
        ):
            api.put("pods", member)
        scheduler = KubeScheduler(api, cast(Extender, OverHttp(base)))
        start = time.monotonic()
        scheduler.settle(timeout=40, until=lambda: len(scheduler.bound("newcomer")) == 2)
        room = cluster.step(time.monotonic() - start)

        prometheus.close()
        took = wait(lambda: cluster.metric("gangplank_gpu_use_up") == 0.0, 20)
        errors = cluster.metric("gangplank_gpu_use_read_errors_total") or 0.0
        with api.cond:  # late becomes Ready: idle all along, it would be evicted now
            for name in ("late-0", "late-1"):
                late = api.state.objects["pods"][f"evict/{name}"]
                ready = bound_pod(late, "n4", time.time() - 600, ready=True)
                api.put("pods", ready)
        took += wait(
            lambda: (cluster.metric("gangplank_gpu_use_read_errors_total") or 0) >= errors + 2, 30
        )
        down = cluster.step(took)

        prometheus = start_prometheus()
        took = wait(lambda: not {"late-0", "late-1"} & cluster.pods(), 40)
        took += wait(lambda: cluster.metric("gangplank_gpu_use_up") == 1.0, 15)
        back = cluster.step(took)
        with api.cond:
            evictions = list(api.state.evictions)
        newcomer = scheduler.bound("newcomer")
    yield Story(
        found,
        again,
        room,
        down,
        back,
        status_text=status_text,
        why_text=why_text,
        asked=asked,
        selected=selected,
        rules_health=rules_health,
        newcomer=newcomer,
        evictions=evictions,
        log=served.output(),
    )


IDLE_WHY = "its GPUs stayed below 5% for 5s"


def test_an_idle_job_whose_action_is_report_is_listed_with_why_and_left_running(
    story: Story,
) -> None:
    idle = story.again.idle()
    assert idle["gang watch/idle-report"] == f"{IDLE_WHY} (busiest 2%)"
    assert {"idle-report-0", "idle-report-1"} <= story.back.pods
    assert story.again.value("gangplank_idle_jobs") == 2.0  # idle-report, idle-first
    assert story.again.value("gangplank_idle_gpus") == 16.0


def test_an_idle_job_is_told_once_with_a_job_idle_event_on_each_of_its_pods(story: Story) -> None:
    assert story.again.told("JobIdle")["idle-report-0"] == 1
    assert story.again.told("JobIdle")["idle-report-1"] == 1
    message = next(
        e["message"]
        for e in story.again.events
        if e["reason"] == "JobIdle" and e["involvedObject"]["name"] == "idle-report-0"
    )
    assert message == f"gang watch/idle-report is idle: {IDLE_WHY} (busiest 2%)"


def test_gangplank_status_and_why_show_the_idle_job(story: Story) -> None:
    assert "IDLE JOB" in story.status_text, story.status_text
    row = rf"^gang watch/idle-report +{re.escape(IDLE_WHY)} \(busiest 2%\)$"
    assert re.search(row, story.status_text, re.M), story.status_text
    assert f"; idle: {IDLE_WHY} (busiest 2%)" in story.why_text, story.why_text


def test_a_job_with_one_busy_gpu_is_not_idle(story: Story) -> None:
    assert "gang watch/busy-report" not in story.again.idle()
    assert story.again.told("JobIdle")["busy-report-0"] == 0


def test_an_idle_job_whose_action_is_evict_is_evicted_whole_and_a_busy_one_stays(
    story: Story,
) -> None:
    assert not {"idle-evict-0", "idle-evict-1"} & story.found.pods
    assert {("evict", "idle-evict-0", False), ("evict", "idle-evict-1", False)} <= set(
        story.evictions
    )
    assert "busy-evict" in story.back.pods
    assert not [e for e in story.evictions if e[1] == "busy-evict"]
    told = [
        e["message"] for e in story.found.events if e["involvedObject"]["name"] == "idle-evict-0"
    ]
    assert any(
        m.startswith("evicted by gangplank: gang evict/idle-evict its GPUs stayed idle: ")
        and "(all its pods go together)" in m
        for m in told
    ), told
    assert story.again.value('gangplank_lifecycle_freed_gpus_total{rule="idle"}') == 8.0


def test_an_idle_job_whose_action_is_reclaim_first_goes_first_though_its_priority_is_higher(
    story: Story,
) -> None:
    assert "gang reclaim/idle-first" in story.again.idle()
    message = next(
        e["message"]
        for e in story.again.events
        if e["reason"] == "JobIdle" and e["involvedObject"]["name"] == "idle-first-0"
    )
    assert message.endswith("; it is the first to go when capacity is needed")
    assert {"idle-first-0", "idle-first-1"} <= story.again.pods, "no one needed room yet"
    assert story.newcomer == {"newcomer-0": "n5", "newcomer-1": "n5"}, story.room.events
    assert not {"idle-first-0", "idle-first-1"} & story.room.pods
    assert {"busy-high-0", "busy-high-1"} <= story.back.pods, "the busy one stays"


def test_idle_gpu_seconds_are_counted_as_waste(story: Story) -> None:
    waste = story.again.value('gangplank_waste_gpu_seconds_total{kind="idle"}')
    assert waste is not None and waste > 0


def test_with_prometheus_stopped_no_job_is_evicted_or_found_idle(story: Story) -> None:
    assert {"late-0", "late-1", "idle-report-0", "busy-evict"} <= story.down.pods
    assert story.down.idle() == {}
    assert story.down.value("gangplank_idle_jobs") == 0.0


def test_with_prometheus_stopped_readyz_stays_ready_and_says_why_and_gpu_use_up_is_0(
    story: Story,
) -> None:
    code, answer = story.down.ready
    assert code == 200 and answer["ready"] is True
    assert answer["reason"].startswith("cache synced; GPU use not read, no job is found idle ")
    assert "not reachable" in answer["reason"], answer
    assert story.down.value("gangplank_gpu_use_up") == 0.0
    assert (story.down.value("gangplank_gpu_use_read_errors_total") or 0) >= 2
    assert "GPU use not read, no job is found idle meanwhile" in story.log


def test_with_prometheus_back_the_job_idle_all_along_is_evicted_and_readyz_is_plain(
    story: Story,
) -> None:
    assert not {"late-0", "late-1"} & story.back.pods
    assert story.back.ready == (200, {"ready": True, "reason": "cache synced"})
    assert story.back.value("gangplank_gpu_use_up") == 1.0


def test_prometheus_runs_every_rule_and_the_idle_gpus_alert_sees_idle_jobs_hold_16_of_56(
    story: Story,
) -> None:
    share = story.asked["GangplankIdleGpus"]
    assert [float(s["value"][1]) for s in share] == [pytest.approx(16 / 56)], share
    assert story.asked["GangplankGpuUseUnread"] == [] and story.asked["GangplankJobHeld"] == []
    assert story.rules_health == {"ok"}


def test_every_selector_of_the_dashboard_and_the_alerts_on_lifecycle_metrics_names_series(
    story: Story,
) -> None:
    assert len(story.selected) >= 8, sorted(story.selected)
    empty = {s for s, found in story.selected.items() if not found}
    assert empty == {s for s in story.selected if s.startswith("gangplank_requeues_total")}
