"""The waiting room (`core/waiting.py`): every pod parked by a "no" of gangplank's, why it waits,
and whom kube-scheduler should retry now — each parked pod once, when what it waits for came."""

from __future__ import annotations

from typing import Any

from extender.core.gangs.gang import Gang, resolve_gang
from extender.core.model.notices import Outbox
from extender.core.model.rejection import Rejection
from extender.core.model.snapshot import PodInfo
from extender.core.waiting import FORGET_SECONDS, GANG_FORGET_SECONDS, WaitingRoom
from extender.kube.convert import pod_from_api
from tests.builders import gang_pods, node, pod
from tests.cluster import Cluster

GANG = "gangplank:default/g"
INTERVAL = 5.0


def room() -> tuple[WaitingRoom, Outbox]:
    outbox = Outbox()
    return WaitingRoom(outbox), outbox


def ref(raw: dict[str, Any]) -> tuple[str, str]:
    return (raw["metadata"]["namespace"], raw["metadata"]["name"])


def info(raw: dict[str, Any]) -> PodInfo:
    return pod_from_api(raw)


def gang_in(cluster: Cluster) -> Gang:
    return resolve_gang(cluster.snap(), GANG)


def never(key: str, uid: str) -> bool | None:
    return None


def cannot_fit(gang: Gang) -> bool:
    return False


# ---- gangs ------------------------------------------


def test_members_parked_before_their_gang_got_a_plan_are_nudged_but_the_one_asking() -> None:
    members = gang_pods("g", 3, gpu=8)
    cluster = Cluster(nodes=[node("n0")], pods=members)
    waiting, _ = room()
    for member in members:
        waiting.park(gang_in(cluster), info(member), Rejection.NO_ROOM, "no room", 0.0)
    assert list(waiting.gang_keys()) == [GANG]
    uids = [m["metadata"]["uid"] for m in members]
    waiting.planned(GANG, asking=uids[0])
    assert list(waiting.gang_keys()) == [], "planned: it waits no more"
    nudged = waiting.gang_nudges(cluster.snap(), 1.0, INTERVAL, never, cannot_fit)
    assert nudged == [ref(members[1]), ref(members[2])], (
        "g-0 asked (it is being answered); g-2, were the plan without it, is told why it waits"
    )
    assert waiting.gang_nudges(cluster.snap(), 2.0, INTERVAL, never, cannot_fit) == [], "once"


def test_a_plan_for_a_gang_nobody_parked_nudges_no_one() -> None:
    waiting, _ = room()
    waiting.planned(GANG, asking="")
    assert waiting.gang_nudges(Cluster().snap(), 0.0, INTERVAL, never, cannot_fit) == []


def test_a_planned_member_waiting_for_victims_is_nudged_once_they_are_gone() -> None:
    member = gang_pods("g", 1, gpu=8)[0]
    waiting, _ = room()
    waiting.awaits_victims(info(member), GANG, waits=True)
    left = {"answer": False}

    def victims_gone(key: str, uid: str) -> bool | None:
        assert (key, uid) == (GANG, member["metadata"]["uid"])
        return left["answer"]

    snapshot = Cluster().snap()
    assert waiting.gang_nudges(snapshot, 0.0, INTERVAL, victims_gone, cannot_fit) == []
    left["answer"] = True
    assert waiting.gang_nudges(snapshot, 1.0, INTERVAL, victims_gone, cannot_fit) == [ref(member)]
    assert waiting.gang_nudges(snapshot, 2.0, INTERVAL, victims_gone, cannot_fit) == [], "once"


def test_a_member_waiting_for_victims_of_a_plan_gone_or_let_through_is_forgotten() -> None:
    member = gang_pods("g", 1, gpu=8)[0]
    snapshot = Cluster().snap()
    waiting, _ = room()
    waiting.awaits_victims(info(member), GANG, waits=True)
    assert waiting.gang_nudges(snapshot, 0.0, INTERVAL, never, cannot_fit) == [], "no plan now"
    waiting.awaits_victims(info(member), GANG, waits=True)
    waiting.awaits_victims(info(member), GANG, waits=False)  # its filter passed it

    def gone(key: str, uid: str) -> bool | None:
        return True

    assert waiting.gang_nudges(snapshot, 1.0, INTERVAL, gone, cannot_fit) == []


def test_an_incomplete_gangs_parked_members_are_nudged_once_it_is_complete() -> None:
    members = gang_pods("g", 2, gpu=8)
    cluster = Cluster(nodes=[node("n0")], pods=members[:1])
    waiting, _ = room()
    waiting.park(gang_in(cluster), info(members[0]), Rejection.INCOMPLETE, "1 of 2", 0.0)
    assert waiting.parked_kind(GANG, members[0]["metadata"]["uid"]) is Rejection.INCOMPLETE
    assert waiting.gang_nudges(cluster.snap(), 0.0, INTERVAL, never, cannot_fit) == []
    cluster.add("pods", members[1])
    assert waiting.gang_nudges(cluster.snap(), 1.0, INTERVAL, never, cannot_fit) == [
        ref(members[0])
    ]
    assert waiting.parked_kind(GANG, members[0]["metadata"]["uid"]) is None


def test_an_invalid_gangs_parked_members_are_nudged_once_it_is_valid() -> None:
    members = gang_pods("g", 2, gpu=8)
    spoiled = [
        {**m, "metadata": {**m["metadata"], "annotations": {"gangplank.io/gang-size": "two"}}}
        for m in members
    ]
    cluster = Cluster(nodes=[node("n0")], pods=spoiled)
    waiting, _ = room()
    assert gang_in(cluster).problem
    waiting.park(gang_in(cluster), info(spoiled[0]), Rejection.INVALID, "size", 0.0)
    assert waiting.gang_nudges(cluster.snap(), 0.0, INTERVAL, never, cannot_fit) == []
    cluster.add("pods", *members)
    assert waiting.gang_nudges(cluster.snap(), 1.0, INTERVAL, never, cannot_fit) == [
        ref(members[0])
    ]


def test_a_gang_lacking_room_is_dry_run_once_per_change_and_interval_and_nudged_if_it_fits() -> (
    None
):
    members = gang_pods("g", 2, gpu=8)
    cluster = Cluster(nodes=[node("n0")], pods=members)
    waiting, _ = room()
    waiting.park(gang_in(cluster), info(members[0]), Rejection.NO_ROOM, "no room", 0.0)
    runs: list[float] = []
    fits = {"now": False}

    def dry_run(gang: Gang) -> bool:
        runs.append(len(runs))
        return fits["now"]

    assert waiting.gang_nudges(cluster.snap(), 10.0, INTERVAL, never, dry_run) == []
    assert waiting.gang_nudges(cluster.snap(), 20.0, INTERVAL, never, dry_run) == []
    assert len(runs) == 1, "the cluster did not change: no second dry run"
    cluster.add("nodes", node("n1", gpu=4))
    assert waiting.gang_nudges(cluster.snap(), 22.0, INTERVAL, never, dry_run) == []
    assert len(runs) == 2
    cluster.add("nodes", node("n2"))
    fits["now"] = True
    assert waiting.gang_nudges(cluster.snap(), 24.0, INTERVAL, never, dry_run) == []
    assert len(runs) == 2, "changed again, but less than an interval since the last dry run"
    assert waiting.gang_nudges(cluster.snap(), 27.0, INTERVAL, never, dry_run) == [ref(members[0])]
    assert len(runs) == 3


def test_a_gang_is_nudged_at_most_once_per_interval() -> None:
    members = gang_pods("g", 2, gpu=8)
    cluster = Cluster(nodes=[node("n0")], pods=members)
    waiting, _ = room()
    waiting.park(gang_in(cluster), info(members[0]), Rejection.INVALID, "", 0.0)
    assert waiting.gang_nudges(cluster.snap(), 10.0, INTERVAL, never, cannot_fit) == [
        ref(members[0])
    ]
    waiting.park(gang_in(cluster), info(members[1]), Rejection.INVALID, "", 11.0)
    assert waiting.gang_nudges(cluster.snap(), 14.0, INTERVAL, never, cannot_fit) == []
    assert waiting.gang_nudges(cluster.snap(), 15.0, INTERVAL, never, cannot_fit) == [
        ref(members[1])
    ]


def test_a_gang_whose_pods_are_all_gone_is_forgotten_a_minute_after_it_was_parked() -> None:
    g, h = gang_pods("g", 2, gpu=8), gang_pods("h", 2, gpu=8)
    cluster = Cluster(nodes=[node("n0")], pods=[*g, *h])
    waiting, _ = room()
    waiting.park(gang_in(cluster), info(g[0]), Rejection.NO_ROOM, "", 0.0)
    h_gang = resolve_gang(cluster.snap(), "gangplank:default/h")
    waiting.park(h_gang, info(h[0]), Rejection.NO_ROOM, "", 30.0)
    assert waiting.rank(cluster.snap(), GANG) is not None
    cluster.delete("pods", *g, *h)
    waiting.forget_gone(cluster.snap(), GANG_FORGET_SECONDS)
    assert waiting.gangs_waiting() == 2, "the cache may lag behind kube-scheduler"
    waiting.forget_gone(cluster.snap(), GANG_FORGET_SECONDS + 1)
    assert list(waiting.gang_keys()) == ["gangplank:default/h"], "h was parked 31 s ago"
    assert waiting.rank(cluster.snap(), GANG) is None
    waiting.forget_gone(cluster.snap(), GANG_FORGET_SECONDS + 30)
    assert waiting.gangs_waiting() == 1
    waiting.forget_gone(cluster.snap(), GANG_FORGET_SECONDS + 31)
    assert waiting.gangs_waiting() == 0


# ---- queues ------------------------------------------


def test_a_refusal_is_told_on_the_pod_once_per_rule() -> None:
    p = info(pod("p"))
    waiting, outbox = room()
    key = "pod:default/p"
    assert waiting.refuse(key, p, "q", "max", "queue q is at its max", 0.0)
    assert not waiting.refuse(key, p, "q", "max", "queue q is at its max (again)", 1.0)
    notices = outbox.take()
    assert [(n.job, n.reason, n.message, n.pod) for n in notices] == [
        (key, "QueueHeld", "queue q is at its max", p)
    ]
    assert waiting.reason_of(key) == "queue q is at its max (again)"
    assert waiting.refuse(key, p, "q", "closed", "queue q is closed", 2.0), "another rule: news"
    assert [n.message for n in outbox.take()] == ["queue q is closed"]
    refused = waiting.refusal_of(key)
    assert refused is not None and (refused.rule, refused.since) == ("closed", 2.0)


def test_a_refusal_without_a_reason_is_written_down_but_not_told() -> None:
    p = info(pod("p"))
    waiting, outbox = room()
    assert waiting.refuse("pod:default/p", p, "q", "max", None, 0.0)
    assert outbox.take() == [] and waiting.is_refused("pod:default/p")


def test_refused_jobs_their_queue_admits_now_are_nudged_and_nothing_new_is_none() -> None:
    a, b = pod("a"), pod("b")
    waiting, _ = room()
    waiting.refuse("pod:default/a", info(a), "q", "max", "full", 0.0)
    waiting.refuse("pod:default/b", info(b), "q", "max", "full", 0.0)
    pods = {"pod:default/a": (info(a),), "pod:default/b": (info(b),)}
    admitted: set[str] = set()

    def nudges(seen: object, now: float, changed: bool = False) -> list[tuple[str, str]] | None:
        return waiting.queue_nudges(
            pods.get, admitted.__contains__, (seen,), changed, now, INTERVAL
        )

    assert nudges("book-1", 1.0) == []
    assert nudges("book-1", 2.0) is None, "the same book, the same refusals: nothing new"
    assert nudges("book-1", 3.0, changed=True) == [], "a new policy: looked at again"
    admitted.add("pod:default/a")
    assert nudges("book-2", 4.0) == [ref(a)]
    assert not waiting.is_refused("pod:default/a") and waiting.is_refused("pod:default/b")
    admitted.add("pod:default/b")
    assert nudges("book-3", 5.0) == [ref(b)]


def test_a_pod_refused_for_a_queue_that_did_not_exist_is_nudged_when_the_policy_changes() -> None:
    p = pod("p")
    waiting, _ = room()
    waiting.refuse("pod:default/p", info(p), "", "unknown-queue", "no such queue", 0.0)

    def not_waiting(key: str) -> None:
        return None

    def nudges(changed: bool, now: float) -> list[tuple[str, str]] | None:
        return waiting.queue_nudges(not_waiting, bool, ("book",), changed, now, INTERVAL)

    assert nudges(False, 1.0) == [], "not in the book: the same policy knows it no better"
    assert nudges(True, 2.0) == [ref(p)]
    assert not waiting.is_refused("pod:default/p")


def test_a_refused_job_that_waits_no_more_is_forgotten_after_ten_minutes() -> None:
    waiting, _ = room()
    waiting.refuse("pod:default/p", info(pod("p")), "q", "max", "full", 0.0)

    def not_waiting(key: str) -> None:
        return None

    assert waiting.queue_nudges(not_waiting, bool, ("book-1",), False, FORGET_SECONDS, 5.0) == []
    assert waiting.is_refused("pod:default/p")
    assert (
        waiting.queue_nudges(not_waiting, bool, ("book-2",), False, FORGET_SECONDS + 1, 5.0) == []
    )
    assert not waiting.is_refused("pod:default/p")


# ---- a stale view, and nudges handed in ------------------------------------------


def test_a_pod_told_to_wait_for_a_fresh_view_is_handed_in_once_it_is_fresh() -> None:
    p = pod("p", labels={"gangplank.io/gang": "g"})
    waiting, _ = room()
    result = waiting.wait_for_fresh_view(info(p), GANG, "q", "watch lost", ["n0", "n1"], 0.0)
    assert result.passed == [] and set(result.unresolvable) == {"n0", "n1"}
    assert result.unresolvable["n0"] == (
        "gang default/g (queue q) waits: gangplank's view of the cluster is stale (watch lost); "
        "gangs and queued jobs are not planned or admitted on it until it is fresh "
        "(pods outside gangs and queues are still scheduled)"
    )
    assert waiting.reason_of(GANG) == result.unresolvable["n0"]
    later = pod("later")
    waiting.nudge_later({"uid-later": ref(later)})
    assert waiting.handed_in(fresh=False, now=0.0) == [ref(later)], "handed in: nudged in any case"
    assert waiting.handed_in(fresh=True, now=0.0) == [ref(p)]
    assert waiting.handed_in(fresh=True, now=0.0) == [], "once"


def test_a_pod_waiting_out_a_backoff_is_handed_in_when_it_ends_and_only_then() -> None:
    waiting = WaitingRoom(Outbox())
    p = pod_from_api(pod("again"))
    waiting.nudge_at(p, 100.0)
    assert waiting.handed_in(fresh=True, now=99.0) == []
    assert waiting.handed_in(fresh=True, now=100.0) == [("default", "again")]
    assert waiting.handed_in(fresh=True, now=101.0) == [], "once"
