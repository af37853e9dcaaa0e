"""The requeue records kept by earlier processes are back before the first decision on a
requeued job's pods: kube-scheduler asks for its pending pods at once when the process starts or
its scheduler takes the Lease, before the periodic pass has read them."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from extender.cache.handlers import handlers_for
from extender.cache.store import ClusterStore
from extender.core.queues.policy_parse import parse_policy
from extender.kube.binder import StoreBinder
from extender.observe.metrics import Metrics
from extender.service.runtime import Runtime
from extender.web.app import create_app
from tests.builders import gang_pods, node, policy_doc, queue

GANG = "gangplank:default/train"


class Kept:
    """A requeue store holding what an earlier process wrote (or failing to be read)."""

    def __init__(self, records: dict[str, dict[str, Any]], broken: bool = False) -> None:
        self.records = records
        self.broken = broken
        self.loads = 0

    def load(self) -> dict[str, dict[str, Any]]:
        self.loads += 1
        if self.broken:
            raise RuntimeError("cannot read requeue records gangplank/gangplank-requeues: 403")
        return self.records

    def save(self, changes: Mapping[str, dict[str, Any] | None]) -> None:
        pass


def runtime(kept: Kept) -> tuple[Runtime, list[dict[str, Any]]]:
    """4 nodes of 8 GPUs and the 4 new pods of gang train, requeued by an earlier process."""
    store = ClusterStore()
    handlers_for(store)["nodes"].replace([node(f"n{i}", gpu=8) for i in range(4)])
    members = gang_pods("train", 4, gpu=8, job="train")
    handlers_for(store)["pods"].replace(members)
    doc = policy_doc(queue("team", namespaces=["default"]))
    doc["lifecycle"] = {"readyTimeout": "10m"}
    policy = parse_policy(doc, "policy.yaml")
    return (
        Runtime(store, StoreBinder(), Metrics(), preloaded=True, policy=policy, requeue_store=kept),
        members,
    )


def filter_answer(rt: Runtime, member: dict[str, Any]) -> Any:
    body = {"Pod": member, "NodeNames": [f"n{i}" for i in range(4)]}
    response = create_app(rt).test_client().post("/scheduler/filter", json=body)
    assert response.status_code == 200
    return response.get_json()


def test_a_filter_asked_before_the_first_pass_holds_a_requeued_jobs_new_pods() -> None:
    now = time.time()
    record = {
        "count": 1,
        "nextTry": now + 60,
        "reason": "pods not ready within 10m (train-3: ImagePullBackOff)",
        "held": False,
        "updated": now,
        "owner": "job-train",
        "limit": 5,
    }
    kept = Kept({GANG: record})
    rt, members = runtime(kept)
    answer = filter_answer(rt, members[0])  # no periodic pass has run
    assert answer["NodeNames"] == []
    reasons = set(answer["FailedAndUnresolvableNodes"].values())
    assert len(reasons) == 1
    assert reasons.pop().startswith(
        "gang default/train requeued 1 of 5 times: pods not ready within 10m "
        "(train-3: ImagePullBackOff); next try in "
    )
    filter_answer(rt, members[1])
    assert kept.loads == 1, "read once"


def test_a_filter_goes_on_when_the_records_cannot_be_read_and_leaves_trying_again_to_the_pass() -> (
    None
):
    kept = Kept({}, broken=True)
    rt, members = runtime(kept)
    assert len(filter_answer(rt, members[0])["NodeNames"]) == 1, "planned as without records"
    filter_answer(rt, members[1])
    assert kept.loads == 1, "not read again by every call"
    rt.kicker.run_once()
    assert kept.loads == 2, "the periodic pass tries again"


def test_records_that_cannot_be_read_pause_the_rules_that_requeue_and_say_so_until_they_can() -> (
    None
):
    kept = Kept({}, broken=True)
    rt, _ = runtime(kept)
    client = create_app(rt).test_client()
    rt.kicker.run_once()
    paused = "cannot read requeue records gangplank/gangplank-requeues: 403 (the not-ready and "
    assert client.get("/readyz").get_json() == {
        "ready": True,
        "reason": "cluster view loaded from file; lifecycle rules paused: "
        f"{paused}max-runtime rules requeue no job until the records are read; tried again "
        "every pass)",
    }
    assert client.get("/status").get_json()["paused"]["lifecycle"].startswith(paused)
    assert "gangplank_requeue_records_up 0.0" in client.get("/metrics").get_data(as_text=True)
    kept.broken = False
    rt.kicker.run_once()
    assert client.get("/readyz").get_json()["reason"] == "cluster view loaded from file"
    assert client.get("/status").get_json()["paused"] == {}
    assert "gangplank_requeue_records_up 1.0" in client.get("/metrics").get_data(as_text=True)


def test_without_a_store_of_records_nothing_is_paused_and_no_series_is_exported() -> None:
    rt = Runtime(ClusterStore(), StoreBinder(), Metrics(), preloaded=True)
    client = create_app(rt).test_client()
    rt.kicker.run_once()
    assert client.get("/status").get_json()["paused"] == {}
    assert "gangplank_requeue_records_up" not in client.get("/metrics").get_data(as_text=True)
