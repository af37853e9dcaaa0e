"""Jobs that hold GPUs and do nothing, end to end: the fake API server (evictions, Events, the
requeue ConfigMap), gangplank over HTTP with a `lifecycle:` policy, the kube-scheduler stand-in,
and two more stand-ins the scenarios need: the kubelets (a pod bound gets its status: Running and
Ready, or waiting with a reason such as ImagePullBackOff) and a job controller that recreates its
pods once they are all gone (as a JobSet or a PyTorchJob restarts a failed group).

Durations are seconds here (readyTimeout 3s, backoff 3s...) and running jobs are reviewed every
0.2 s rather than every 10 s, so each scenario takes 4 to 10 seconds; the suite, about 50 s, is
marked slow (`make test-slow`, and CI, run it)."""

from __future__ import annotations

import contextlib
import copy
import json
import re
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any, Self

import pytest

from extender.core.gangs.placer import GangConfig
from extender.core.queues.policy import Policy
from extender.core.queues.policy_parse import parse_policy
from extender.kube.requeue_store import config_key
from tests.builders import bound_pod, gang_pods, node, policy_doc, queue
from tests.e2e.test_failover import LEASE
from tests.fakeapi import FakeApiServer
from tests.scheduler_sim import REQUEUE_CONFIGMAP, Extender, KubeScheduler

pytestmark = pytest.mark.slow

QUEUE = "gangplank.io/queue"
CONFIG = GangConfig(lifecycle_review_seconds=0.2)
GANG = "gangplank:default/train"
UNPULLED = {"train-3": {"ready": False, "waiting": "ImagePullBackOff"}}  # its image: a typo


def unsuspendable(name: str) -> tuple[str, str, str]:
    """A controller of a kind gangplank cannot suspend (its pods are evicted)."""
    return ("apps/v1", "StatefulSet", name)


def lifecycle(**rules: Any) -> Policy:
    """Queues a and b (no guarantee, no max: only room decides) under these lifecycle rules."""
    doc = policy_doc(queue("a"), queue("b"))
    doc["lifecycle"] = rules
    return parse_policy(doc, "policy.yaml")


def add_nodes(api: FakeApiServer, count: int) -> None:
    for i in range(count):
        api.put("nodes", node(f"n{i}", gpu=8, cpu="64"))


def stamp(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")


class Kubelets(threading.Thread):
    """Every pod bound gets its status at once, as its node's kubelet reports it: started now
    (whole seconds, as `status.startTime` is), Running and Ready, unless `trouble` names it:
    then as `trouble[name]` says (e.g. not ready, waiting with ImagePullBackOff)."""

    def __init__(self, api: FakeApiServer) -> None:
        super().__init__(daemon=True)
        self.api = api
        self.trouble: dict[str, dict[str, Any]] = {}
        self.started: dict[str, float] = {}  # pod uid -> its startTime
        self._done = threading.Event()

    def run(self) -> None:
        while not self._done.wait(0.02):
            with self.api.cond:
                for pod in list(self.api.state.objects["pods"].values()):
                    node_name = pod["spec"].get("nodeName")
                    if not node_name or "startTime" in pod["status"]:
                        continue
                    started = float(int(time.time()))
                    state = self.state_of(pod)
                    self.api.put("pods", bound_pod(pod, node_name, started, **state))
                    self.started[pod["metadata"]["uid"]] = started

    def state_of(self, pod: dict[str, Any]) -> dict[str, Any]:
        """How the kubelet reports pod `pod` once started (under the API server's lock)."""
        return self.trouble.get(pod["metadata"]["name"], {})

    def ready(self, name: str) -> None:
        """Pod `name` is Running and Ready at last (its image pulled)."""
        self.trouble.pop(name, None)
        with self.api.cond:
            pod = copy.deepcopy(self.api.state.objects["pods"][f"default/{name}"])
            started = self.started[pod["metadata"]["uid"]]
            self.api.put("pods", bound_pod(pod, pod["spec"]["nodeName"], started))

    def stop(self) -> None:
        self._done.set()
        self.join(2)

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class JobController(threading.Thread):
    """Job `name` in queue `queue`: `size` pods of 8 GPUs (gang `name`, owned by a controller of
    a kind gangplank cannot suspend, so requeued by evicting its pods), created again, with new
    uids and the same names, once none is left. (A batch/v1 Job, suspended instead, is
    tests/job_controller.py's: see test_requeue_through_the_workload.py.)"""

    def __init__(self, api: FakeApiServer, name: str, size: int, queue: str) -> None:
        super().__init__(daemon=True)
        self.api, self.name, self.size, self.queue = api, name, size, queue
        self.created: list[float] = []  # when each generation of pods was created
        self._done = threading.Event()

    def create(self) -> None:
        now = time.time()
        members = gang_pods(
            self.name,
            self.size,
            gpu=8,
            labels={QUEUE: self.queue},
            owner=unsuspendable(self.name),
            created=stamp(int(now)),
        )
        for member in members:
            self.api.put("pods", member)
        self.created.append(now)

    def run(self) -> None:
        while not self._done.wait(0.02):
            if not pods_of(self.api, self.name):
                self.create()

    def stop(self) -> None:
        self._done.set()
        self.join(2)


def cluster(api: FakeApiServer, **trouble: dict[str, Any]) -> Kubelets:
    """The kubelets (`with` runs them), `trouble` for the pods it names (e.g. train-3's image
    cannot be pulled)."""
    kubelets = Kubelets(api)
    kubelets.trouble.update(trouble)
    return kubelets


@contextlib.contextmanager
def controller(api: FakeApiServer, name: str, size: int, queue: str) -> Iterator[JobController]:
    job = JobController(api, name, size, queue)
    job.create()
    job.start()
    try:
        yield job
    finally:
        job.stop()


def pods_of(api: FakeApiServer, job: str) -> list[dict[str, Any]]:
    with api.cond:
        return [
            p
            for p in api.state.objects["pods"].values()
            if (p["metadata"].get("labels") or {}).get("gangplank.io/gang") == job
        ]


def bound(api: FakeApiServer, job: str) -> dict[str, str]:
    return {
        p["metadata"]["name"]: p["spec"]["nodeName"]
        for p in pods_of(api, job)
        if p["spec"].get("nodeName")
    }


def evicted(api: FakeApiServer) -> list[str]:
    """Pods evicted for real (not the dry runs), in order."""
    with api.cond:
        return [name for _, name, dry in api.state.evictions if not dry]


def record(api: FakeApiServer, job: str = GANG) -> dict[str, Any] | None:
    """The requeue record of `job` in the ConfigMap --requeue-configmap names."""
    found = api.config_map(*REQUEUE_CONFIGMAP)
    key = config_key(job)
    if found is None or key not in (found.get("data") or {}):
        return None
    data: dict[str, Any] = json.loads(found["data"][key])
    return data


def messages(api: FakeApiServer, having: str = "") -> list[str]:
    """The Events gangplank posted, once one has `having` in its message (they follow the
    evictions they tell of)."""
    deadline = time.monotonic() + 5
    while True:
        with api.cond:
            told = [e["message"] for e in api.state.posted_events]
        if any(having in m for m in told) or time.monotonic() > deadline:
            return told
        time.sleep(0.02)


def posted(api: FakeApiServer) -> list[dict[str, Any]]:
    with api.cond:
        return list(api.state.posted_events)


def wait_for(what: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not what():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


class Clock:
    """When a condition first held, looked at by `settle` on every round."""

    def __init__(self) -> None:
        self.at: dict[str, float] = {}

    def note(self, name: str, holds: bool) -> bool:
        if holds and name not in self.at:
            self.at[name] = time.time()
        return holds


def requeued(count: int, limit: int, reason: str) -> re.Pattern[str]:
    """What a requeued job's new pods are told while they wait out the backoff (the number of
    seconds left is the only part that depends on when they asked)."""
    return re.compile(
        re.escape(f"gang default/train requeued {count} of {limit} times: {reason}; next try in ")
        + r"\d+s"
    )


HELD = (
    "gang default/train is held: {reason}; it runs again when recreated or when a pod of it is "
    'annotated gangplank.io/retry: "now"'
)


# ---- not ready in time: evicted whole, requeued, held for the backoff ----


def test_a_gang_with_one_pod_never_ready_is_evicted_whole_its_new_pods_wait_out_the_backoff_and_another_queue_uses_the_room(  # noqa: E501
    api: FakeApiServer,
) -> None:
    """6 nodes of 8 GPUs. Gang train (queue a, 4 x 8 GPUs) starts, but train-3's image cannot be
    pulled; gang other (queue b, 4 x 8 GPUs) waits for room. After readyTimeout train is evicted
    whole and its Job recreates it; the new pods wait out the backoff with the reason, while
    other takes the room; other finishes, and train starts whole once its backoff is over, not
    before."""
    add_nodes(api, 6)
    rules = lifecycle(readyTimeout="3s", requeue={"backoff": "3s", "maxBackoff": "1m", "limit": 5})
    with (
        cluster(api, **UNPULLED) as kubelets,
        Extender(api, CONFIG, policy=rules) as extender,
        controller(api, "train", 4, "a") as train,
    ):
        scheduler = KubeScheduler(api, extender)
        scheduler.settle(timeout=10, until=lambda: len(bound(api, "train")) == 4)
        first = pods_of(api, "train")
        for member in gang_pods("other", 4, gpu=8, labels={QUEUE: "b"}, job="other"):
            api.put("pods", member)
        clock = Clock()
        scheduler.settle(timeout=15, until=lambda: clock.note("evicted", len(evicted(api)) == 4))
        assert sorted(evicted(api)) == [f"train-{i}" for i in range(4)], "all four together"
        started = min(kubelets.started[p["metadata"]["uid"]] for p in first)
        assert clock.at["evicted"] - started >= 3.0, "not before readyTimeout"
        not_ready = "pods not ready within 3s (train-3: ImagePullBackOff)"
        assert (
            f"evicted by gangplank: gang default/train not ready in time: {not_ready}; "
            "requeued (1 of 5) (all its pods go together)"
        ) in messages(api, "not ready in time")
        kept = record(api)
        assert kept is not None and kept["count"] == 1 and kept["reason"] == not_ready
        next_try = kept["nextTry"]
        assert next_try == pytest.approx(kept["updated"] + 3.0)

        # the Job recreates train; its pods wait, and other takes the room meanwhile
        kubelets.trouble.clear()  # the image is fixed
        scheduler.settle(
            timeout=10,
            until=lambda: (
                clock.note("other bound", len(bound(api, "other")) == 4)
                and "default/train-0" in scheduler.parked
            ),
        )
        assert clock.at["other bound"] < next_try, "other ran during train's backoff"
        assert len(train.created) == 2 and bound(api, "train") == {}
        waiting = [
            scheduler.reasons[f"default/train-{i}"]
            for i in range(4)
            if f"default/train-{i}" in scheduler.reasons
        ]
        assert waiting and all(requeued(1, 5, not_ready).fullmatch(r) for r in waiting), waiting
        why = extender.get("/why?pod=default/train-0")
        assert requeued(1, 5, not_ready).search(json.dumps(why)), why

        # other finishes; train starts whole, once its backoff is over
        for member in pods_of(api, "other"):
            api.delete("pods", "default", member["metadata"]["name"])
        scheduler.settle(
            timeout=15, until=lambda: clock.note("train bound", len(bound(api, "train")) == 4)
        )
        assert len(bound(api, "train")) == 4, scheduler.reasons
        assert len(set(bound(api, "train").values())) == 4
        assert clock.at["train bound"] >= next_try, "not before the backoff ended"
        assert len(evicted(api)) == 4, "evicted once"


def test_the_requeue_limit_holds_the_job_with_its_reason_until_a_pod_is_annotated_retry_now(
    api: FakeApiServer,
) -> None:
    """limit 1: train (whose image cannot be pulled) is evicted and requeued once, starts again
    after its backoff, fails again and is evicted a second time: its new pods are held, with the
    reason, past any backoff; a person fixes the image and annotates one pod
    gangplank.io/retry: "now", and the job starts whole."""
    add_nodes(api, 4)
    rules = lifecycle(readyTimeout="2s", requeue={"backoff": "1s", "maxBackoff": "1m", "limit": 1})
    with (
        cluster(api, **UNPULLED) as kubelets,
        Extender(api, CONFIG, policy=rules) as extender,
        controller(api, "train", 4, "a") as train,
    ):
        scheduler = KubeScheduler(api, extender)
        scheduler.settle(timeout=20, until=lambda: len(evicted(api)) == 8)
        assert sorted(evicted(api)) == sorted(f"train-{i}" for i in range(4) for _ in range(2))
        not_ready = "pods not ready within 2s (train-3: ImagePullBackOff)"
        told = (
            f"evicted by gangplank: gang default/train not ready in time: {not_ready}; held "
            'until it is recreated or annotated gangplank.io/retry: "now" (all its pods go '
            "together)"
        )
        assert told in messages(api, "held until")
        kept = record(api)
        assert kept is not None and (kept["count"], kept["held"]) == (2, True)

        # held: past the 2 s a second backoff would have been
        scheduler.settle(timeout=3, until=lambda: False)
        assert len(train.created) == 3 and bound(api, "train") == {}
        assert scheduler.reasons["default/train-0"] == HELD.format(reason=not_ready)
        held = [{"job": "gang default/train", "requeues": 2, "reason": not_ready}]
        assert extender.get("/status")["heldJobs"] == held
        assert "gangplank_jobs_held 1.0" in extender.metrics()

        kubelets.trouble.clear()
        with api.cond:
            member = copy.deepcopy(api.state.objects["pods"]["default/train-0"])
        member["metadata"]["annotations"]["gangplank.io/retry"] = "now"  # as kubectl annotate
        api.put("pods", member)
        scheduler.settle(timeout=10, until=lambda: len(bound(api, "train")) == 4)
        assert len(bound(api, "train")) == 4, scheduler.reasons
        # the record's deletion is written after the next pass (lifecycle_io), not at the bind
        scheduler.settle(timeout=5, until=lambda: record(api) is None)
        assert record(api) is None, "started afresh"
        assert extender.get("/status")["heldJobs"] == []


# ---- broken gangs ----


def whole_gang(api: FakeApiServer, scheduler: KubeScheduler, kubelets: Kubelets) -> None:
    scheduler.settle(timeout=10, until=lambda: len(bound(api, "train")) == 4)
    wait_for(lambda: len(kubelets.started) == 4)
    time.sleep(0.5)  # reviewed whole


def lose(api: FakeApiServer, name: str, with_node: bool) -> float:
    """Pod `name` is gone (its node too: the node failed); its controller makes a new one."""
    with api.cond:
        lost = api.state.objects["pods"][f"default/{name}"]
        api.delete("pods", "default", name)
        if with_node:
            api.delete("nodes", "", lost["spec"]["nodeName"])
    at = time.time()
    members = gang_pods("train", 4, gpu=8, labels={QUEUE: "a"}, owner=unsuspendable("train"))
    replacement = members[int(name[-1])]
    api.put("pods", replacement)
    return at


def test_a_gang_that_lost_a_member_with_no_room_to_replace_it_is_evicted_after_the_grace_and_not_before(  # noqa: E501
    api: FakeApiServer,
) -> None:
    add_nodes(api, 4)
    with (
        cluster(api) as kubelets,
        Extender(api, CONFIG, policy=lifecycle(staleGangGrace="3s")) as extender,
    ):
        for member in gang_pods(
            "train", 4, gpu=8, labels={QUEUE: "a"}, owner=unsuspendable("train")
        ):
            api.put("pods", member)
        scheduler = KubeScheduler(api, extender)
        whole_gang(api, scheduler, kubelets)
        lost = lose(api, "train-3", with_node=True)  # the 3 nodes left are full
        clock = Clock()
        scheduler.settle(timeout=10, until=lambda: clock.note("evicted", len(evicted(api)) == 3))
        assert sorted(evicted(api)) == ["train-0", "train-1", "train-2"], scheduler.reasons
        assert clock.at["evicted"] - lost >= 3.0, "not before staleGangGrace"
        assert clock.at["evicted"] - lost < 8.0
        told = [m for m in messages(api, "lost members") if "lost members" in m]
        assert told and re.fullmatch(
            r"evicted by gangplank: gang default/train lost members and could not be completed: "
            r"runs 3 of its 4 pods since \ds and could not be completed within staleGangGrace "
            r"3s \(all its pods go together\)",
            told[0],
        ), told
        assert record(api) is None, "a broken gang is not requeued"
        assert 'rule="stale-gang"' in extender.metrics()


def test_a_gang_that_lost_a_member_whose_replacement_fits_is_completed_not_evicted(
    api: FakeApiServer,
) -> None:
    """The replacement lands on the spare node, whose kubelet pulls the image for longer than
    staleGangGrace: the gang is complete, not stale, and runs on."""
    add_nodes(api, 5)  # one node to spare
    rules = lifecycle(staleGangGrace="3s", readyTimeout="1m")
    with (
        cluster(api) as kubelets,
        Extender(api, CONFIG, policy=rules) as extender,
    ):
        for member in gang_pods(
            "train", 4, gpu=8, labels={QUEUE: "a"}, owner=unsuspendable("train")
        ):
            api.put("pods", member)
        scheduler = KubeScheduler(api, extender)
        whole_gang(api, scheduler, kubelets)
        kubelets.trouble["train-3"] = {"ready": False, "waiting": "ContainerCreating"}
        lost = lose(api, "train-3", with_node=True)
        scheduler.settle(timeout=10, until=lambda: len(bound(api, "train")) == 4)
        assert len(bound(api, "train")) == 4, scheduler.reasons
        scheduler.settle(timeout=lost + 4.0 - time.time(), until=lambda: False)
        assert evicted(api) == [], "past the grace, its replacement still starting: not stale"
        kubelets.ready("train-3")
        scheduler.settle(timeout=1.0, until=lambda: False)
        assert evicted(api) == [], "completed, not evicted"
        assert len(bound(api, "train")) == 4


# ---- max runtime ----


def test_a_job_past_its_max_runtime_is_evicted_whole_with_an_event_and_held(
    api: FakeApiServer,
) -> None:
    add_nodes(api, 4)
    with (
        cluster(api) as kubelets,
        Extender(api, CONFIG, policy=lifecycle(maxRuntime="3s")) as extender,
        controller(api, "train", 4, "a"),
    ):
        scheduler = KubeScheduler(api, extender)
        scheduler.settle(timeout=10, until=lambda: len(bound(api, "train")) == 4)
        first = pods_of(api, "train")
        clock = Clock()
        scheduler.settle(timeout=10, until=lambda: clock.note("evicted", len(evicted(api)) == 4))
        assert sorted(evicted(api)) == [f"train-{i}" for i in range(4)]
        started = min(kubelets.started[p["metadata"]["uid"]] for p in first)
        assert clock.at["evicted"] - started >= 3.0, "not before maxRuntime"
        ran = r"ran \ds, past its maxRuntime of 3s"
        told = [m for m in messages(api, "maxRuntime") if "maxRuntime" in m]
        assert told and re.fullmatch(
            r"evicted by gangplank: gang default/train ran past its maxRuntime: "
            + ran
            + r'; held until it is recreated or annotated gangplank.io/retry: "now" '
            r"\(all its pods go together\)",
            told[0],
        ), told

        def told_of() -> list[tuple[str, str]]:
            return [
                (e["involvedObject"]["name"], e["reason"])
                for e in posted(api)
                if "maxRuntime" in e["message"]
            ]

        wait_for(lambda: len([t for t in told_of() if t[1] == "MaxRuntimeExceeded"]) == 4)
        evictions = told_of()
        assert sorted(evictions) == [(f"train-{i}", "MaxRuntimeExceeded") for i in range(4)], (
            "one Event on each pod, and none saying a pod of the job preempts for it"
        )
        # the Job made new pods: they are held, saying why
        scheduler.settle(timeout=5, until=lambda: "default/train-0" in scheduler.parked)
        reason = scheduler.reasons["default/train-0"]
        assert re.fullmatch(re.escape(HELD).replace(r"\{reason\}", ran), reason), reason
        assert 'rule="max-runtime"' in extender.metrics()


# ---- a restart and a failover keep the count and the backoff ----


@pytest.mark.parametrize("how", ["restart", "failover"])
def test_a_restart_or_a_failover_keeps_the_requeue_count_and_the_backoff(
    api: FakeApiServer, how: str
) -> None:
    """train is evicted and requeued (1 of 5, backoff 3s); gangplank is killed right after. The
    next process (the same replica started again, or the standby taking the Lease) holds the new
    pods for the rest of that backoff with the same reason, and when train fails again counts
    it the second requeue, with the backoff doubled."""
    add_nodes(api, 4)
    rules = lifecycle(readyTimeout="2s", requeue={"backoff": "3s", "maxBackoff": "1m", "limit": 5})
    with contextlib.ExitStack() as stack:
        stack.enter_context(cluster(api, **UNPULLED))
        if how == "failover":
            api.state.leases[LEASE] = "a_1f2e"
            old = Extender(api, CONFIG, policy=rules, identity="a")
            standby = stack.enter_context(Extender(api, CONFIG, policy=rules, identity="b"))
        else:
            old = Extender(api, CONFIG, policy=rules)
        old.__enter__()
        try:
            stack.enter_context(controller(api, "train", 4, "a"))
            before = KubeScheduler(api, old)
            before.settle(timeout=15, until=lambda: len(evicted(api)) == 4)
            assert len(evicted(api)) == 4
            first = record(api)
            assert first is not None and first["count"] == 1
        finally:
            old.__exit__(None, None, None)
        if how == "failover":
            api.state.leases[LEASE] = "b_9c0d"
            new = standby
        else:
            new = stack.enter_context(Extender(api, CONFIG, policy=rules))
        after = KubeScheduler(api, new)
        clock = Clock()
        after.settle(
            timeout=15,
            until=lambda: clock.note("bound", len(bound(api, "train")) == 4),
        )
        assert clock.at["bound"] >= first["nextTry"], "the backoff outlived the process"
        not_ready = "pods not ready within 2s (train-3: ImagePullBackOff)"
        waited = after.reasons.get("default/train-0", "")
        assert requeued(1, 5, not_ready).fullmatch(waited), waited
        after.settle(timeout=10, until=lambda: len(evicted(api)) == 8)
        second = record(api)
        assert second is not None and second["count"] == 2, second
        assert second["nextTry"] - second["updated"] == pytest.approx(6.0), "3s doubled"
