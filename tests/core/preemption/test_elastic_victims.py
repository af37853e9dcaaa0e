"""Elastic gangs' extras are the first victims of preemption and reclaim, before any whole job,
and taking them never breaks the gang below its minimum (docs/elastic.md)."""

from __future__ import annotations

from typing import Any

import pytest

from extender.core.engine import Engine
from extender.core.gangs.gang import resolve_gang
from extender.core.model.answers import Victims
from extender.core.preemption.shrinks import JOB_FIELDS, Shrink, through_workload
from extender.core.queues.policy_parse import parse_policy
from extender.kube.convert import pod_from_api
from tests.builders import bound_pod, gpus, node, pod, policy_doc, queue
from tests.cluster import Cluster

NOW = 1_800_000_000.0
HOUR = 3600.0


def elastic_running(count: int, queue_name: str = "", apart: float = HOUR) -> list[dict[str, Any]]:
    """Gang e (8-GPU members of priority 10, minimum 2, maximum 4) on n0…, each member started
    `apart` after the one before (e-2 onward are its extras: the last started, then by name)."""
    labels = {"gangplank.io/gang": "e"}
    if queue_name:
        labels["gangplank.io/queue"] = queue_name
    annotations = {"gangplank.io/gang-size": "2", "gangplank.io/gang-max": "4"}
    return [
        bound_pod(
            pod(f"e-{i}", gpu=8, priority=10, labels=labels, annotations=annotations),
            f"n{i}",
            NOW - 10 * HOUR + i * apart,
        )
        for i in range(count)
    ]


def lone(name: str, on: str, started: float, queue_name: str = "") -> dict[str, Any]:
    labels = {"gangplank.io/queue": queue_name} if queue_name else {}
    return bound_pod(pod(name, gpu=8, labels=labels), on, started)


def waiting(count: int, queue_name: str = "", priority: int = 100) -> list[dict[str, Any]]:
    labels = {"gangplank.io/gang": "w"}
    if queue_name:
        labels["gangplank.io/queue"] = queue_name
    annotations = {"gangplank.io/gang-size": str(count)}
    return [
        pod(f"w-{i}", gpu=8, priority=priority, labels=labels, annotations=annotations)
        for i in range(count)
    ]


def evicted(engine: Engine, cluster: Cluster, count: int, queue_name: str | None) -> list[str]:
    snapshot = cluster.snap()
    members = list(snapshot.groups["gangplank:default/w"])
    book = engine.book_for(snapshot) if engine.policy is not None else None
    engine.preemption.plan(
        snapshot, "gangplank:default/w", members, count, queue_name, NOW, engine.policy, book
    )
    return sorted(e.name for e in engine.preemption.take_evictions())


CASES: list[tuple[str, int, bool, list[str]]] = [
    (
        "a job needing one node takes the gang's extra, not a job alone of lower priority",
        1,
        True,
        ["e-2"],
    ),
    (
        "a job needing two nodes takes the extra, then the rule's next; the minimum keeps running",
        2,
        True,
        ["e-2", "lone"],
    ),
    (
        "a job needing the gang's nodes takes it whole, its extra with its minimum",
        3,
        False,
        ["e-0", "e-1", "e-2"],
    ),
]


@pytest.mark.parametrize(
    "needed,with_lone,victims", [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_preemption_takes_extras_first_and_never_part_of_the_minimum(
    needed: int, with_lone: bool, victims: list[str]
) -> None:
    others = [lone("lone", "n3", NOW - 9 * HOUR)] if with_lone else []
    cluster = Cluster(
        nodes=[node(f"n{i}") for i in range(4 if with_lone else 3)],
        pods=[*elastic_running(3), *others, *waiting(needed)],
    )
    assert evicted(Engine(), cluster, needed, None) == victims


@pytest.mark.parametrize(
    "apart",
    [HOUR, 0.0],
    ids=["members started an hour apart", "members started at once (its minimum counted apart)"],
)
def test_reclaim_takes_a_borrowing_queues_extras_before_its_newest_job(apart: float) -> None:
    cluster = Cluster(
        nodes=[node(f"n{i}") for i in range(4)],
        pods=[
            *elastic_running(3, "research", apart),
            lone("newest", "n3", NOW - HOUR, "research"),
            *waiting(1, "vision", priority=0),
        ],
    )
    policy = parse_policy(
        policy_doc(queue("research"), queue("vision", guarantee=gpus(16))), "policy.yaml"
    )
    assert evicted(Engine(policy=policy), cluster, 1, "vision") == ["e-2"]


def test_an_evicted_extra_is_told_its_gang_keeps_its_minimum() -> None:
    cluster = Cluster(
        nodes=[node(f"n{i}") for i in range(3)], pods=[*elastic_running(3), *waiting(1)]
    )
    engine = Engine()
    snapshot = cluster.snap()
    members = list(snapshot.groups["gangplank:default/w"])
    engine.preemption.plan(snapshot, "gangplank:default/w", members, 1, None, NOW, None, None)
    (eviction,) = engine.preemption.take_evictions()
    assert eviction.shrink is None
    assert eviction.message.endswith(
        "(an extra pod of elastic gang default/e, beyond its minimum: the minimum keeps running; "
        "evicted, not taken back through its workload: its pods are not all of one Indexed Job "
        "or elastic PyTorchJob, whose size gangplank could lower instead)"
    )


def indexed_running(
    *,
    indexed: bool = True,
    completions: int = 4,
    reverse: bool = False,
    kueue: bool = False,
    not_ready: int | None = None,
) -> dict[str, Any]:
    """Job el (Kueue's job-min-parallelism 2, parallelism 4) running index i on node n_i, the
    highest index started first when `reverse`; the Job object and its pods."""
    spec: dict[str, Any] = {
        "parallelism": 4,
        "completions": completions,
        "completionMode": "Indexed" if indexed else "NonIndexed",
    }
    obj = {
        "metadata": {
            "name": "el",
            "namespace": "default",
            "annotations": {"kueue.x-k8s.io/job-min-parallelism": "2"},
            "labels": {"kueue.x-k8s.io/queue-name": "team"} if kueue else {},
        },
        "spec": spec,
    }
    pods = [
        bound_pod(
            pod(
                f"el-{i}",
                gpu=8,
                priority=10,
                job="el",
                labels={"gangplank.io/queue": "research"},
                annotations={"batch.kubernetes.io/job-completion-index": str(i)} if indexed else {},
            ),
            f"n{i}",
            NOW - 10 * HOUR + (3 - i if reverse else i) * HOUR,
            ready=i != not_ready,
        )
        for i in range(4)
    ]
    return {"jobs": [obj], "pods": pods}


def planned(cluster: Cluster, needed: int) -> list[Any]:
    engine = Engine()
    snapshot = cluster.snap()
    members = list(snapshot.groups["gangplank:default/w"])
    engine.preemption.plan(snapshot, "gangplank:default/w", members, needed, None, NOW, None, None)
    return sorted(engine.preemption.take_evictions(), key=lambda e: e.name)


SHRINKS = [
    ("a job needing one node takes index 3: completions and parallelism 4 to 3", 1, False, 3),
    ("a job needing two nodes takes indexes 3 and 2: both to 2", 2, False, 2),
    ("the highest index goes though it started first (its pods by index, not age)", 1, True, 3),
]


@pytest.mark.parametrize("needed,reverse,to", [c[1:] for c in SHRINKS], ids=[c[0] for c in SHRINKS])
def test_an_elastic_indexed_jobs_extras_go_by_lowering_its_completions_and_parallelism(
    needed: int, reverse: bool, to: int
) -> None:
    made = indexed_running(reverse=reverse)
    cluster = Cluster(nodes=[node(f"n{i}") for i in range(4)], jobs=made["jobs"])
    cluster.add("pods", *made["pods"], *waiting(needed))
    evictions = planned(cluster, needed)
    assert [e.name for e in evictions] == [f"el-{i}" for i in range(to, 4)]
    shrink = evictions[0].shrink
    assert shrink is not None and all(e.shrink == shrink for e in evictions)
    assert (shrink.shown, shrink.what, shrink.current, shrink.to) == (
        "Job default/el",
        "completions and parallelism",
        4,
        to,
    )
    assert shrink.patch() == {"spec": {"completions": to, "parallelism": to}}
    assert evictions[0].message.startswith("taken back by gangplank through its workload: ")
    assert "the minimum keeps running" in evictions[0].message


NON_INDEXED = [
    ("a job needing one node takes the pod started last: parallelism 4 to 3", 1, None, ["el-3"], 3),
    (
        "a job needing two nodes takes the two started last: parallelism to 2",
        2,
        None,
        ["el-2", "el-3"],
        2,
    ),
    (
        "a pod not ready goes before the pods ready, as the Job controller removes it",
        1,
        1,
        ["el-1"],
        3,
    ),
]


@pytest.mark.parametrize(
    "needed,not_ready,names,to", [c[1:] for c in NON_INDEXED], ids=[c[0] for c in NON_INDEXED]
)
def test_a_nonindexed_jobs_extras_go_by_lowering_its_parallelism_in_its_controllers_order(
    needed: int, not_ready: int | None, names: list[str], to: int
) -> None:
    """The Job controller, its parallelism lowered, removes the pods not ready first, then those
    ready the shortest time, uncounted: the extras gangplank takes are those."""
    made = indexed_running(indexed=False, not_ready=not_ready)
    cluster = Cluster(nodes=[node(f"n{i}") for i in range(4)], jobs=made["jobs"])
    cluster.add("pods", *made["pods"], *waiting(needed))
    evictions = planned(cluster, needed)
    assert [e.name for e in evictions] == names
    shrink = evictions[0].shrink
    assert shrink is not None and all(e.shrink == shrink for e in evictions)
    assert (shrink.what, shrink.current, shrink.to) == ("parallelism", 4, to)
    assert shrink.patch() == {"spec": {"parallelism": to}}


WHY_EVICTED = [
    (
        "an Indexed Job whose completions are not its parallelism",
        {"completions": 8},
        "Indexed Job default/el has completions 8 and parallelism 4: only an Indexed Job whose "
        "two are equal can be made smaller",
    ),
    (
        "an elastic Indexed Job Kueue manages (Kueue would suspend it)",
        {"kueue": True},
        "Kueue manages Job default/el (label kueue.x-k8s.io/queue-name): Kueue suspends a running "
        "workload whose size no longer matches its Workload",
    ),
]


@pytest.mark.parametrize(
    "kwargs,why", [c[1:] for c in WHY_EVICTED], ids=[f"{c[0]} is evicted" for c in WHY_EVICTED]
)
def test_an_extra_whose_workload_cannot_be_made_smaller_is_evicted_and_told_why(
    kwargs: dict[str, Any], why: str
) -> None:
    made = indexed_running(**kwargs)
    cluster = Cluster(nodes=[node(f"n{i}") for i in range(4)], jobs=made["jobs"])
    cluster.add("pods", *made["pods"], *waiting(1))
    (eviction,) = planned(cluster, 1)
    assert eviction.shrink is None
    assert eviction.message.endswith(f"evicted, not taken back through its workload: {why})")


def test_a_smaller_size_that_would_stop_part_of_the_minimum_is_not_made() -> None:
    """Index 1 is not running (recreated after a failure): taking indexes 3 and 2 by a size of 2
    would remove index 2 and leave index 0 alone, below the minimum of 2."""
    made = indexed_running()
    made["pods"][1]["spec"].pop("nodeName")
    made["pods"][1]["status"] = {"phase": "Pending"}
    cluster = Cluster(nodes=[node(f"n{i}") for i in range(4)], jobs=made["jobs"])
    cluster.add("pods", *made["pods"])
    snapshot = cluster.snap()
    gang = resolve_gang(snapshot, "job:default/el")
    taken = [p for p in gang.bound if p.name in ("el-2", "el-3")]
    shrink, why = through_workload(snapshot, gang, taken)
    assert shrink is None
    assert why == (
        "Job default/el: lowering its completions and parallelism to 2 would leave 1 of its pods "
        "running, fewer than its minimum of 2"
    )
    assert through_workload(snapshot, gang, taken[-1:])[0] == Shrink(
        "Job",
        "batch/v1",
        "jobs",
        "default",
        "el",
        "completions and parallelism",
        JOB_FIELDS,
        4,
        3,
    )


def test_a_pod_alone_of_higher_priority_takes_an_extra_before_any_pod_alone() -> None:
    """Gang e runs 3 (minimum 2) on n0-n2, a pod alone of priority 0 on n3; an 8-GPU pod alone of
    priority 100 finds no room: of the nodes kube-scheduler proposes, gangplank plans it on the
    extra's node (kube-scheduler alone would have taken the pod alone)."""
    cluster = Cluster(
        nodes=[node(f"n{i}") for i in range(4)],
        pods=[*elastic_running(3), lone("other", "n3", NOW - 5 * HOUR)],
    )
    urgent = pod("urgent", gpu=8, priority=100)
    cluster.add("pods", urgent)
    engine = Engine()
    snapshot = cluster.snap()
    asking = pod_from_api(urgent)
    # kube-scheduler proposes each node's lower-priority pods
    proposed = {n: Victims(tuple(p.uid for p in snapshot.nodes[n].pods)) for n in snapshot.nodes}
    extra = next(p for p in snapshot.nodes["n2"].pods if p.name == "e-2")
    kept = engine.preempt(snapshot, asking, proposed, NOW)
    assert kept == {"n2": Victims((extra.uid,))}, "not on n3: its plan is on the extra's node"
    assert [e.name for e in engine.preemption.take_evictions()] == ["e-2"]
    assert engine.reservations.planned_node(asking) == "n2"
