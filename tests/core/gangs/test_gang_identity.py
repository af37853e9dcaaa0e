"""Who is a gang and how big: every source of the design table, and nonsense reported clearly."""

from __future__ import annotations

from typing import Any

import pytest

from extender.core.gangs.gang import resolve_gang
from extender.core.model.keys import group_key
from extender.kube.convert import pod_from_api
from tests.builders import job, pod, pod_group, pod_info
from tests.cluster import Cluster

SOURCES: list[tuple[str, dict[str, Any], str]] = [
    ("gangplank label", {"labels": {"gangplank.io/gang": "g"}}, "gangplank:ml/g"),
    ("Volcano annotation", {"annotations": {"scheduling.k8s.io/group-name": "g"}}, "volcano:ml/g"),
    ("coscheduling label", {"labels": {"scheduling.x-k8s.io/pod-group": "g"}}, "coscheduling:ml/g"),
    ("Kueue pod group", {"labels": {"kueue.x-k8s.io/pod-group-name": "g"}}, "kueue:ml/g"),
    (
        "a Job's pod with a queue label",
        {"labels": {"gangplank.io/queue": "q"}, "job": "train"},
        "job:ml/train",
    ),
]


@pytest.mark.parametrize(
    "kwargs,key", [s[1:] for s in SOURCES], ids=[f"{s[0]} names the gang" for s in SOURCES]
)
def test_each_source_names_the_gang(kwargs: dict[str, Any], key: str) -> None:
    assert group_key(pod_info(namespace="ml", **kwargs)) == key


def test_a_jobs_pod_without_a_queue_label_is_no_gang() -> None:
    assert group_key(pod_info(job="train")) is None


def members(count: int, **kwargs: Any) -> list[dict[str, Any]]:
    return [pod(f"m{i}", namespace="ml", **kwargs) for i in range(count)]


SIZES: list[tuple[str, dict[str, Any], dict[str, Any], int]] = [
    (
        "gangplank gang-size annotation",
        {"labels": {"gangplank.io/gang": "g"}, "annotations": {"gangplank.io/gang-size": "4"}},
        {},
        4,
    ),
    (
        "Volcano PodGroup minMember",
        {"annotations": {"scheduling.k8s.io/group-name": "g"}},
        {"volcano_podgroups": [pod_group("g", 3, namespace="ml")]},
        3,
    ),
    (
        "coscheduling PodGroup minMember",
        {"labels": {"scheduling.x-k8s.io/pod-group": "g"}},
        {"coscheduling_podgroups": [pod_group("g", 2, namespace="ml")]},
        2,
    ),
    (
        "Kueue pod-group-total-count",
        {
            "labels": {"kueue.x-k8s.io/pod-group-name": "g"},
            "annotations": {"kueue.x-k8s.io/pod-group-total-count": "5"},
        },
        {},
        5,
    ),
    (
        "Job parallelism",
        {"labels": {"gangplank.io/queue": "q"}, "job": "g"},
        {"jobs": [job("g", 4, namespace="ml")]},
        4,
    ),
    (
        "Job completions below parallelism",
        {"labels": {"gangplank.io/queue": "q"}, "job": "g"},
        {"jobs": [job("g", 4, completions=2, namespace="ml")]},
        2,
    ),
]


@pytest.mark.parametrize(
    "kwargs,objects,size",
    [s[1:] for s in SIZES],
    ids=[f"the size comes from the {s[0]}" for s in SIZES],
)
def test_each_source_gives_the_size(
    kwargs: dict[str, Any], objects: dict[str, Any], size: int
) -> None:
    cluster = Cluster(pods=members(2, **kwargs), **objects)
    key = group_key(pod_info(namespace="ml", **kwargs))
    assert key is not None
    gang = resolve_gang(cluster.snap(), key)
    assert (gang.problem, gang.size, len(gang.members)) == ("", size, 2)


BAD: list[tuple[str, list[dict[str, Any]], dict[str, Any], str]] = [
    (
        "a size of 0",
        members(1, labels={"gangplank.io/gang": "g"}, annotations={"gangplank.io/gang-size": "0"}),
        {},
        "gang ml/g: the gang size gangplank.io/gang-size is '0'; a gang needs at least 1 member",
    ),
    (
        "a negative size",
        members(1, labels={"gangplank.io/gang": "g"}, annotations={"gangplank.io/gang-size": "-3"}),
        {},
        "at least 1 member",
    ),
    (
        "a size that is text",
        members(
            1, labels={"gangplank.io/gang": "g"}, annotations={"gangplank.io/gang-size": "eight"}
        ),
        {},
        "is 'eight', not a whole number",
    ),
    (
        "an absurd size",
        members(
            1, labels={"gangplank.io/gang": "g"}, annotations={"gangplank.io/gang-size": "1000000"}
        ),
        {},
        "more than the 10000 members gangplank accepts",
    ),
    (
        "no size at all",
        members(1, labels={"gangplank.io/gang": "g"}),
        {},
        "no size: set the annotation gangplank.io/gang-size on its pods",
    ),
    (
        "members that disagree",
        [
            pod(
                "a",
                namespace="ml",
                labels={"gangplank.io/gang": "g"},
                annotations={"gangplank.io/gang-size": "4"},
            ),
            pod(
                "b",
                namespace="ml",
                labels={"gangplank.io/gang": "g"},
                annotations={"gangplank.io/gang-size": "8"},
            ),
        ],
        {},
        "its pods disagree on the gang size ('4' on pod a, '8' on pod b)",
    ),
    (
        "a Volcano gang without its PodGroup",
        members(1, annotations={"scheduling.k8s.io/group-name": "g"}),
        {},
        "waiting for its Volcano PodGroup ml/g (not found)",
    ),
    (
        "a PodGroup with minMember text",
        members(1, labels={"scheduling.x-k8s.io/pod-group": "g"}),
        {"coscheduling_podgroups": [pod_group("g", "many", namespace="ml")]},
        "minMember of PodGroup ml/g is 'many', not a whole number",
    ),
    (
        "a Job not seen yet",
        members(1, labels={"gangplank.io/queue": "q"}, job="g"),
        {},
        "waiting for Job ml/g (not in gangplank's cache yet)",
    ),
]


@pytest.mark.parametrize(
    "pods,objects,problem",
    [b[1:] for b in BAD],
    ids=[f"{b[0]} is reported, not crashed on" for b in BAD],
)
def test_nonsense_sizes_are_reported_clearly(
    pods: list[dict[str, Any]], objects: dict[str, Any], problem: str
) -> None:
    cluster = Cluster(pods=pods, **objects)
    key = next(iter(cluster.snap().groups))
    gang = resolve_gang(cluster.snap(), key)
    assert gang.size == 0 and problem in gang.problem


GANGPLANK: dict[str, Any] = {"labels": {"gangplank.io/gang": "g"}}


def kueue_elastic(obj: dict[str, Any], minimum: str) -> dict[str, Any]:
    obj["metadata"]["annotations"] = {"kueue.x-k8s.io/job-min-parallelism": minimum}
    return obj


def pytorch_pods(name: str, *, masters: int, workers: int) -> list[dict[str, Any]]:
    """A PyTorchJob's pods as the training operator makes them (labels, owner), in a queue."""
    made = []
    for kind, count in (("master", masters), ("worker", workers)):
        for i in range(count):
            labels = {
                "training.kubeflow.org/job-name": name,
                "training.kubeflow.org/replica-type": kind,
                "training.kubeflow.org/replica-index": str(i),
                "gangplank.io/queue": "q",
            }
            made.append(
                pod(
                    f"{name}-{kind}-{i}",
                    namespace="ml",
                    labels=labels,
                    owner=("kubeflow.org/v1", "PyTorchJob", name),
                )
            )
    return made


def pytorch_job(
    name: str,
    *,
    workers: int,
    masters: int = 0,
    least: int | bool | None = False,
    most: int | None = None,
) -> dict[str, Any]:
    """A PyTorchJob (`least` False: no elasticPolicy; None: a bound left out)."""
    replicas: dict[str, Any] = {"Worker": {"replicas": workers}}
    if masters:
        replicas["Master"] = {"replicas": masters}
    spec: dict[str, Any] = {"pytorchReplicaSpecs": replicas}
    if least is not False:
        policy: dict[str, Any] = {"rdzvBackend": "c10d"}
        if least is not None:
            policy["minReplicas"] = least
        if most is not None:
            policy["maxReplicas"] = most
        spec["elasticPolicy"] = policy
    return {"metadata": {"name": name, "namespace": "ml"}, "spec": spec}


ELASTIC: list[tuple[str, list[dict[str, Any]], dict[str, Any], tuple[int, int]]] = [
    (
        "gangplank.io/gang-max above gangplank.io/gang-size",
        members(
            3,
            **GANGPLANK,
            annotations={"gangplank.io/gang-size": "2", "gangplank.io/gang-max": "4"},
        ),
        {},
        (2, 4),
    ),
    (
        "a Job's parallelism above the gang size its pods carry",
        members(3, **GANGPLANK, annotations={"gangplank.io/gang-size": "2"}, job="train"),
        {"jobs": [job("train", 4, namespace="ml")]},
        (2, 4),
    ),
    (
        "a queued Job's parallelism above the gang size its pods carry",
        members(
            3,
            labels={"gangplank.io/queue": "q"},
            annotations={"gangplank.io/gang-size": "2"},
            job="train",
        ),
        {"jobs": [job("train", 4, namespace="ml")]},
        (2, 4),
    ),
    (
        "a coscheduling PodGroup's minMember below its pods",
        members(3, labels={"scheduling.x-k8s.io/pod-group": "g"}),
        {"coscheduling_podgroups": [pod_group("g", 2, namespace="ml")]},
        (2, 3),
    ),
    (
        "a Volcano PodGroup's minMember (the job's minAvailable) below its pods",
        members(3, annotations={"scheduling.k8s.io/group-name": "g"}),
        {"volcano_podgroups": [pod_group("g", 2, namespace="ml")]},
        (2, 3),
    ),
    (
        "a gang size alone (not elastic)",
        members(3, **GANGPLANK, annotations={"gangplank.io/gang-size": "3"}),
        {},
        (3, 3),
    ),
    (
        "a Job's parallelism alone (not elastic)",
        members(2, labels={"gangplank.io/queue": "q"}, job="train"),
        {"jobs": [job("train", 4, namespace="ml")]},
        (4, 4),
    ),
    (
        "Kueue's job-min-parallelism on the Job (the minimum) and its parallelism (the maximum)",
        members(2, labels={"gangplank.io/queue": "q"}, job="train"),
        {"jobs": [kueue_elastic(job("train", 4, namespace="ml"), "2")]},
        (2, 4),
    ),
    (
        "Kueue's job-min-parallelism of 0 (Kueue may shrink it away; gangplank keeps one)",
        members(2, labels={"gangplank.io/queue": "q"}, job="train"),
        {"jobs": [kueue_elastic(job("train", 3, namespace="ml"), "0")]},
        (1, 3),
    ),
    (
        "a PyTorchJob's elasticPolicy (minReplicas, maxReplicas), its Master on top",
        pytorch_pods("pt", masters=1, workers=2),
        {"pytorchjobs": [pytorch_job("pt", workers=2, masters=1, least=1, most=3)]},
        (2, 4),
    ),
    (
        "a PyTorchJob's elasticPolicy without bounds (the operator takes its Worker replicas)",
        pytorch_pods("pt", masters=0, workers=2),
        {"pytorchjobs": [pytorch_job("pt", workers=2, least=None, most=None)]},
        (2, 2),
    ),
    (
        "a PyTorchJob without elasticPolicy (every replica, not elastic)",
        pytorch_pods("pt", masters=1, workers=3),
        {"pytorchjobs": [pytorch_job("pt", workers=3, masters=1)]},
        (4, 4),
    ),
]


@pytest.mark.parametrize(
    "pods,objects,least_most",
    [e[1:] for e in ELASTIC],
    ids=[f"the minimum and maximum come from {e[0]}" for e in ELASTIC],
)
def test_an_elastic_gang_reads_its_minimum_and_maximum(
    pods: list[dict[str, Any]], objects: dict[str, Any], least_most: tuple[int, int]
) -> None:
    cluster = Cluster(pods=pods, **objects)
    gang = resolve_gang(cluster.snap(), next(iter(cluster.snap().groups)))
    assert gang.problem == ""
    assert (gang.size, gang.most, gang.elastic) == (*least_most, least_most[1] > least_most[0])


def test_a_gang_maximum_below_its_size_is_reported() -> None:
    annotations = {"gangplank.io/gang-size": "4", "gangplank.io/gang-max": "2"}
    cluster = Cluster(pods=members(1, **GANGPLANK, annotations=annotations))
    gang = resolve_gang(cluster.snap(), "gangplank:ml/g")
    assert gang.size == 0
    assert "the gang maximum gangplank.io/gang-max is 2, below its size 4" in gang.problem


def test_a_pytorchjob_not_in_the_cache_waits_and_says_where_to_look() -> None:
    gang = resolve_gang(
        Cluster(pods=pytorch_pods("pt", masters=0, workers=2)).snap(), "pytorch:ml/pt"
    )
    assert gang.problem == (
        "gang ml/pt: waiting for PyTorchJob ml/pt (not in gangplank's cache yet; if it stays, the "
        "watch of pytorchjobs is not running: see /readyz)"
    )


def test_a_pytorchjob_pod_without_a_queue_label_or_the_operators_labels_is_no_gang() -> None:
    bare = pytorch_pods("pt", masters=0, workers=1)[0]
    del bare["metadata"]["labels"]["gangplank.io/queue"]
    made_by_hand = pod(
        "x", labels={"gangplank.io/queue": "q"}, owner=("kubeflow.org/v1", "PyTorchJob", "pt")
    )
    assert [group_key(pod_from_api(p)) for p in (bare, made_by_hand)] == [None, None]


def test_the_extras_of_an_indexed_workload_are_its_highest_indexes_whatever_started_last() -> None:
    pods = pytorch_pods("pt", masters=1, workers=3)
    for i, member in enumerate(pods):  # the master started last, worker 2 first
        member["spec"]["nodeName"] = "n0"
        member["status"] = {"phase": "Running"}
        member["metadata"]["creationTimestamp"] = f"2026-12-01T10:0{9 - 2 * i}:00Z"
    objects = [pytorch_job("pt", workers=3, masters=1, least=1, most=3)]
    gang = resolve_gang(Cluster(pods=pods, pytorchjobs=objects).snap(), "pytorch:ml/pt")
    assert [p.name for p in gang.extras] == ["pt-worker-2", "pt-worker-1"]


def test_the_extras_are_the_bound_members_beyond_the_minimum_the_last_started_first() -> None:
    annotations = {"gangplank.io/gang-size": "2", "gangplank.io/gang-max": "4"}
    pods = [
        pod(
            f"m{i}",
            namespace="ml",
            node="n0",
            phase="Running",
            **GANGPLANK,
            annotations=annotations,
            created=f"2026-12-01T10:0{i}:00Z",
        )
        for i in range(3)
    ]
    gang = resolve_gang(Cluster(pods=pods).snap(), "gangplank:ml/g")
    assert gang.whole and [p.name for p in gang.extras] == ["m2"]
