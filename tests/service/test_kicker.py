"""gangplank nudges parked pods only while its kube-scheduler is the leader."""

from __future__ import annotations

import logging
import threading
import time
import types

import orjson
import pytest
from kubernetes import client
from prometheus_client import generate_latest

from extender.kube.leader import AlwaysLeader, LeaseLeadership
from extender.kube.patcher import ApiPatcher
from extender.observe.metrics import Metrics
from extender.service.kicker import Kicker
from tests.builders import pod
from tests.fakeapi import FakeApiServer


def lease_check(api: FakeApiServer, identity: str) -> LeaseLeadership:
    coordination = client.CoordinationV1Api(client.ApiClient(client.Configuration(host=api.url)))
    return LeaseLeadership(
        coordination, "gangplank", "gangplank-scheduler", identity, cache_seconds=0
    )


def test_leader_while_the_scheduler_lease_is_held_by_this_pod(fake_api: FakeApiServer) -> None:
    check = lease_check(fake_api, "gangplank-7d9f-abcde")
    assert not check.is_leader(), "no Lease yet: not leader"
    fake_api.state.leases["gangplank/gangplank-scheduler"] = "gangplank-7d9f-abcde_1b2c-33"
    assert check.is_leader()
    fake_api.state.leases["gangplank/gangplank-scheduler"] = "gangplank-7d9f-zzzzz_9f8e-11"
    assert not check.is_leader(), "the other replica leads"


def test_a_scheduler_without_leader_election_counts_as_leader() -> None:
    assert AlwaysLeader().is_leader()


def test_parked_pods_are_patched_only_by_the_leader(fake_api: FakeApiServer) -> None:
    fake_api.put("pods", pod("w-0"))
    core = client.CoreV1Api(client.ApiClient(client.Configuration(host=fake_api.url)))
    follower = Kicker(lambda: [("default", "w-0")], ApiPatcher(core), lease_check(fake_api, "me"))
    fake_api.state.leases["gangplank/gangplank-scheduler"] = "other_1"
    assert follower.run_once() == 0 and fake_api.state.patches == []
    fake_api.state.leases["gangplank/gangplank-scheduler"] = "me_1"
    assert follower.run_once() == 1
    namespace, name, body = fake_api.state.patches[0]
    assert (namespace, name) == ("default", "w-0")
    assert "gangplank.io/retry-at" in body["metadata"]["annotations"]


def test_nudging_a_pod_that_is_gone_is_harmless(fake_api: FakeApiServer) -> None:
    core = client.CoreV1Api(client.ApiClient(client.Configuration(host=fake_api.url)))
    ApiPatcher(core).kick("default", "ghost")
    assert fake_api.state.patches == []


class _Patcher:
    def __init__(self) -> None:
        self.kicked: list[tuple[str, str]] = []

    def kick(self, namespace: str, name: str) -> None:
        if name == "broken":
            raise RuntimeError("the API client fell over")
        self.kicked.append((namespace, name))

    def annotate(self, namespace: str, name: str, key: str, value: str) -> bool:
        return True


def test_a_step_of_the_periodic_pass_that_raises_is_logged_counted_and_the_pass_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A bug in one step (here the look for late CRDs, and one nudge) neither silences the other
    steps nor later passes: each failure is counted by step, and logged with its traceback the
    first time (`steps.py`: a failure that repeats is told once a minute)."""
    errors: list[str] = []
    told: list[str] = []

    def every() -> None:
        raise ValueError("a bug in the look for late CRDs")

    patcher = _Patcher()
    kicker = Kicker(
        lambda: [("ns", "broken"), ("ns", "fine")],
        patcher,
        AlwaysLeader(),
        every=every,
        after=lambda: told.append("events"),
        on_error=errors.append,
    )
    with caplog.at_level(logging.ERROR, logger="gangplank.kick"):
        assert kicker.run_once() == 2
        kicker.run_once()
    assert patcher.kicked == [("ns", "fine")] * 2, "the other nudge went out, both passes"
    assert told == ["events", "events"], "the pass's last step ran"
    assert errors == ["every", "nudge", "every", "nudge"]
    failed = [r for r in caplog.records if "periodic pass: step" in r.getMessage()]
    assert len(failed) == 2 and all(r.exc_info for r in failed), "logged with the traceback"
    assert ["'every'" in failed[0].getMessage(), "'nudge'" in failed[1].getMessage()] == [1, 1]


def test_periodic_errors_are_exported_by_step() -> None:
    metrics = Metrics()

    def events() -> None:
        raise ZeroDivisionError("a bug in telling")

    runtime_like = Kicker(
        lambda: [],
        _Patcher(),
        AlwaysLeader(),
        after=events,
        on_error=lambda step: metrics.periodic_errors.labels(step).inc(),
    )
    runtime_like.run_once()
    text = generate_latest(metrics.registry).decode()
    assert 'gangplank_periodic_errors_total{step="events"} 1.0' in text


class _LateLease:
    """A Lease read that can be held: the first read's answer (this pod holds it) comes only
    when `release` is set, after a later read found the other replica holding it."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.reads = 0

    def read_namespaced_lease(self, name: str, namespace: str, **_: object) -> object:
        self.reads += 1
        if self.reads == 1:
            self.release.wait(5)
            holder = "gangplank-a_1"
        else:
            holder = "gangplank-b_2"
        body = orjson.dumps({"spec": {"holderIdentity": holder}})
        return types.SimpleNamespace(data=body, release_conn=lambda: None)


def test_a_lease_read_answered_late_does_not_undo_a_later_read_that_found_it_lost() -> None:
    lease = _LateLease()
    check = LeaseLeadership(lease, "gangplank", "gangplank-scheduler", "gangplank-a", 0)
    early = threading.Thread(target=check.is_leader)
    early.start()
    while lease.reads == 0:
        time.sleep(0.01)
    assert not check.is_leader(), "the later read: the other replica holds the Lease"
    lease.release.set()
    early.join(5)
    assert not check.last_known(), "the early read's answer came last, but is older"
