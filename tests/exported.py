"""What gangplank exports on /metrics, for checks that dashboards and alerts read real metrics."""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from flask.testing import FlaskClient

from extender.core.model.gpu_use import GpuUse
from extender.core.queues.policy_parse import parse_policy
from extender.kube.binder import StoreBinder
from extender.kube.requeue_store import LogRequeueStore
from extender.observe import dashboard
from extender.observe.metrics import Metrics
from extender.service.runtime import Runtime
from extender.web.app import create_app
from tests.builders import node, pod, policy_doc, queue
from tests.cluster import Cluster

RULES = Path(__file__).parents[1] / "manifests/monitoring/gangplank-rules.yaml"
SELECTOR = re.compile(r"gangplank_[a-z_]+(?:\{[^}]*\})?")


def selectors() -> dict[str, set[str]]:
    """The metric selectors (name and label matchers) of the dashboard's queries and of the
    alerts' expressions, by where they are read."""
    exprs = {"dashboard": dashboard.expressions(dashboard.model())}
    rules = yaml.safe_load(RULES.read_text())
    exprs["alerts"] = [r["expr"] for g in rules["groups"] for r in g["rules"]]
    return {kind: {m for e in found for m in SELECTOR.findall(e)} for kind, found in exprs.items()}


class _Prometheus:
    """GPU use as read from Prometheus: no pod has data yet."""

    def read(self, window_seconds: float, now: float) -> GpuUse:
        return GpuUse({}, window=window_seconds)


def exported_text() -> str:
    """/metrics of a gangplank with a queue, GPU nodes and waiting work, that has read GPU use
    once (`--prometheus-url` and an idle-GPU rule: gangplank_gpu_use_* appear after a read) and
    its requeue records (gangplank_requeue_records_up appears after a read)."""
    doc = policy_doc(queue("research", guarantee={"nvidia.com/gpu": "8"}))
    doc["lifecycle"] = {"idleGpu": {"below": 5, "for": "30m", "action": "report"}}
    cluster = Cluster(
        nodes=[node("n0", labels={"nvidia.com/gpu.product": "H100"})],
        pods=[pod("w", gpu=1, labels={"gangplank.io/queue": "research"})],
    )
    runtime = Runtime(
        cluster.store,
        StoreBinder(),
        Metrics(),
        preloaded=True,
        policy=parse_policy(doc),
        gpu_use=_Prometheus(),
        requeue_store=LogRequeueStore(),
    )
    runtime.lifecycle_io.read_use()
    runtime.lifecycle_io.load_records()
    client: FlaskClient = create_app(runtime).test_client()
    client.post("/scheduler/filter", json={"Pod": pod("p"), "NodeNames": ["n0"]})
    return client.get("/metrics").get_data(as_text=True)


def exported_names() -> set[str]:
    """Metric names on /metrics of a gangplank with a queue, GPU nodes and waiting work."""
    text = exported_text()
    suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"), "gauge": ("",)}
    names = set()
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            names |= {name.removesuffix("_total") + s for s in suffixes.get(kind, ("",))}
    return names


def observed(text: str, family: str, label: str) -> dict[str, float]:
    """How many observations histogram `family` holds in /metrics `text`, by `label`'s value."""
    from prometheus_client.parser import text_string_to_metric_families

    return {
        sample.labels[label]: sample.value
        for metrics in text_string_to_metric_families(text)
        if metrics.name == family
        for sample in metrics.samples
        if sample.name.endswith("_count")
    }
