"""gangplank nudges parked pods only while its kube-scheduler is the leader."""

from __future__ import annotations

from kubernetes import client

from extender.kicker import AlwaysLeader, ApiPatcher, Kicker, LeaseLeadership
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
