"""A real Prometheus (Debian's package) scrapes a real gangplank (`gangplank serve` under gunicorn,
the demo's cluster and policy, the demo's calls for activity) and loads the alert rules; then
every metric selector of every dashboard query and alert expression is asked of Prometheus's HTTP
API: each must name series Prometheus has (no typo'd metric, no wrong label), and every whole
dashboard query must be valid PromQL."""

from __future__ import annotations

import re
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from extender.observe import dashboard
from loadtest import live
from loadtest.live import get
from tests.exported import selectors

ROOT = Path(__file__).parents[2]
RULES = ROOT / "manifests/monitoring/gangplank-rules.yaml"
pytestmark = pytest.mark.skipif(
    live.PROMETHEUS is None,
    reason="prometheus not installed (Debian package prometheus; `make test` installs it as root)",
)
# Families that only have series once the event happened (a label set is born with its first
# event); the demo's calls do not evict, relist or fail. Prometheus must still know the family
# from the scrape's metadata.
EVENT_DRIVEN = {
    "gangplank_preemption_evictions_total",
    "gangplank_preemption_victim_gpu_seconds_total",
    "gangplank_preemption_wait_seconds_bucket",
    "gangplank_cache_relists_total",
    "gangplank_periodic_errors_total",  # a labelled counter: no series until a step fails
    "gangplank_gang_start_seconds_bucket",
    "gangplank_queue_admission_wait_seconds_bucket",
    "gangplank_queue_jobs_waiting_longer_than",
    # No watches when serving a cluster file (the demo): no cache age or sync state per kind.
    "gangplank_cache_age_seconds",
    "gangplank_cache_synced",
    # The lifecycle rules' counters: the demo's policy has none, and nothing is evicted.
    "gangplank_waste_gpu_seconds_total",
    "gangplank_lifecycle_freed_gpus_total",
    "gangplank_requeues_total",
}
# Exported only once GPU use was read (`--prometheus-url` and an idle-GPU rule; the demo has
# neither), not even as metadata: tests/e2e/test_idle_gpus_live.py asks them of a Prometheus
# scraping a gangplank that reads GPU use.
WITH_PROMETHEUS_URL = {
    "gangplank_gpu_use_up",
    "gangplank_gpu_use_read_errors_total",
    "gangplank_gpu_use_pods",
}
# Exported only where requeue records are kept in a ConfigMap of an API server (the demo serves
# a cluster file), once they were read: tests/service/test_records_unread.py asks it of one.
WITH_AN_API_SERVER = {"gangplank_requeue_records_up"}
# A label value that only appears with the event: the selector without it must have series.
EVENT_LABELS = re.compile(r',?\s*code=~"5\.\."')


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with live.demo_server() as base:
        live.drive(base)
        workdir = tmp_path_factory.mktemp("prometheus")
        with live.prometheus(base.removeprefix("http://"), workdir, rules=RULES) as url:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:  # a few scrapes, so that rates have two samples
                up = get(
                    f"{url}/api/v1/query?query=" + urllib.parse.quote("count_over_time(up[1m])")
                )
                if up["data"]["result"] and float(up["data"]["result"][0]["value"][1]) >= 4:
                    break
                time.sleep(0.5)
            yield url


def query(url: str, expr: str) -> list[Any]:
    answer = get(f"{url}/api/v1/query?query=" + urllib.parse.quote(expr))
    assert answer["status"] == "success", (expr, answer)
    result: list[Any] = answer["data"]["result"]
    return result


def test_every_selector_of_the_dashboard_and_the_alerts_names_series_prometheus_has(
    prometheus: str,
) -> None:
    known = set(get(f"{prometheus}/api/v1/label/__name__/values")["data"])
    metadata = get(f"{prometheus}/api/v1/metadata")["data"]
    missing = []
    for selector in sorted(set().union(*selectors().values())):
        selector = EVENT_LABELS.sub("", selector).replace("{}", "")
        name = selector.split("{")[0]
        if name in WITH_PROMETHEUS_URL | WITH_AN_API_SERVER:
            continue
        if name in EVENT_DRIVEN:
            family = re.sub(r"_(total|bucket|sum|count)$", "", name)
            if name not in known and family not in metadata and name not in metadata:
                missing.append(f"{selector} (not even in the scrape's metadata)")
            continue
        if not query(prometheus, selector):
            missing.append(selector)
    assert not missing, missing


def test_every_dashboard_query_is_valid_promql_prometheus_can_run(prometheus: str) -> None:
    for expr in dashboard.expressions(dashboard.model()):
        query(prometheus, expr.replace("$__rate_interval", "1m"))


def test_prometheus_loaded_every_alert_rule(prometheus: str) -> None:
    groups = get(f"{prometheus}/api/v1/rules")["data"]["groups"]
    loaded = {r["name"] for g in groups for r in g["rules"] if r["type"] == "alerting"}
    rules = yaml.safe_load(RULES.read_text())
    assert loaded == {r["alert"] for g in rules["groups"] for r in g["rules"]}
    assert all(r["health"] == "ok" for g in groups for r in g["rules"]), "a rule failed to run"
