"""GPU use that cannot be read is told in /readyz's detail and never fails readiness: only the
idle-GPU rule waits for it (and acts on no job meanwhile)."""

from __future__ import annotations

from flask.testing import FlaskClient

from extender.core.model.gpu_use import GpuUse
from extender.core.queues.policy import Policy
from extender.core.queues.policy_parse import parse_policy
from extender.kube.binder import StoreBinder
from extender.observe.metrics import Metrics
from extender.service.runtime import Runtime
from extender.web.app import create_app
from tests.builders import FixedGpuUse as Reader
from tests.builders import node, policy_doc, queue
from tests.cluster import Cluster

DOWN = "prometheus http://prometheus:9090: not reachable: [Errno 111] Connection refused"


def idle_rule_policy() -> Policy:
    doc = policy_doc(queue("ml", namespaces=["ml"]))
    doc["lifecycle"] = {"idleGpu": {"below": 5, "for": "30m", "action": "evict"}}
    return parse_policy(doc)


def served(reader: Reader, policy: Policy | None) -> tuple[Runtime, FlaskClient]:
    cluster = Cluster(nodes=[node("n0")])
    runtime = Runtime(
        cluster.store, StoreBinder(), Metrics(), preloaded=True, policy=policy, gpu_use=reader
    )
    return runtime, create_app(runtime).test_client()


def test_prometheus_unreachable_keeps_gangplank_ready_and_the_detail_says_why() -> None:
    reader = Reader(GpuUse({}, ok=False, problem=DOWN, window=1800.0))
    runtime, client = served(reader, idle_rule_policy())
    runtime.lifecycle_io.read_use()
    answer = client.get("/readyz")
    assert answer.status_code == 200 and reader.windows == [1800.0]
    assert answer.get_json() == {
        "ready": True,
        "reason": "cluster view loaded from file; GPU use not read, no job is found idle "
        f"meanwhile: {DOWN}",
    }
    assert "gangplank_gpu_use_up 0.0" in client.get("/metrics").get_data(as_text=True)


def test_the_detail_is_plain_again_once_a_read_succeeds() -> None:
    reader = Reader(GpuUse({}, ok=False, problem=DOWN, window=1800.0))
    runtime, client = served(reader, idle_rule_policy())
    runtime.lifecycle_io.read_use()
    reader.use = GpuUse({("ml", "train-0"): 2.0}, window=1800.0)
    runtime.lifecycle_io._read_at = float("-inf")  # the next read is due
    runtime.lifecycle_io.read_use()
    assert client.get("/readyz").get_json()["reason"] == "cluster view loaded from file"
    assert "gangplank_gpu_use_up 1.0" in client.get("/metrics").get_data(as_text=True)


def test_without_an_idle_gpu_rule_gpu_use_is_not_read_and_not_mentioned() -> None:
    reader = Reader(GpuUse({}, ok=False, problem=DOWN))
    runtime, client = served(reader, parse_policy(policy_doc(queue("ml"))))
    runtime.lifecycle_io.read_use()
    assert reader.windows == []
    assert client.get("/readyz").get_json()["reason"] == "cluster view loaded from file"
    assert "gangplank_gpu_use_up" not in client.get("/metrics").get_data(as_text=True)
