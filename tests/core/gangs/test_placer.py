"""Plan, then admit: the engine without a policy (gangs alone) on snapshots, with the clock in
the test's hand."""

from __future__ import annotations

from typing import Any

from extender.core.engine import Engine
from extender.core.gangs.placer import GangConfig
from extender.core.model.answers import BindRequest
from extender.core.placement.planner import plan_gang
from extender.core.report.counts import gang_counts
from extender.kube.convert import pod_from_api
from tests.builders import gang_pods, node, pod
from tests.cluster import Cluster


def gpu_nodes(
    count: int, gpus: int = 8, prefix: str = "n", labels: dict[str, str] | None = None
) -> list[dict[str, Any]]:
    return [node(f"{prefix}{i}", gpu=gpus, cpu="64", labels=labels) for i in range(count)]


def names(cluster: Cluster) -> list[str]:
    return sorted(cluster.snap().nodes)


def filter_all(
    gs: Engine, cluster: Cluster, pods: list[dict[str, Any]], now: float = 0.0
) -> dict[str, list[str]]:
    """Filter every pod as kube-scheduler would; returns pod name -> nodes kept."""
    out = {}
    for raw in pods:
        result = gs.filter(cluster.snap(), pod_from_api(raw), names(cluster), now)
        out[raw["metadata"]["name"]] = result.passed
    return out


def bind(cluster: Cluster, gs: Engine, raw: dict[str, Any], node_name: str) -> None:
    gs.bound(
        BindRequest(
            raw["metadata"]["namespace"], raw["metadata"]["name"], raw["metadata"]["uid"], node_name
        )
    )
    bound = {**raw, "spec": {**raw["spec"], "nodeName": node_name}, "status": {"phase": "Running"}}
    cluster.add("pods", bound)


def test_an_incomplete_gang_fails_every_node_saying_how_many_pods_exist() -> None:
    members = gang_pods("train-7", 6, size=8, gpu=8)
    cluster = Cluster(nodes=gpu_nodes(10), pods=members)
    gs = Engine()
    result = gs.filter(cluster.snap(), pod_from_api(members[0]), names(cluster), 0.0)
    assert result.passed == [] and not result.failed
    assert set(result.unresolvable.values()) == {"gang default/train-7: 6 of 8 pods exist"}
    assert gs.reservations.pods() == 0


def test_a_complete_gang_is_planned_whole_and_each_member_passes_only_its_node() -> None:
    members = gang_pods("train", 4, gpu=8)
    cluster = Cluster(nodes=gpu_nodes(6), pods=members)
    gs = Engine()
    kept = filter_all(gs, cluster, members)
    assert all(len(nodes) == 1 for nodes in kept.values())
    assert len({n[0] for n in kept.values()}) == 4, "one 8-GPU member per 8-GPU node"
    assert gs.reservations.pods() == 4
    scores = gs.scores(cluster.snap(), pod_from_api(members[0]), names(cluster))
    assert scores.of(kept["train-0"][0]) == 10 and scores.default == 0


def test_members_that_share_nodes_are_packed_onto_the_fewest_nodes() -> None:
    members = gang_pods("small", 8, gpu=1)
    cluster = Cluster(nodes=gpu_nodes(4), pods=members)
    kept = filter_all(Engine(), cluster, members)
    assert len({n[0] for n in kept.values()}) == 1


def test_a_gang_that_does_not_fit_reserves_nothing_and_says_what_is_missing() -> None:
    members = gang_pods("train-7", 8, gpu=8)
    cluster = Cluster(nodes=gpu_nodes(6), pods=members)
    gs = Engine()
    result = gs.filter(cluster.snap(), pod_from_api(members[0]), names(cluster), 0.0)
    reason = next(iter(result.unresolvable.values()))
    assert reason.startswith("gang default/train-7: needs 8 pods of 8 nvidia.com/gpu")
    assert "only 6 fit" in reason
    assert gs.reservations.pods() == 0


def test_reserved_capacity_is_taken_for_other_gangs_and_plain_pods() -> None:
    a = gang_pods("a", 2, gpu=8)
    b = gang_pods("b", 1, gpu=8)
    plain = pod("plain", gpu=8)
    cluster = Cluster(nodes=gpu_nodes(2), pods=[*a, *b, plain])
    gs = Engine()
    filter_all(gs, cluster, a[:1])  # plans gang a on both nodes
    kept = filter_all(gs, cluster, [b[0], plain])
    assert kept == {"b-0": [], "plain": []}
    result = gs.filter(cluster.snap(), pod_from_api(plain), names(cluster), 0.0)
    assert "reserved for gang default/a" in result.unresolvable["n0"]
    assert gs.filter(
        cluster.snap(), pod_from_api(pod("tiny", gpu=0, cpu="1")), names(cluster), 0.0
    ).passed == ["n0", "n1"], "what still fits passes"
    only_n1 = gs.filter(cluster.snap(), pod_from_api(plain), ["n1"], 0.0)
    assert only_n1.passed == [] and set(only_n1.unresolvable) == {"n1"}, "reasons: sent nodes only"


def test_two_gangs_that_together_do_not_fit_never_both_hold_capacity() -> None:
    a = gang_pods("a", 3, gpu=8)
    b = gang_pods("b", 3, gpu=8)
    cluster = Cluster(nodes=gpu_nodes(4), pods=[*a, *b])
    gs = Engine()
    interleaved = [p for pair in zip(a, b, strict=True) for p in pair]
    kept = filter_all(gs, cluster, interleaved)
    assert all(kept[f"a-{i}"] for i in range(3))
    assert not any(kept[f"b-{i}"] for i in range(3))
    assert {p.key for p in gs.reservations.plans()} == {"gangplank:default/a"}


def test_an_unused_reservation_is_released_after_its_deadline() -> None:
    members = gang_pods("slow", 2, gpu=8)
    cluster = Cluster(nodes=gpu_nodes(2), pods=[*members, pod("plain", gpu=8)])
    gs = Engine(GangConfig(reservation_seconds=30))
    filter_all(gs, cluster, members[:1], now=0.0)
    plain = pod_from_api(pod("plain", gpu=8))
    assert gs.filter(cluster.snap(), plain, names(cluster), 10.0).passed == []
    assert gs.filter(cluster.snap(), plain, names(cluster), 31.0).passed == ["n0", "n1"]
    assert gs.take_outcomes().expired == 1


def test_binding_turns_the_reservation_into_usage_and_only_on_the_planned_node() -> None:
    members = gang_pods("t", 2, gpu=8)
    cluster = Cluster(nodes=gpu_nodes(2), pods=members)
    gs = Engine()
    kept = filter_all(gs, cluster, members)
    planned = kept["t-0"][0]
    other = "n1" if planned == "n0" else "n0"
    meta = members[0]["metadata"]
    refused = gs.check_bind(BindRequest("default", "t-0", meta["uid"], other))
    assert not refused.allowed and f"planned on node {planned}" in refused.reason
    assert gs.check_bind(BindRequest("default", "t-0", meta["uid"], planned)).allowed
    bind(cluster, gs, members[0], planned)
    bind(cluster, gs, members[1], kept["t-1"][0])
    gs.sync(cluster.snap(), 5.0)
    assert gs.reservations.pods() == 0 and not gs.reservations.jobs()
    assert gang_counts(gs, cluster.snap())["running"] == 1
    assert gs.take_outcomes().start_latencies


def test_a_partly_bound_gang_plans_only_its_missing_members_next_to_the_running_ones() -> None:
    racks = [
        *gpu_nodes(2, prefix="a", labels={"network.gangplank.io/rack": "r1"}),
        *gpu_nodes(2, prefix="b", labels={"network.gangplank.io/rack": "r2"}),
    ]
    members = gang_pods("t", 3, gpu=8)
    running = {
        **members[0],
        "spec": {**members[0]["spec"], "nodeName": "b1"},
        "status": {"phase": "Running"},
    }
    cluster = Cluster(nodes=racks, pods=[running, *members[1:]])
    gs = Engine()
    kept = filter_all(gs, cluster, members[1:])
    placed = kept["t-1"] + kept["t-2"]
    assert "b0" in placed, "the rack of the running member first"
    assert "b1" not in placed, "b1 is full (the running member has its 8 GPUs)"


def test_the_first_gang_in_line_keeps_capacity_that_frees_up_from_later_work() -> None:
    big = gang_pods("big", 2, gpu=8, created="2026-12-01T09:00:00Z")
    blocker = pod("blocker", gpu=8, node="n1", phase="Running")
    plain = pod_from_api(pod("plain", gpu=8))
    cluster = Cluster(nodes=gpu_nodes(2), pods=[*big, blocker])
    gs = Engine(GangConfig(hold_seconds=100))
    assert filter_all(gs, cluster, big[:1], now=0.0) == {"big-0": []}  # n1 busy: no room
    assert gs.holder.current is not None and gs.holder.current.key == "gangplank:default/big"
    # n0 was free before the hold began: other work may still use it (backfill) ... (n1 is
    # full: nothing of it is held, and kube-scheduler's own filters keep the pod off it.)
    assert "n0" in gs.filter(cluster.snap(), plain, names(cluster), 1.0).passed
    cluster.delete("pods", blocker)
    # ... but what frees up from now on is kept for the gang first in line.
    result = gs.filter(cluster.snap(), plain, names(cluster), 2.0)
    assert result.passed == ["n0"]
    assert "reserved for gang default/big" in result.unresolvable["n1"]
    later = gang_pods("later", 2, gpu=8, created="2026-12-01T10:00:00Z")
    cluster.add("pods", *later)
    assert filter_all(gs, cluster, later[:1], now=3.0) == {"later-0": []}
    kept = filter_all(gs, cluster, big, now=4.0)
    assert sorted(kept["big-0"] + kept["big-1"]) == ["n0", "n1"]
    assert gs.holder.current is None, "planned: the hold is over"


def test_a_hold_that_moves_to_a_gang_ahead_in_line_keeps_what_it_kept_and_no_more() -> None:
    """What the first holder kept passes to the new head of the line (it does not go to
    everyone); what was free before either hold began stays free; what frees up later is kept."""
    big = gang_pods("big", 3, gpu=8, created="2026-12-01T09:00:00Z")
    blockers = [pod(f"blocker{i}", gpu=8, node=f"n{i}", phase="Running") for i in (1, 2)]
    plain = pod_from_api(pod("plain", gpu=8))
    cluster = Cluster(nodes=gpu_nodes(3), pods=[*big, *blockers])
    gs = Engine(GangConfig(hold_seconds=100))
    filter_all(gs, cluster, big[:1], now=0.0)
    cluster.delete("pods", blockers[0])  # n1 frees up: kept for big (n2 is full: kube-scheduler
    # keeps the pod off it, gangplank has nothing to say about it)
    assert gs.filter(cluster.snap(), plain, names(cluster), 1.0).passed == ["n0", "n2"]
    urgent = gang_pods("urgent", 3, gpu=8, priority=100)
    cluster.add("pods", *urgent)
    filter_all(gs, cluster, urgent[:1], now=2.0)
    assert gs.holder.current is not None and gs.holder.current.key == "gangplank:default/urgent"
    result = gs.filter(cluster.snap(), plain, names(cluster), 3.0)
    assert result.passed == ["n0", "n2"], "n1 stays kept, now for urgent; n0 was free all along"
    assert "reserved for gang default/urgent" in result.unresolvable["n1"]
    cluster.delete("pods", blockers[1])
    result = gs.filter(cluster.snap(), plain, names(cluster), 4.0)
    assert result.passed == ["n0"] and "n2" in result.unresolvable, "n2 frees up: kept too"


def test_a_hold_lapses_after_its_bound_so_the_cluster_does_not_idle() -> None:
    big = gang_pods("big", 3, gpu=8)
    cluster = Cluster(nodes=gpu_nodes(2), pods=[*big, pod("plain", gpu=8)])
    gs = Engine(GangConfig(hold_seconds=10))
    filter_all(gs, cluster, big[:1], now=0.0)
    assert gs.holder.current is not None
    gs.sync(cluster.snap(), 11.0)
    assert gs.holder.current is None and gs.holder.cooling_until("gangplank:default/big") == 21.0
    filter_all(gs, cluster, big[:1], now=12.0)
    assert gs.holder.current is None, "no new hold during the cooldown"


def test_parked_members_are_nudged_once_the_gang_is_complete() -> None:
    members = gang_pods("t", 3, gpu=1)
    cluster = Cluster(nodes=gpu_nodes(1), pods=members[:2])
    gs = Engine(GangConfig(kick_interval_seconds=5))
    filter_all(gs, cluster, members[:2], now=0.0)
    assert gs.kick_candidates(cluster.snap(), 1.0) == [], "still incomplete"
    cluster.add("pods", members[2])
    assert sorted(gs.kick_candidates(cluster.snap(), 2.0)) == [
        ("default", "t-0"),
        ("default", "t-1"),
    ]
    assert gs.kick_candidates(cluster.snap(), 3.0) == [], "once"


def test_members_rejected_for_room_are_nudged_when_room_appears() -> None:
    members = gang_pods("t", 2, gpu=8)
    cluster = Cluster(nodes=gpu_nodes(1), pods=members)
    gs = Engine()
    filter_all(gs, cluster, members, now=0.0)
    assert gs.kick_candidates(cluster.snap(), 1.0) == []
    cluster.add("nodes", node("n9", gpu=8, cpu="64"))
    assert gs.kick_candidates(cluster.snap(), 2.0) == [], "dry runs at most once per interval"
    assert len(gs.kick_candidates(cluster.snap(), 6.5)) == 2


def test_a_member_whose_planned_node_kube_scheduler_refuses_is_planned_elsewhere() -> None:
    members = gang_pods("t", 1, gpu=8)
    cluster = Cluster(nodes=gpu_nodes(3), pods=members)
    gs = Engine()
    first = filter_all(gs, cluster, members)["t-0"][0]
    offered = [n for n in names(cluster) if n != first]
    again = gs.filter(cluster.snap(), pod_from_api(members[0]), offered, 1.0)
    assert len(again.passed) == 1 and again.passed[0] != first


NOW = 1_796_122_800.0  # an hour after the builders' pods are created (victims old enough)


def preempted_for(members: list[dict[str, Any]]) -> tuple[Engine, Cluster, str]:
    """Gang `members` (2 x 8 GPUs) planned by preemption on n0 and n1, where two lower-priority
    pods ran; the victims are gone from gangplank's view. Returns the engine, the cluster and
    the plan's key."""
    low = [pod(f"low{i}", gpu=8, node=f"n{i}", phase="Running") for i in range(2)]
    cluster = Cluster(nodes=gpu_nodes(2), pods=[*low, *members])
    gs = Engine()
    assert gs.filter(cluster.snap(), pod_from_api(members[0]), ["n0", "n1"], NOW).passed == []
    assert len(gs.preemption.take_evictions()) == 2
    cluster.delete("pods", *low)
    return gs, cluster, "gangplank:default/t"


def test_a_member_not_offered_the_node_its_victims_just_left_waits_for_kube_schedulers_view() -> (
    None
):
    """kube-scheduler's snapshot of a cycle may predate a victim's deletion that gangplank's
    cache has already seen: it then offers a member only the other freed node. The plan stands,
    the member is nudged (after the deletion, so its retry sees it) and passes its own node."""
    members = gang_pods("t", 2, gpu=8, priority=100)
    gs, cluster, key = preempted_for(members)
    plan = gs.reservations.get(key)
    assert plan is not None
    on = {
        node: next(m for m in members if m["metadata"]["uid"] == uid)
        for uid, node in plan.assignments.items()
    }
    late = gs.filter(cluster.snap(), pod_from_api(on["n1"]), ["n0"], NOW + 1)
    assert late.passed == [] and not late.failed
    assert "planned on node n1, which kube-scheduler did not offer" in str(late.unresolvable)
    kept = gs.reservations.get(key)
    assert kept is not None and kept.assignments == plan.assignments, "the plan stands"
    nudged = gs.kick_candidates(cluster.snap(), NOW + 1.5)
    assert ("default", on["n1"]["metadata"]["name"]) in nudged, nudged
    assert gs.filter(cluster.snap(), pod_from_api(on["n1"]), ["n0", "n1"], NOW + 2).passed == ["n1"]
    assert gs.filter(cluster.snap(), pod_from_api(on["n0"]), ["n0", "n1"], NOW + 2).passed == ["n0"]


def test_a_member_refused_the_node_its_victims_left_twice_is_planned_elsewhere() -> None:
    members = gang_pods("t", 2, gpu=8, priority=100)
    gs, cluster, key = preempted_for(members)
    plan = gs.reservations.get(key)
    assert plan is not None
    late = next(m for m in members if plan.assignments[m["metadata"]["uid"]] == "n1")
    assert gs.filter(cluster.snap(), pod_from_api(late), ["n0"], NOW + 1).passed == []
    assert gs.filter(cluster.snap(), pod_from_api(late), ["n0"], NOW + 2).passed == ["n0"]


def test_node_selectors_and_taints_are_respected_when_planning() -> None:
    tainted = node("t0", gpu=8, cpu="64")
    tainted["spec"]["taints"] = [{"key": "dedicated", "value": "infer", "effect": "NoSchedule"}]
    labelled = node("l0", gpu=8, cpu="64", labels={"pool": "train"})
    members = gang_pods("t", 1, gpu=8, node_selector={"pool": "train"})
    cluster = Cluster(nodes=[tainted, labelled, node("x0", gpu=8, cpu="64")], pods=members)
    assert filter_all(Engine(), cluster, members) == {"t-0": ["l0"]}
    nowhere = gang_pods("u", 1, gpu=8, node_selector={"pool": "none"})
    cluster.add("pods", *nowhere)
    result = Engine().filter(cluster.snap(), pod_from_api(nowhere[0]), names(cluster), 0)
    assert "no node accepts them (most often: node selector pool=none" in next(
        iter(result.unresolvable.values())
    )


def test_planning_is_all_or_nothing_on_the_snapshot() -> None:
    members = [pod_from_api(p) for p in gang_pods("t", 5, gpu=8)]
    cluster = Cluster(nodes=gpu_nodes(4))
    attempt = plan_gang(cluster.snap(), members, 5, lambda n: dict(n.allocatable))
    assert not attempt.ok and attempt.assignments == {}
    partial = plan_gang(
        cluster.snap(), members, 5, lambda n: dict(n.allocatable), allow_partial=True
    )
    assert len(partial.assignments) == 4


def test_a_member_kept_off_a_node_is_placed_before_members_that_may_go_anywhere() -> None:
    """The planner fills nodes in order: a member kept off the second node must take the first,
    or the gang does not fit though it could."""
    first, second = (pod_from_api(p) for p in gang_pods("t", 2, gpu=8))
    cluster = Cluster(nodes=gpu_nodes(2))
    attempt = plan_gang(
        cluster.snap(),
        [first, second],
        2,
        lambda n: dict(n.allocatable),
        avoid={second.uid: {"n1"}},
    )
    assert attempt.ok, attempt.reason
    assert attempt.assignments == {second.uid: "n0", first.uid: "n1"}


def test_a_planned_member_is_answered_with_its_node_only() -> None:
    members = gang_pods("t", 1, gpu=8)
    cluster = Cluster(nodes=gpu_nodes(50), pods=members)
    result = Engine().filter(cluster.snap(), pod_from_api(members[0]), names(cluster), 0)
    assert len(result.passed) == 1 and not result.failed and not result.unresolvable


def test_a_partly_bound_gang_is_first_in_line_before_older_and_higher_priority_gangs() -> None:
    old = gang_pods("old", 2, gpu=8, priority=1000, created="2026-12-01T08:00:00Z")
    broken = gang_pods("broken", 3, gpu=8, created="2026-12-01T10:00:00Z")
    running = {
        **broken[0],
        "spec": {**broken[0]["spec"], "nodeName": "n0"},
        "status": {"phase": "Running"},
    }
    cluster = Cluster(nodes=gpu_nodes(1), pods=[*old, running, *broken[1:]])
    gs = Engine()
    filter_all(gs, cluster, old[:1], now=0.0)
    assert gs.holder.current is not None and gs.holder.current.key == "gangplank:default/old"
    filter_all(gs, cluster, broken[1:2], now=1.0)
    assert gs.holder.current is not None and gs.holder.current.key == "gangplank:default/broken"


def test_a_plan_keeps_the_member_the_cache_has_not_seen_yet() -> None:
    members = gang_pods("t", 2, gpu=8)
    cluster = Cluster(nodes=gpu_nodes(3), pods=members[:1])  # the watch lags behind t-1
    gs = Engine()
    kept = gs.filter(cluster.snap(), pod_from_api(members[1]), names(cluster), 0.0).passed
    cluster.add("pods", pod("unrelated"))  # any change makes the next call sync
    again = gs.filter(cluster.snap(), pod_from_api(members[1]), names(cluster), 1.0).passed
    assert again == kept and gs.reservations.pods() == 2


def test_an_extra_member_that_does_not_fit_leaves_the_gangs_plan_standing() -> None:
    members = gang_pods("t", 3, size=2, gpu=8)
    cluster = Cluster(nodes=gpu_nodes(2), pods=members)
    gs = Engine()
    kept = filter_all(gs, cluster, members)
    assert sorted(len(nodes) for nodes in kept.values()) == [0, 1, 1]
    assert gs.reservations.pods() == 2
    extra = next(name for name, nodes in kept.items() if not nodes)
    raw = next(m for m in members if m["metadata"]["name"] == extra)
    result = gs.filter(cluster.snap(), pod_from_api(raw), names(cluster), 1.0)
    assert "members are placed; no room for this extra pod" in result.unresolvable["n0"]
    assert gs.reservations.pods() == 2, "the two members keep their reservation"


def test_a_replacement_member_is_added_without_moving_the_admitted_ones() -> None:
    members = gang_pods("t", 3, gpu=8)
    cluster = Cluster(nodes=gpu_nodes(4), pods=members)
    gs = Engine()
    kept = filter_all(gs, cluster, members[:2])
    cluster.delete("pods", members[2])  # deleted before it was scheduled; the Job replaces it
    replacement = gang_pods("t", 3, gpu=8)[2]
    replacement["metadata"]["name"] = "t-2-again"
    cluster.add("pods", replacement)
    result = gs.filter(cluster.snap(), pod_from_api(replacement), names(cluster), 1.0)
    assert len(result.passed) == 1 and result.passed[0] not in kept["t-0"] + kept["t-1"]
    assert filter_all(gs, cluster, members[:2]) == kept, "admitted members keep their nodes"
    plan = gs.reservations.get("gangplank:default/t")
    assert plan is not None
    assert members[2]["metadata"]["uid"] not in plan.assignments, "the deleted member gave it up"


def test_a_gang_that_does_not_fit_is_planned_once_per_capacity_state(monkeypatch: Any) -> None:
    """kube-scheduler retries every parked member on every pod created: until capacity changes
    the answer is the same, and it is given without planning again (tens of ms at 5,000 nodes)."""
    from extender.core.placement import data_plan, domains

    plans = []
    real = domains.plan_in_topology

    def counted(*args: Any, **kwargs: Any) -> Any:
        plans.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(data_plan, "plan_in_topology", counted)
    members = gang_pods("big", 4, gpu=8)
    cluster = Cluster(nodes=gpu_nodes(3), pods=members)
    gs = Engine()
    first = filter_all(gs, cluster, members)
    # once, and once more when the gang became the holder of freed capacity (a new state)
    assert all(not kept for kept in first.values()) and len(plans) == 2
    cluster.add("pods", pod("newcomer", gpu=1))  # a pod created, not bound: no new capacity
    filter_all(gs, cluster, members)
    assert len(plans) == 2
    cluster.add("nodes", node("n9", gpu=8, cpu="64"))  # capacity changed: planned again, fits
    kept = filter_all(gs, cluster, members)
    assert len(plans) == 3 and all(len(k) == 1 for k in kept.values())


def count_plans(monkeypatch: Any) -> list[int]:
    from extender.core.placement import data_plan, domains

    plans: list[int] = []
    real = domains.plan_in_topology

    def counted(*args: Any, **kwargs: Any) -> Any:
        plans.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(data_plan, "plan_in_topology", counted)
    return plans


def test_a_gang_of_alike_members_that_does_not_fit_waits_for_capacity_given_back(
    monkeypatch: Any,
) -> None:
    """Pods of others taking capacity can only make a gang of alike members fit less, so its
    "no" stands, unplanned, until something is given back (a busy cluster's binds are most of
    its changes)."""
    plans = count_plans(monkeypatch)
    members = gang_pods("big", 4, gpu=8)
    cluster = Cluster(nodes=gpu_nodes(3), pods=members)
    gs = Engine()
    filter_all(gs, cluster, members)
    planned = len(plans)
    small = pod("small", gpu=1, node="n0", phase="Running")
    cluster.add("pods", small)  # bound elsewhere: capacity taken, none given back
    assert all(not kept for kept in filter_all(gs, cluster, members).values())
    assert len(plans) == planned
    cluster.delete("pods", small)  # finished: capacity given back, planned again
    filter_all(gs, cluster, members)
    assert len(plans) == planned + 1
    cluster.add("nodes", node("n9", gpu=8, cpu="64"))
    kept = filter_all(gs, cluster, members)
    assert len(plans) == planned + 2 and all(len(k) == 1 for k in kept.values())


def test_a_waiting_gang_of_alike_members_fits_once_another_gangs_reservation_lapses() -> None:
    a = gang_pods("a", 3, gpu=8)
    b = gang_pods("b", 3, gpu=8)
    cluster = Cluster(nodes=gpu_nodes(4), pods=[*a, *b])
    gs = Engine(GangConfig(reservation_seconds=30))
    filter_all(gs, cluster, a[:1], now=0.0)  # a reserves three of the four nodes
    assert not any(filter_all(gs, cluster, b, now=10.0).values())
    kept = filter_all(gs, cluster, b, now=31.0)  # a never bound: its reservation lapsed
    assert all(len(k) == 1 for k in kept.values())


def test_a_gang_of_unlike_members_is_planned_again_whenever_capacity_changes(
    monkeypatch: Any,
) -> None:
    """With members of different shapes a greedy plan can fail on more room and succeed on
    less, so any change of capacity makes it plan again."""
    plans = count_plans(monkeypatch)
    members = [*gang_pods("mixed", 4, gpu=8)[:3], *gang_pods("mixed", 4, gpu=4)[3:]]
    cluster = Cluster(nodes=gpu_nodes(2), pods=members)
    gs = Engine()
    filter_all(gs, cluster, members)
    planned = len(plans)
    cluster.add("pods", pod("small", gpu=1, node="n0", phase="Running"))
    filter_all(gs, cluster, members)
    assert len(plans) > planned


def test_a_pod_of_no_gang_is_kept_off_capacity_planned_for_a_gang_on_every_state() -> None:
    members = gang_pods("train", 2, gpu=8)
    cluster = Cluster(nodes=gpu_nodes(3), pods=members)
    gs = Engine()
    filter_all(gs, cluster, members[:1])  # planned: two of the three nodes reserved
    (plan,) = gs.reservations.plans()
    planned = set(plan.assignments.values())
    single = pod_from_api(pod("single", gpu=8, uid="single"))
    result = gs.filter(cluster.snap(), single, names(cluster), 1.0)
    free_node = ({"n0", "n1", "n2"} - planned).pop()
    assert result.passed == [free_node]
    for n in planned:
        assert result.unresolvable[n] == (
            f"pod default/single: capacity on node {n} is reserved for gang default/train"
        )
    # Another state (the gang bound, its reservations gone): the answer follows it. (The
    # nodes' own room is kube-scheduler's to check.)
    for member in members:
        bind(cluster, gs, member, plan.assignments[member["metadata"]["uid"]])
    again = gs.filter(cluster.snap(), single, names(cluster), 2.0)
    assert sorted(again.passed) == ["n0", "n1", "n2"] and not again.unresolvable


def test_a_member_bound_with_its_gang_while_kube_scheduler_filtered_it_passes_its_node() -> None:
    # gangplank binds a plan's other members itself; kube-scheduler may still be filtering one of
    # them from its older copy of the pod (no node yet). Its answer is the node it is on, not "an
    # extra pod" of a gang whose members are all placed.
    members = gang_pods("train", 2, gpu=8)
    cluster = Cluster(nodes=gpu_nodes(3), pods=members)
    gs = Engine()
    (planned,) = filter_all(gs, cluster, members[:1])["train-0"]
    plan = gs.reservations.get(gs.reservations.job_of(members[0]["metadata"]["uid"]) or "")
    assert plan is not None
    (other,) = set(plan.assignments.values()) - {planned}
    for raw, node_name in ((members[0], planned), (members[1], other)):
        bind(cluster, gs, raw, node_name)
    late = pod_from_api(members[1])  # as kube-scheduler's copy has it: not bound
    assert gs.filter(cluster.snap(), late, names(cluster), 1.0).passed == [other]
    elsewhere = [n for n in names(cluster) if n != other]
    refused = gs.filter(cluster.snap(), late, elsewhere, 1.0)
    assert refused.passed == []
    assert set(refused.unresolvable.values()) == {
        f"gang default/train: pod default/train-1 is bound to node {other} already"
    }
