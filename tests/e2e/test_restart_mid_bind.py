"""Kill gangplank at the worst moment — while gangs are being bound, while victims are being
evicted — and start it again with nothing in memory, or let the standby take the Lease: the
plans the old process held come back from their records in the cluster (`gangplank.io/plan` on
each member), so no gang is left running in part and nothing is double-booked.

Over HTTP, for real: the fake API server, gangplank's runtime with its reflectors, and the
kube-scheduler stand-in (tests/scheduler_sim.py), stepped one pod at a time so that each kill
lands exactly where it should."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

import pytest

from extender.core.gangs.plan_record import PLAN_ANNOTATION, decode, encode
from extender.core.queues.policy import Policy
from extender.core.queues.policy_parse import parse_policy
from tests.builders import gang_pods, gpus, node, pod, policy_doc, queue
from tests.e2e.test_failover import (
    LEASE,
    assert_no_double_booking,
    assert_nothing_left_behind,
    bound,
    schedule,
)
from tests.e2e.test_plan_binds import wait_for
from tests.fakeapi import FakeApiServer
from tests.scheduler_sim import Extender, KubeScheduler

POLICY = parse_policy(policy_doc(queue("team", guarantee=gpus(64), namespaces=["default"])))
STARTED = "2026-12-01T00:00:00Z"
QUEUE = "gangplank.io/queue"


def add_nodes(api: FakeApiServer, count: int) -> None:
    for i in range(count):
        api.put("nodes", node(f"n{i}", gpu=8, cpu="64"))


@contextlib.contextmanager
def killed_and_back(
    api: FakeApiServer, how: str, old: Extender, policy: Policy = POLICY, bind_planned: bool = True
) -> Iterator[Extender]:
    """`restart`: the same replica comes back with nothing in memory; `failover`: the standby,
    warm all along, takes the Lease. `bind_planned`: as `--bind-planned-members` (the default);
    False: kube-scheduler binds each member in its turn (--no-bind-planned-members, and the
    path of members that need its bind cycle), which is how a test stages a gang bound in part."""
    if how == "restart":
        old.__exit__(None, None, None)
        with Extender(api, policy=policy, bind_planned=bind_planned) as new:
            yield new
    else:
        with Extender(api, policy=policy, identity="b", bind_planned=bind_planned) as standby:
            time.sleep(0.3)  # warm: its watch has the cluster
            old.__exit__(None, None, None)
            api.state.leases[LEASE] = "b_9c0d"
            yield standby


def first_replica(
    api: FakeApiServer, how: str, policy: Policy = POLICY, bind_planned: bool = True
) -> Extender:
    if how == "failover":
        api.state.leases[LEASE] = "a_1f2e"
        identity: str | None = "a"
    else:
        identity = None
    return Extender(api, policy=policy, identity=identity, bind_planned=bind_planned).__enter__()


def recount_equals(api: FakeApiServer, extender: Extender, policy: Policy = POLICY) -> None:
    """A replica started now, from the API server alone, counts the same quota usage."""

    def usage(of: Extender) -> list[tuple[str, object]]:
        return [(q["name"], q["used"]) for q in of.get("/queues")["queues"]]

    with Extender(api, policy=policy, identity="fresh") as fresh:
        assert usage(extender) == usage(fresh)


def members(prefix: str, count: int) -> list[str]:
    return [f"{prefix}-{i}" for i in range(count)]


# How far the two gangs got before the kill: kube-scheduler binding each member in its turn
# (--no-bind-planned-members; members bound of each gang), or gangplank binding each plan's wave
# (the default) with the API server failing after so many Bindings of the two waves.
ONE_BY_ONE = {"after the plan": 0, "after one member bound": 1, "half bound": 2, "all but one": 3}
WAVES = {"a wave cut after one Binding": 1, "waves cut after three Bindings": 3}


@pytest.mark.slow  # 12 cases of about 4 s: `make test-slow` (and CI) run them
@pytest.mark.parametrize("how", ["restart", "failover"])
@pytest.mark.parametrize(
    ("planned", "step"),
    [(False, k) for k in ONE_BY_ONE.values()] + [(True, b) for b in WAVES.values()],
    ids=[*ONE_BY_ONE, *WAVES],
)
def test_two_gangs_killed_mid_bind_come_back_whole_and_an_intruder_cannot_take_their_room(
    api: FakeApiServer, planned: bool, step: int, how: str
) -> None:
    """8 nodes of 8 GPUs, two 4 x 8-GPU gangs planned (the cluster's whole room) and bound up to
    `step`; gangplank is killed; a third gang arrives and is scheduled first, before the parked
    members of the first two. Once settled: no gang runs in part, nothing is double-booked, and
    once a member was bound its gang is one of the two that run."""
    add_nodes(api, 8)
    for gang in ("g0", "g1"):
        for member in gang_pods(gang, 4, gpu=8):
            api.put("pods", member)
    old = first_replica(api, how, bind_planned=planned)
    before = KubeScheduler(api, old)
    time.sleep(0.3)
    if planned:
        api.state.bind_budget = step  # the API server fails in the middle of the waves
    if planned or step == 0:  # each gang's first member asks: both plans are made
        for gang in ("g0", "g1"):
            pod = api.state.objects["pods"][f"default/{gang}-0"]
            status, answer = old.post(
                "filter", {"Pod": pod, "NodeNames": [f"n{i}" for i in range(8)]}
            )
            assert status == 200 and len(answer["NodeNames"]) == 1
    else:
        schedule(before, *members("g0", step), *members("g1", step))
    if planned:
        assert wait_for(lambda: len(bound(api, "g0")) + len(bound(api, "g1")) >= step), (
            "the waves' first Bindings"
        )
        time.sleep(0.3)  # the refused Bindings are answered
        assert len(bound(api, "g0")) + len(bound(api, "g1")) == step
        api.state.bind_budget = None
    else:
        assert len(bound(api, "g0")) == step and len(bound(api, "g1")) == step
    started = {g for g in ("g0", "g1") if bound(api, g)}
    with killed_and_back(api, how, old, bind_planned=planned) as new:
        for member in gang_pods("intruder", 4, gpu=8):
            api.put("pods", member)
        after = KubeScheduler(api, new)
        time.sleep(0.3)
        schedule(after, *members("intruder", 4))  # the worst order: the newcomer first
        after.settle(timeout=30)
        sizes = {g: len(bound(api, g)) for g in ("g0", "g1", "intruder")}
        assert sorted(sizes.values()) == [0, 4, 4], (sizes, after.reasons)
        assert all(sizes[g] == 4 for g in started), "a gang that had started is completed"
        assert_no_double_booking(api)
        assert_nothing_left_behind(new)
        recount_equals(api, new)


def test_a_bound_member_always_has_its_plan_recorded_before_it_bound(api: FakeApiServer) -> None:
    """The record is written before the first member binds, on every member still to bind,
    with the same deadline, the planned node of each."""
    add_nodes(api, 4)
    for member in gang_pods("ring", 4, gpu=8):
        api.put("pods", member)
    with Extender(api, policy=POLICY, bind_planned=False) as extender:
        scheduler = KubeScheduler(api, extender)
        time.sleep(0.3)
        schedule(scheduler, "ring-0")
        with api.cond:
            pods = [api.state.objects["pods"][f"default/ring-{i}"] for i in range(4)]
        records = [decode(p["metadata"].get("annotations", {}).get(PLAN_ANNOTATION)) for p in pods]
        assert all(r is not None for r in records), records
        assert len({r.deadline for r in records if r is not None}) == 1, "one plan"
        assert len({r.node for r in records if r is not None}) == 4, "a node each"
        assert pods[0]["spec"]["nodeName"] == records[0].node if records[0] else False


def test_a_gang_whose_record_no_longer_holds_and_fits_nowhere_is_evicted_whole(
    api: FakeApiServer,
) -> None:
    """Two gangs half bound, their records kept; while gangplank was down, a pod outside it took
    a node one of them needs (bound by another scheduler). The gang with more members bound is
    completed; the other's bound members go whole, saying why, and its GPUs come back."""
    add_nodes(api, 8)
    for gang in ("g0", "g1"):
        for member in gang_pods(gang, 4, gpu=8):
            api.put("pods", member)
    old = first_replica(api, "restart", bind_planned=False)  # kube-scheduler binds each member
    before = KubeScheduler(api, old)
    time.sleep(0.3)
    schedule(before, *members("g0", 3), *members("g1", 2))
    old.__exit__(None, None, None)
    with api.cond:
        planned = {
            name: decode(p["metadata"].get("annotations", {}).get(PLAN_ANNOTATION))
            for name, p in api.state.objects["pods"].items()
        }
    taken = planned["default/g1-3"]
    assert taken is not None
    squatter = pod("squatter", gpu=8, node=taken.node)
    squatter["spec"]["schedulerName"] = "default-scheduler"
    squatter["status"] = {"phase": "Running", "startTime": STARTED}
    api.put("pods", squatter)
    with Extender(api, policy=POLICY) as new:
        after = KubeScheduler(api, new)
        after.settle(timeout=30, until=lambda: len(bound(api, "g0")) == 4 and not bound(api, "g1"))
        assert len(bound(api, "g0")) == 4, after.reasons
        assert bound(api, "g1") == {}, "its two bound members were evicted whole"
        evicted = sorted(n for _, n, dry in api.state.evictions if not dry)
        assert evicted == ["g1-0", "g1-1"]
        deadline = time.monotonic() + 5
        while not any("fit nowhere" in e["message"] for e in api.state.posted_events):
            assert time.monotonic() < deadline, api.state.posted_events
            time.sleep(0.05)
        assert_no_double_booking(api)


@pytest.mark.parametrize("how", ["restart", "failover"])
def test_a_reclaim_whose_victims_left_while_gangplank_was_down_completes_after_a_restart(
    api: FakeApiServer, how: str
) -> None:
    """Two research gangs borrow the whole cluster; prod's gang (within its guarantee) reclaims
    one of them. gangplank is killed once the victims are evicted, before prod is whole;
    kube-scheduler keeps its parked pods as they were. The new process restores prod's plan
    from its record and nudges its members: prod starts whole on the victims' nodes, and no
    second gang is evicted."""
    add_nodes(api, 8)
    for i, gang in enumerate(("borrow-a", "borrow-b")):
        for j, member in enumerate(gang_pods(gang, 4, gpu=8, labels={QUEUE: "research"})):
            member["spec"]["nodeName"] = f"n{4 * i + j}"
            member["status"] = {"phase": "Running", "startTime": STARTED}
            api.put("pods", member)
    rules = parse_policy(
        policy_doc(queue("prod", guarantee=gpus(32)), queue("research", guarantee=gpus(16)))
    )
    old = first_replica(api, how, rules)
    scheduler = KubeScheduler(api, old)
    for member in gang_pods("serve", 4, gpu=8, labels={QUEUE: "prod"}):
        api.put("pods", member)

    def evicted() -> list[str]:
        return sorted(n for _, n, dry in api.state.evictions if not dry)

    scheduler.settle(timeout=30, until=lambda: len(evicted()) == 4)
    # killed mid-reclaim: the victims are gone, prod is not whole (a member whose node emptied
    # first may have bound already: the fake API server answers in a millisecond)
    assert len(evicted()) == 4 and len(bound(api, "serve")) < 4, (evicted(), scheduler.reasons)
    with killed_and_back(api, how, old, rules) as new:
        for member in gang_pods("intruder", 4, gpu=8):  # in no queue: only room stops it
            api.put("pods", member)
        after = KubeScheduler(api, new)
        time.sleep(0.3)
        schedule(after, *members("intruder", 4))  # the newcomer asks first
        after.settle(timeout=30, until=lambda: len(bound(api, "serve")) == 4)
        assert len(bound(api, "serve")) == 4, after.reasons
        assert bound(api, "intruder") == {}, "the room reclaimed for prod stays prod's"
        assert len(evicted()) == 4, f"no second gang evicted: {evicted()}"
        assert_no_double_booking(api)
        assert_nothing_left_behind(new)
        recount_equals(api, new, rules)


def a_recorded_preemption(api: FakeApiServer, *, victims_terminating: bool = False) -> None:
    """8 nodes of 8 GPUs, full: low-a on n0-n3, low-b on n4-n7; the priority-1000 gang urgent
    pending, its plan recorded as a process that died had written it (urgent-i on ni, low-a's
    pods the victims). `victims_terminating`: that process had evicted them already."""
    add_nodes(api, 8)
    for gang, first in (("low-a", 0), ("low-b", 4)):
        for i, member in enumerate(gang_pods(gang, 4, gpu=8)):
            member["spec"]["nodeName"] = f"n{first + i}"
            member["status"] = {"phase": "Running", "startTime": STARTED}
            if gang == "low-a" and victims_terminating:
                member["metadata"]["deletionTimestamp"] = "2026-12-01T01:00:00Z"
            api.put("pods", member)
    with api.cond:
        victims = {
            api.state.objects["pods"][f"default/low-a-{i}"]["metadata"]["uid"]: f"n{i}"
            for i in range(4)
        }
    deadline = time.time() + 120
    for i, member in enumerate(gang_pods("urgent", 4, gpu=8, priority=1000)):
        record = encode(f"n{i}", deadline, victims if i == 0 else None)
        member["metadata"].setdefault("annotations", {})[PLAN_ANNOTATION] = record
        api.put("pods", member)


@pytest.mark.parametrize("how", ["restart", "failover"])
def test_a_preemption_recorded_but_not_carried_out_is_finished_by_the_next_process(
    api: FakeApiServer, how: str
) -> None:
    """The worst moment of a preemption: its plan is in the cluster (written before the first
    eviction), then gangplank dies before it evicts anyone. The next process restores the plan
    with its victims, evicts exactly them (none forgotten, none twice), and the preemptor binds
    whole on the nodes it was planned on; the other low gang is untouched."""
    a_recorded_preemption(api)
    old = first_replica(api, how)
    with killed_and_back(api, how, old) as new:
        scheduler = KubeScheduler(api, new)
        scheduler.settle(timeout=30, until=lambda: len(bound(api, "urgent")) == 4)
        assert bound(api, "urgent") == {f"urgent-{i}": f"n{i}" for i in range(4)}, (
            scheduler.reasons,
            api.state.evictions,
        )
        evicted = sorted(n for _, n, dry in api.state.evictions if not dry)
        assert evicted == [f"low-a-{i}" for i in range(4)], "exactly the recorded victims, once"
        assert len(bound(api, "low-b")) == 4
        assert_no_double_booking(api)
        assert_nothing_left_behind(new)


def test_a_restart_while_the_victims_are_in_their_grace_period_evicts_no_one_else(
    api: FakeApiServer,
) -> None:
    """The victims were evicted and are still shutting down (a grace period for checkpoints)
    when gangplank restarts: the restored plan waits for exactly them — nothing is evicted again,
    no other gang is taken — and the preemptor binds on its planned nodes."""
    a_recorded_preemption(api, victims_terminating=True)
    with Extender(api, policy=POLICY) as new:
        scheduler = KubeScheduler(api, new)
        # kube-scheduler's own preemption, asked for the planned members, gets only the plan's
        # victims on each planned node (its stand-in deletes them at once: the grace ends)
        scheduler.settle(timeout=30, until=lambda: len(bound(api, "urgent")) == 4)
        assert bound(api, "urgent") == {f"urgent-{i}": f"n{i}" for i in range(4)}, scheduler.reasons
        assert [e for e in api.state.evictions if not e[2]] == [], "gangplank evicted no one"
        assert len(bound(api, "low-b")) == 4, "no other gang was taken"
        assert_no_double_booking(api)
        assert_nothing_left_behind(new)
