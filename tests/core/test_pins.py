"""Behaviours pinned through the engine's public verbs only (`filter`, `preempt`,
`kick_candidates`, `take_notices`), so that they outlive any rearrangement of what is inside:
members parked before their gang had a plan are nudged as soon as it has one; the gang first in
line that lacks room is told it holds freed capacity; a plan not used in time is released with a
warning."""

from __future__ import annotations

from typing import Any

from extender.core.engine import Engine
from extender.core.model.answers import Victims
from extender.core.model.notices import Notice
from extender.kube.convert import pod_from_api
from tests.builders import gang_pods, node, pod
from tests.cluster import Cluster

GANG = "gangplank:default/g"
RESERVATION_SECONDS = 60.0  # the default reservation of a plan
HOLD_SECONDS = 120.0  # the default hold
NOW = 1_800_000_000.0  # after the builders' pods were created (2026-12-01): they have run a while


def nodes(count: int) -> list[dict[str, Any]]:
    return [node(f"n{i}", gpu=8, cpu="64") for i in range(count)]


def ask(co: Engine, cluster: Cluster, raw: dict[str, Any], now: float) -> list[str]:
    """kube-scheduler's filter of one pod on every node; the nodes kept."""
    snapshot = cluster.snap()
    return co.filter(snapshot, pod_from_api(raw), sorted(snapshot.nodes), now).passed


def reasons(notices: list[Notice]) -> list[tuple[str, str]]:
    return [(n.job, n.reason) for n in notices]


def test_a_member_parked_while_its_gang_was_incomplete_is_nudged_once_another_member_plans_it() -> (
    None
):
    members = gang_pods("g", 2, gpu=8)
    cluster = Cluster(nodes=nodes(2), pods=members[:1])
    co = Engine()
    assert ask(co, cluster, members[0], NOW) == [], "1 of 2 pods exist: parked"
    cluster.add("pods", members[1])
    assert len(ask(co, cluster, members[1], NOW)) == 1, "the gang is planned whole"
    assert co.kick_candidates(cluster.snap(), NOW) == [("default", "g-0")]
    assert co.kick_candidates(cluster.snap(), NOW) == [], "nudged once"


def test_a_member_parked_for_want_of_room_is_nudged_once_another_member_plans_the_gang() -> None:
    members = gang_pods("g", 2, gpu=8)
    cluster = Cluster(nodes=nodes(1), pods=members)
    co = Engine()
    assert ask(co, cluster, members[0], NOW) == [], "one 8-GPU node for two 8-GPU members"
    cluster.add("nodes", node("n1", gpu=8, cpu="64"))
    assert len(ask(co, cluster, members[1], NOW)) == 1, "room came: planned"
    assert co.kick_candidates(cluster.snap(), NOW) == [("default", "g-0")]


def test_a_member_parked_before_preemption_planned_its_gang_is_nudged_right_after() -> None:
    low = pod("low", node="n0", gpu=8, phase="Running", priority=0)
    members = gang_pods("g", 2, gpu=4, priority=100)
    cluster = Cluster(nodes=nodes(1), pods=[low, members[0]])
    co = Engine()
    assert ask(co, cluster, members[0], NOW) == [], "1 of 2 pods exist: parked"
    cluster.add("pods", members[1])
    # kube-scheduler's own filters find no room for the second member: it asks to preempt.
    candidates = {"n0": Victims((low["metadata"]["uid"],))}
    co.preempt(cluster.snap(), pod_from_api(members[1]), candidates, NOW)
    assert GANG in co.reservations, "the gang is planned on what the low-priority pod frees"
    assert co.kick_candidates(cluster.snap(), NOW) == [("default", "g-0")]


def test_the_first_gang_lacking_room_is_told_once_that_it_holds_freed_capacity() -> None:
    plain = pod("plain", node="n0", gpu=8, phase="Running")
    members = gang_pods("g", 2, gpu=8)
    cluster = Cluster(nodes=nodes(2), pods=[plain, *members])
    co = Engine()
    assert co.take_notices() == []
    assert ask(co, cluster, members[0], NOW) == [], "one free node for two 8-GPU members"
    notices = co.take_notices()
    assert reasons(notices) == [(GANG, "GangHolding")]
    assert notices[0].message == (
        f"gang default/g is first in line: capacity freed on the nodes it can use is kept for it "
        f"for up to {HOLD_SECONDS:.0f} s"
    )
    assert not notices[0].warning
    assert ask(co, cluster, members[1], NOW + 1) == []
    co.kick_candidates(cluster.snap(), NOW + 2)
    assert co.take_notices() == [], "still the holder: not told again"


def test_a_plan_not_used_within_its_reservation_is_released_with_a_warning() -> None:
    members = gang_pods("g", 2, gpu=8)
    cluster = Cluster(nodes=nodes(2), pods=members)
    co = Engine()
    assert len(ask(co, cluster, members[0], NOW)) == 1
    assert reasons(co.take_notices()) == [(GANG, "GangPlanned")]
    co.kick_candidates(cluster.snap(), NOW + RESERVATION_SECONDS / 2)
    assert co.take_notices() == [] and GANG in co.reservations, "still reserved half-way"
    co.kick_candidates(cluster.snap(), NOW + RESERVATION_SECONDS + 1)
    notices = co.take_notices()
    assert reasons(notices) == [(GANG, "GangPlanExpired")]
    assert notices[0].warning
    assert "reservation expired" in notices[0].message
    assert GANG not in co.reservations


def test_an_elastic_gangs_member_parked_before_its_minimum_was_planned_without_it_is_nudged() -> (
    None
):
    """An elastic gang (minimum 2, maximum 3): t-z asks first and waits (1 of 2 pods exist); the
    minimum is then planned on t-0 and t-1, without t-z. t-z may now go as an extra: it is
    nudged, not forgotten (kube-scheduler would leave it parked until its 5-minute flush)."""
    labels = {"gangplank.io/gang": "t"}
    annotations = {"gangplank.io/gang-size": "2", "gangplank.io/gang-max": "3"}
    first, *rest = (
        pod(f"t-{n}", gpu=8, labels=labels, annotations=annotations) for n in ("z", "0", "1")
    )
    cluster = Cluster(nodes=nodes(3), pods=[first])
    co = Engine()
    assert ask(co, cluster, first, NOW) == [], "1 of 2 pods exist: parked"
    for member in rest:
        cluster.add("pods", member)
    assert len(ask(co, cluster, rest[1], NOW)) == 1, "the minimum is planned"
    plan = co.reservations.get("gangplank:default/t")
    assert plan is not None and first["metadata"]["uid"] not in plan.assignments
    assert ("default", "t-z") in co.kick_candidates(cluster.snap(), NOW)
    assert co.kick_candidates(cluster.snap(), NOW + 10) == [], "nudged once"
    assert len(ask(co, cluster, first, NOW + 10)) == 1, "asked again, it goes as the extra"
