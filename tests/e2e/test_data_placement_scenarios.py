"""Data-aware placement end to end (docs/data-placement.md): gangs go where their dataset is
cached, a required dataset waits with a reason naming it, and racks' shared storage links keep
within their budgets — fake API server, gangplank over HTTP, and the kube-scheduler stand-in."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import pytest

from extender.core.queues.policy import Policy
from extender.core.queues.policy_parse import parse_policy
from tests.builders import gang_pods, node, pod, policy_doc, queue
from tests.fakeapi import FakeApiServer
from tests.scheduler_sim import Extender, KubeScheduler

RACK = "network.gangplank.io/rack"
CACHED = {"data.gangplank.io/imagenet": "cached"}
FLUID = {"fluid.io/s-default-imagenet": "true", "fluid.io/dataset-num": "1"}


def put_racks(
    api: FakeApiServer, racks: int, per_rack: int, cached: dict[str, dict[str, str]]
) -> None:
    """Racks r1… of `per_rack` 8-GPU nodes r1-0…; `cached`: extra labels per node name."""
    for r in range(1, racks + 1):
        for i in range(per_rack):
            name = f"r{r}-{i}"
            labels = {RACK: f"r{r}", **cached.get(name, {})}
            api.put("nodes", node(name, gpu=8, cpu="64", labels=labels))


def reading(members: list[dict[str, Any]], **notes: str) -> list[dict[str, Any]]:
    for member in members:
        member["metadata"]["annotations"].update(notes)
    return members


def placed_gang(api: FakeApiServer, members: list[dict[str, Any]]) -> dict[str, str]:
    """Where gangplank and the stand-in scheduler put the gang `members` (pod -> node)."""
    with Extender(api) as extender:
        scheduler = KubeScheduler(api, extender)
        for member in members:
            api.put("pods", member)
        scheduler.settle()
        return scheduler.bound(members[0]["metadata"]["labels"]["gangplank.io/gang"])


def racks_of(placed: dict[str, str]) -> set[str]:
    return {name.split("-")[0] for name in placed.values()}


def named_on_it(members: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return reading(members, **{"gangplank.io/dataset": "imagenet"})


def mounting_its_pvc(members: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # Fluid names a Dataset's PVC after it; the nodes caching it carry fluid.io/s-<ns>-<name>.
    for member in members:
        member["spec"]["volumes"] = [
            {"name": "data", "persistentVolumeClaim": {"claimName": "imagenet"}}
        ]
    return members


@pytest.mark.parametrize(
    ("cached", "reads"),
    [(CACHED, named_on_it), (FLUID, mounting_its_pvc)],
    ids=[
        "a dataset named on its pods, cached per gangplank's node label",
        "a Fluid Dataset's PVC, cached per Fluid's node label",
    ],
)
def test_a_gang_whose_dataset_is_cached_in_one_rack_lands_in_that_rack(
    api: FakeApiServer, cached: dict[str, str], reads: Callable[[list[Any]], list[Any]]
) -> None:
    # Three equal racks: without its data the gang would take the first, r1.
    put_racks(api, 3, 4, {"r2-1": cached, "r2-3": cached})
    placed = placed_gang(api, reads(gang_pods("train", 4, gpu=8)))
    assert len(placed) == 4
    assert racks_of(placed) == {"r2"}, placed


def test_a_preferred_dataset_whose_rack_is_full_lets_the_gang_run_in_another_rack(
    api: FakeApiServer,
) -> None:
    put_racks(api, 2, 4, {"r2-0": CACHED})
    for i in range(2):
        api.put("pods", pod(f"busy-{i}", node=f"r2-{i}", gpu=8, phase="Running"))
    placed = placed_gang(api, named_on_it(gang_pods("train", 4, gpu=8)))
    assert len(placed) == 4
    assert racks_of(placed) == {"r1"}, "r2 has room for 2 of 4: the gang runs in r1"


def test_a_required_dataset_cached_only_on_full_nodes_waits_with_a_reason_naming_it(
    api: FakeApiServer,
) -> None:
    put_racks(api, 2, 4, {"r2-0": CACHED, "r2-1": CACHED})
    for i in range(2):
        api.put("pods", pod(f"busy-{i}", node=f"r2-{i}", gpu=8, phase="Running"))
    with Extender(api) as extender:
        scheduler = KubeScheduler(api, extender)
        notes = {"gangplank.io/dataset": "imagenet", "gangplank.io/dataset-policy": "required"}
        for member in reading(gang_pods("train", 2, gpu=8), **notes):
            api.put("pods", member)
        scheduler.settle()
        assert scheduler.bound("train") == {}, "6 free nodes, none with the data"
        assert scheduler.reasons["default/train-0"] == (
            "gang default/train: dataset imagenet is cached on no node with room "
            "(cached on 2 nodes in rack r2, all full)"
        )
        assert extender.runtime.scheduler.reservations.pods() == 0
        api.delete("pods", "default", "busy-0")
        api.delete("pods", "default", "busy-1")
        scheduler.settle(timeout=30, until=lambda: len(scheduler.bound("train")) == 2)
        assert sorted(scheduler.bound("train").values()) == ["r2-0", "r2-1"]


def budget_policy(mode: str) -> Policy:
    doc = policy_doc(queue("q"))
    doc["topology"] = {"budgets": {"rack": {"storageRead": {"perDomain": "24Gi", "mode": mode}}}}
    return parse_policy(doc, "policy.yaml")


def hungry_job(api: FakeApiServer, name: str) -> None:
    """A one-pod job of 2 GPUs that reads 8Gi/s from storage."""
    for member in reading(gang_pods(name, 1, gpu=2), **{"gangplank.io/storage-read": "8Gi"}):
        api.put("pods", member)


def run_jobs(api: FakeApiServer, scheduler: KubeScheduler, names: list[str]) -> None:
    """Each job in turn, bound before the next comes (each counts against its rack's budget)."""
    for name in names:
        hungry_job(api, name)
        scheduler.settle(timeout=30, until=partial(bound_one, scheduler, name))


def bound_one(scheduler: KubeScheduler, name: str) -> bool:
    return len(scheduler.bound(name)) == 1


@pytest.mark.parametrize(
    "mode", ["preferred", "required"], ids=["a preferred budget", "a required budget"]
)
def test_a_rack_budget_of_3_data_hungry_jobs_admits_the_fourth_into_another_rack(
    api: FakeApiServer, mode: str
) -> None:
    put_racks(api, 2, 2, {})
    with Extender(api, policy=budget_policy(mode)) as extender:
        scheduler = KubeScheduler(api, extender)
        run_jobs(api, scheduler, [f"job{i}" for i in range(3)])
        first = {n for i in range(3) for n in scheduler.bound(f"job{i}").values()}
        assert len(first) == 1, "packed on one node, of one rack"
        run_jobs(api, scheduler, ["job3"])
        fourth = scheduler.bound("job3")
        assert len(fourth) == 1
        assert racks_of(fourth) != {next(iter(first)).split("-")[0]}, "the full rack's budget"


@pytest.mark.parametrize(
    ("mode", "reason"),
    [
        (
            "required",
            "gang default/job6: no rack has storageRead budget left (rack r1 storageRead "
            "budget 24Gi/s: 24Gi/s in use, this job needs 8Gi/s)",
        ),
        ("preferred", None),
    ],
    ids=[
        "a required budget: the job waits, the reason names the rack and its figures",
        "a preferred budget: the job runs in an over-budget rack, nothing else fits",
    ],
)
def test_once_every_rack_is_at_its_budget_the_next_job(
    api: FakeApiServer, mode: str, reason: str | None
) -> None:
    put_racks(api, 2, 2, {})
    with Extender(api, policy=budget_policy(mode)) as extender:
        scheduler = KubeScheduler(api, extender)
        run_jobs(api, scheduler, [f"job{i}" for i in range(6)])
        assert all(len(scheduler.bound(f"job{i}")) == 1 for i in range(6))
        if reason is None:
            run_jobs(api, scheduler, ["job6"])
            assert len(scheduler.bound("job6")) == 1
        else:
            hungry_job(api, "job6")
            scheduler.settle()
            assert scheduler.bound("job6") == {}, "GPUs are free, storage links are not"
            assert scheduler.reasons["default/job6-0"] == reason
