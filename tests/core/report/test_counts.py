"""How many gangs are in each state (`core/report/counts.py`): waiting (parked in the waiting
room), planned (reserved), running (every member bound) and partial (running with fewer members
than their size, no plan to complete them: it should read zero)."""

from __future__ import annotations

from typing import Any

from extender.core.engine import Engine
from extender.core.report.counts import gang_counts
from extender.kube.convert import pod_from_api
from tests.builders import gang_pods, node
from tests.cluster import Cluster


def bound(raw: dict[str, Any], on: str) -> dict[str, Any]:
    return {**raw, "spec": {**raw["spec"], "nodeName": on}, "status": {"phase": "Running"}}


def ask(engine: Engine, cluster: Cluster, raw: dict[str, Any]) -> list[str]:
    snapshot = cluster.snap()
    return engine.filter(snapshot, pod_from_api(raw), sorted(snapshot.nodes), 0.0).passed


def test_gangs_are_counted_waiting_planned_running_and_partial() -> None:
    running = [bound(p, "n0") for p in gang_pods("run", 2, gpu=1)]
    partial = [bound(p, "n1") for p in gang_pods("part", 1, size=2, gpu=1)]
    waiting = gang_pods("wait", 1, size=3, gpu=1)
    planned = gang_pods("plan", 2, gpu=8)
    nodes = [node(f"n{i}") for i in range(4)]
    cluster = Cluster(nodes=nodes, pods=[*running, *partial, *waiting, *planned])
    engine = Engine()
    assert ask(engine, cluster, waiting[0]) == [], "1 of 3 pods exist: it waits"
    [where] = ask(engine, cluster, planned[0])
    cluster.add("pods", bound(planned[0], where))  # mid-bind: its plan completes it
    assert gang_counts(engine, cluster.snap()) == {
        "waiting": 1,
        "planned": 1,
        "running": 2,  # gang part runs all the pods it has: among the running too
        "partial": 1,
    }


def test_a_gang_with_members_bound_and_others_pending_is_partial_not_running() -> None:
    members = gang_pods("g", 2, gpu=8)
    cluster = Cluster(nodes=[node("n0")], pods=[bound(members[0], "n0"), members[1]])
    assert gang_counts(Engine(), cluster.snap()) == {
        "waiting": 0,
        "planned": 0,
        "running": 0,
        "partial": 1,
    }
