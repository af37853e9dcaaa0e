"""The reservations (`core/gangs/reservations.py`): one install path, one release path, the plans'
notices, and what the others ask of them (by job, by member, by node)."""

from __future__ import annotations

from typing import Any

from extender.core.gangs.hold import Hold
from extender.core.gangs.plans import Plan
from extender.core.gangs.reservations import Reservations
from extender.core.model.answers import BindRequest
from extender.core.model.notices import Outbox
from extender.core.model.resources import GPU
from extender.core.model.snapshot import Snapshot
from extender.kube.convert import pod_from_api
from tests.builders import gang_pods, node, pod
from tests.cluster import Cluster

A = "gangplank:default/a"
B = "gangplank:default/b"
DEADLINE = 100.0


class Listener:
    """Who listens to plans installed (the waiting room, in the engine)."""

    def __init__(self) -> None:
        self.heard: list[tuple[str, str]] = []

    def __call__(self, key: str, asking: str) -> None:
        self.heard.append((key, asking))


def bound(raw: dict[str, Any], on: str) -> dict[str, Any]:
    return {**raw, "spec": {**raw["spec"], "nodeName": on}, "status": {"phase": "Running"}}


def two_gangs() -> tuple[Cluster, list[dict[str, Any]], list[dict[str, Any]]]:
    a, b = gang_pods("a", 2, gpu=4), gang_pods("b", 1, gpu=4)
    return Cluster(nodes=[node("n0"), node("n1")], pods=[*a, *b]), a, b


def plan_of(snapshot: Snapshot, key: str, nodes: list[str], **victims: str) -> Plan:
    """Job `key`'s members placed in name order on `nodes`."""
    members = sorted(snapshot.groups[key], key=lambda p: p.name)
    assignments = {p.uid: n for p, n in zip(members, nodes, strict=True)}
    return Plan.with_victims(key, members, assignments, victims, DEADLINE)


def parts() -> tuple[Reservations, Outbox, Listener]:
    outbox, listener = Outbox(), Listener()
    return Reservations(outbox, on_planned=listener), outbox, listener


def test_a_plan_installed_is_announced_counted_and_told_to_the_listener() -> None:
    cluster, a, _ = two_gangs()
    reservations, outbox, listener = parts()
    version = reservations.version
    reservations.install(plan_of(cluster.snap(), A, ["n0", "n0"]), asking=a[0]["metadata"]["uid"])
    notices = outbox.take()
    assert [(n.job, n.reason, n.message) for n in notices] == [
        (A, "GangPlanned", "gang default/a: 2 members planned whole on n0")
    ]
    assert reservations.outcomes.planned == 1 and reservations.version == version + 1
    assert listener.heard == [(A, a[0]["metadata"]["uid"])]
    assert A in reservations and len(reservations) == 1 and reservations.pods() == 2


def test_a_restored_plan_is_neither_announced_nor_counted_again_but_the_listener_hears_it() -> None:
    cluster, _, _ = two_gangs()
    reservations, outbox, listener = parts()
    reservations.install(plan_of(cluster.snap(), A, ["n0", "n1"]), restored=True)
    assert outbox.take() == [] and reservations.outcomes.planned == 0
    assert listener.heard == [(A, "")]
    assert A in reservations


def test_a_release_gives_the_capacity_back_and_says_it_shrank() -> None:
    cluster, _, _ = two_gangs()
    reservations, outbox, _ = parts()
    reservations.install(plan_of(cluster.snap(), A, ["n0", "n1"]))
    version, released = reservations.version, reservations.released_version
    reservations.release(B)
    assert (reservations.version, reservations.released_version) == (version, released)
    reservations.release(A)
    assert A not in reservations and list(reservations.nodes()) == []
    assert (reservations.version, reservations.released_version) == (version + 1, released + 1)
    outbox.take()
    assert outbox.take() == [], "a release is no news to tell"


def test_a_plan_not_used_by_its_deadline_expires_at_sync_with_a_warning() -> None:
    cluster, _, _ = two_gangs()
    reservations, outbox, _ = parts()
    reservations.install(plan_of(cluster.snap(), A, ["n0", "n1"]))
    outbox.take()
    reservations.sync(cluster.snap(), DEADLINE)
    assert A in reservations and outbox.take() == [], "at its deadline: still reserved"
    reservations.sync(cluster.snap(), DEADLINE + 1)
    notices = outbox.take()
    assert [(n.job, n.reason, n.warning) for n in notices] == [(A, "GangPlanExpired", True)]
    assert A not in reservations and reservations.outcomes.expired == 1


def test_members_that_bind_give_up_their_place_and_the_last_one_ends_the_plan() -> None:
    cluster, a, _ = two_gangs()
    reservations, _, _ = parts()
    reservations.install(plan_of(cluster.snap(), A, ["n0", "n1"]))
    cluster.add("pods", bound(a[0], "n0"))
    reservations.sync(cluster.snap(), 10.0)
    plan = reservations.get(A)
    assert plan is not None and list(plan.assignments.values()) == ["n1"]
    assert list(reservations.holders_on("n0")) == [] and list(reservations.holders_on("n1")) == [A]
    cluster.add("pods", bound(a[1], "n1"))
    reservations.sync(cluster.snap(), 10.0)
    assert A not in reservations
    assert len(reservations.outcomes.start_latencies) == 1, "the gang runs whole"
    assert reservations.outcomes.expired == 0


def test_a_member_the_cache_has_not_shown_keeps_its_place_until_it_was_seen_and_went() -> None:
    a = gang_pods("a", 2, gpu=4)
    members = [pod_from_api(p) for p in a]
    cluster = Cluster(nodes=[node("n0")], pods=a[:1])
    reservations, _, _ = parts()
    assignments = {p.uid: "n0" for p in members}
    reservations.install(Plan.with_victims(A, members, assignments, {}, DEADLINE))
    reservations.sync(cluster.snap(), 1.0)
    assert reservations.pods() == 2, "never seen: kube-scheduler may be ahead of the cache"
    cluster.add("pods", a[1])
    reservations.sync(cluster.snap(), 2.0)
    cluster.delete("pods", a[1])
    reservations.sync(cluster.snap(), 3.0)
    assert reservations.pods() == 1, "seen, then gone: its place is given up"


def test_members_are_found_by_uid_and_bind_only_to_their_planned_node() -> None:
    cluster, _, b = two_gangs()
    reservations, _, _ = parts()
    snapshot = cluster.snap()
    reservations.install(plan_of(snapshot, A, ["n0", "n1"]))
    first, second = (snapshot.groups[A][i] for i in (0, 1))
    assert reservations.planned_node(first) == "n0" and reservations.job_of(first.uid) == A
    assert reservations.planned_node(snapshot.groups[B][0]) is None
    assert reservations.job_of(b[0]["metadata"]["uid"]) is None
    wrong = reservations.check_bind(BindRequest("default", "a-0", first.uid, "n1"))
    assert (wrong.allowed, wrong.reason) == (False, "pod default/a-0 is planned on node n0, not n1")
    assert reservations.check_bind(BindRequest("default", "a-0", first.uid, "n0")).allowed
    assert reservations.check_bind(BindRequest("default", "b-0", b[0]["metadata"]["uid"], "n1"))
    assert reservations.bound(first.uid) is None, "one member still to bind"
    assert reservations.bound(second.uid) == A, "the last member bound: the job starts"
    assert reservations.bound(second.uid) is None and A in reservations


def test_free_capacity_is_less_other_jobs_reservations_and_another_jobs_hold() -> None:
    cluster, _, _ = two_gangs()
    reservations, _, _ = parts()
    snapshot = cluster.snap()
    reservations.install(plan_of(snapshot, A, ["n0", "n0"]))
    n0 = snapshot.nodes["n0"]
    assert reservations.free_for(n0, None, None)[GPU] == 0
    assert reservations.free_for(n0, B, None)[GPU] == 0
    assert reservations.free_for(n0, A, None)[GPU] == 8, "its own is not taken"
    assert reservations.free_for(n0, B, None)["cpu"] == 30_000, "two 1-cpu members planned"
    assert reservations.free_for(n0, A, None, only={GPU}) == {GPU: 8}
    # A hold for gang b, begun when n1 had nothing free: all 8 GPUs have freed up since.
    hold = Hold(B, DEADLINE, {GPU: 8}, frozenset({"n0", "n1"}), {"n1": {GPU: 0}}, {})
    n1 = snapshot.nodes["n1"]
    assert reservations.free_for(n1, None, hold, only={GPU}) == {GPU: 0}
    assert reservations.free_for(n1, A, hold, only={GPU}) == {GPU: 0}, "another job's hold"
    assert reservations.free_for(n1, B, hold, only={GPU}) == {GPU: 8}, "the holder's own"


def test_a_preemption_plan_waits_for_its_victims_and_is_counted_on_them() -> None:
    low = pod("low", node="n0", gpu=8, phase="Running")
    a = gang_pods("a", 1, gpu=8)
    cluster = Cluster(nodes=[node("n0")], pods=[low, *a])
    reservations, _, _ = parts()
    snapshot = cluster.snap()
    member = snapshot.groups[A][0]
    victim = low["metadata"]["uid"]
    assert reservations.victims_gone(snapshot, A, member.uid) is None, "no plan"
    reservations.install(plan_of(snapshot, A, ["n0"], **{victim: "n0"}))
    assert reservations.leaving() == {victim}
    assert reservations.counting_on({victim, "other"}) == [A]
    assert reservations.counting_on({"other"}) == []
    assert reservations.victims_gone(snapshot, A, member.uid) is False
    assert reservations.victims_gone(snapshot, A, "not-a-member") is None
    cluster.delete("pods", low)
    assert reservations.victims_gone(cluster.snap(), A, member.uid) is True


def test_amounts_are_the_requests_of_members_not_bound_yet_by_job() -> None:
    cluster, a, _ = two_gangs()
    reservations, _, _ = parts()
    snapshot = cluster.snap()
    reservations.install(plan_of(snapshot, A, ["n0", "n1"]))
    reservations.install(plan_of(snapshot, B, ["n1"]))
    assert reservations.amounts()[A][GPU] == 8 and reservations.amounts()[B][GPU] == 4
    reservations.bound(a[0]["metadata"]["uid"])
    assert reservations.amounts()[A][GPU] == 4
    assert sorted(reservations.holders_on("n1")) == [A, B]
    taken = reservations.take_outcomes(failures=reservations.outcomes.failures)
    assert taken.planned == 2 and reservations.outcomes.planned == 0, "taken: counted anew"
