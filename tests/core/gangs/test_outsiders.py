"""Pods of no plan (`core/gangs/outsiders.py`): a node whose capacity a plan reserves, or the hold
keeps, fails for a pod that would take it, with a reason naming the job it is kept for."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from extender.core.gangs.holder import HoldKeeper
from extender.core.gangs.outsiders import OutsiderCheck
from extender.core.gangs.plans import Plan
from extender.core.gangs.reservations import Reservations
from extender.core.model.notices import Outbox
from extender.core.model.snapshot import NodeInfo
from extender.kube.convert import pod_from_api
from tests.builders import gang_pods, node, pod
from tests.cluster import Cluster

A = "gangplank:default/a"
B = "gangplank:default/b"
PLAIN = pod("plain", gpu=8)
SMALL = pod("small", gpu=0, cpu="1")


def free_of(node: NodeInfo, only: Collection[str] | None = None) -> dict[str, int]:
    return {name: node.free(name) for name in (only if only is not None else node.allocatable)}


def parts() -> tuple[Reservations, HoldKeeper, OutsiderCheck]:
    outbox = Outbox()
    reservations, holder = Reservations(outbox), HoldKeeper(120.0, outbox)
    return reservations, holder, OutsiderCheck(reservations, holder)


def gang_a_planned_on_n0(cluster: Cluster, reservations: Reservations) -> None:
    members = cluster.snap().groups[A]
    reservations.install(Plan.with_victims(A, members, {members[0].uid: "n0"}, {}, 100.0))


def check(
    outsiders: OutsiderCheck, cluster: Cluster, raw: dict[str, Any], key: str
) -> tuple[list[str], dict[str, str]]:
    snapshot = cluster.snap()
    result = outsiders.check(snapshot, pod_from_api(raw), sorted(snapshot.nodes), key)
    return result.passed, result.unresolvable


def test_with_nothing_reserved_or_held_every_node_passes() -> None:
    cluster = Cluster(nodes=[node("n0"), node("n1")], pods=[PLAIN])
    _, _, outsiders = parts()
    assert check(outsiders, cluster, PLAIN, "pod:default/plain") == (["n0", "n1"], {})


def test_a_pod_that_would_take_reserved_capacity_fails_that_node_naming_the_gang() -> None:
    cluster = Cluster(nodes=[node("n0"), node("n1")], pods=[*gang_pods("a", 1, gpu=8), PLAIN])
    reservations, _, outsiders = parts()
    gang_a_planned_on_n0(cluster, reservations)
    assert outsiders.taken_nodes(cluster.snap()) == {"n0"}
    assert check(outsiders, cluster, PLAIN, "pod:default/plain") == (
        ["n1"],
        {"n0": "pod default/plain: capacity on node n0 is reserved for gang default/a"},
    )


def test_what_still_fits_beside_a_reservation_passes() -> None:
    cluster = Cluster(nodes=[node("n0")], pods=[*gang_pods("a", 1, gpu=8), SMALL])
    reservations, _, outsiders = parts()
    gang_a_planned_on_n0(cluster, reservations)
    assert check(outsiders, cluster, SMALL, "pod:default/small") == (["n0"], {})


def test_a_job_is_not_kept_off_its_own_reservation() -> None:
    members = gang_pods("a", 2, gpu=8)
    cluster = Cluster(nodes=[node("n0")], pods=members)
    reservations, _, outsiders = parts()
    gang_a_planned_on_n0(cluster, reservations)
    assert check(outsiders, cluster, members[1], A) == (["n0"], {})


def test_capacity_freed_after_the_hold_began_is_kept_for_the_holder_only() -> None:
    busy = pod("busy", node="n0", gpu=8, phase="Running")
    waiting = gang_pods("b", 1, gpu=8)
    cluster = Cluster(nodes=[node("n0"), node("n1")], pods=[busy, *waiting, PLAIN])
    _, holder, outsiders = parts()
    snapshot = cluster.snap()
    assert holder.give(snapshot, B, list(snapshot.groups[B]), 0.0, free_of, (), planned=False)
    assert check(outsiders, cluster, PLAIN, "pod:default/plain")[0] == [
        "n0",
        "n1",
    ], "nothing freed yet (n1 was free already: backfill)"
    cluster.add("pods", {**busy, "status": {"phase": "Succeeded"}})
    assert check(outsiders, cluster, PLAIN, "pod:default/plain") == (
        ["n1"],
        {"n0": "pod default/plain: capacity on node n0 is reserved for gang default/b"},
    )
    assert check(outsiders, cluster, waiting[0], B) == (["n0", "n1"], {}), "the holder's own"
