"""A real Prometheus (Debian's package) scrapes a real gangplank (`gangplank serve` under gunicorn,
the demo's cluster and policy, the demo's calls for activity) and loads the alert rules; then
every metric selector of every dashboard query and alert expression is asked of Prometheus's HTTP
API: each must name series Prometheus has (no typo'd metric, no wrong label), and every whole
dashboard query must be valid PromQL."""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from extender import dashboard
from extender.demo import CALLS, DATA

ROOT = Path(__file__).parent.parent
RULES = ROOT / "manifests/monitoring/gangplank-rules.yaml"
PROMETHEUS = shutil.which("prometheus")
pytestmark = pytest.mark.skipif(
    PROMETHEUS is None,
    reason="prometheus not installed (Debian package prometheus; `make test` installs it as root)",
)
SELECTOR = re.compile(r"gangplank_[a-z_]+(?:\{[^}]*\})?")
# Families that only have series once the event happened (a label set is born with its first
# event); the demo's calls do not evict, relist or fail. Prometheus must still know the family
# from the scrape's metadata.
EVENT_DRIVEN = {
    "gangplank_preemption_evictions_total",
    "gangplank_preemption_victim_gpu_seconds_total",
    "gangplank_preemption_wait_seconds_bucket",
    "gangplank_cache_relists_total",
    "gangplank_gang_start_seconds_bucket",
    "gangplank_queue_admission_wait_seconds_bucket",
    "gangplank_queue_jobs_waiting_longer_than",
    # No watches when serving a cluster file (the demo): no cache age or sync state per kind.
    "gangplank_cache_age_seconds",
    "gangplank_cache_synced",
}
# A label value that only appears with the event: the selector without it must have series.
EVENT_LABELS = re.compile(r',?\s*code=~"5\.\."')


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=5) as response:
        return json.loads(response.read())


def wait_for(url: str, process: subprocess.Popen[bytes], seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert process.poll() is None, f"the process serving {url} exited"
        try:
            with urllib.request.urlopen(url, timeout=1) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"{url} not ready")


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("prometheus")
    app_port, prom_port = free_port(), free_port()
    base = f"http://127.0.0.1:{app_port}"
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "extender",
            "serve",
            "--cluster-file",
            str(DATA / "demo-cluster.yaml"),
            "--policy",
            str(DATA / "demo-policy.yaml"),
            "--bind",
            f"127.0.0.1:{app_port}",
            "--log-level",
            "warning",
        ]
    )
    prom: subprocess.Popen[bytes] | None = None
    try:
        wait_for(f"{base}/readyz", server)
        for verb, name, _ in CALLS:
            body = (DATA / "demo-requests" / name).read_bytes()
            request = urllib.request.Request(
                f"{base}/scheduler/{verb}", body, {"Content-Type": "application/json"}
            )
            urllib.request.urlopen(request, timeout=10).read()
        config = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(RULES)],
            "scrape_configs": [
                {
                    "job_name": "gangplank",
                    "static_configs": [{"targets": [f"127.0.0.1:{app_port}"]}],
                }
            ],
        }
        (tmp / "prometheus.yml").write_text(yaml.safe_dump(config))
        prom = subprocess.Popen(
            [
                str(PROMETHEUS),
                f"--config.file={tmp / 'prometheus.yml'}",
                f"--storage.tsdb.path={tmp / 'data'}",
                f"--web.listen-address=127.0.0.1:{prom_port}",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        url = f"http://127.0.0.1:{prom_port}"
        wait_for(f"{url}/-/ready", prom)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # a few scrapes, so that rates have two samples
            up = get(f"{url}/api/v1/query?query=" + urllib.parse.quote("count_over_time(up[1m])"))
            if up["data"]["result"] and float(up["data"]["result"][0]["value"][1]) >= 4:
                break
            time.sleep(0.5)
        yield url
    finally:
        for process in (prom, server):
            if process is not None:
                process.terminate()
                process.wait(20)


def query(url: str, expr: str) -> list[Any]:
    answer = get(f"{url}/api/v1/query?query=" + urllib.parse.quote(expr))
    assert answer["status"] == "success", (expr, answer)
    result: list[Any] = answer["data"]["result"]
    return result


def selectors() -> dict[str, set[str]]:
    exprs = {"dashboard": dashboard.expressions(dashboard.model())}
    rules = yaml.safe_load(RULES.read_text())
    exprs["alerts"] = [r["expr"] for g in rules["groups"] for r in g["rules"]]
    return {kind: {m for e in found for m in SELECTOR.findall(e)} for kind, found in exprs.items()}


def test_every_selector_of_the_dashboard_and_the_alerts_names_series_prometheus_has(
    prometheus: str,
) -> None:
    known = set(get(f"{prometheus}/api/v1/label/__name__/values")["data"])
    metadata = get(f"{prometheus}/api/v1/metadata")["data"]
    missing = []
    for selector in sorted(set().union(*selectors().values())):
        selector = EVENT_LABELS.sub("", selector).replace("{}", "")
        name = selector.split("{")[0]
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
