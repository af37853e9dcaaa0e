"""gangplank's Grafana dashboard, built with Grafana's own SDK (grafana-foundation-sdk).

  python -m extender.observe.dashboard            # rewrite manifests/grafana/ from this file

manifests/grafana/gangplank-dashboard.json is the dashboard's JSON model; configmap.yaml carries
it with the label the Grafana sidecar looks for (`grafana_dashboard: "1"`). A test rebuilds both
and compares, and checks that every query reads a metric gangplank exports. Not imported by the
server: the SDK is a development dependency.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import yaml
from grafana_foundation_sdk.builders import dashboard, stat, timeseries
from grafana_foundation_sdk.builders import prometheus as prom
from grafana_foundation_sdk.cog.encoder import JSONEncoder

OUT = Path(__file__).resolve().parents[2] / "manifests" / "grafana"
UID = "gangplank-overview"
W, H = 12, 8  # half the width, one panel high


def query(expr: str, legend: str = "", ref: str = "A") -> prom.Dataquery:
    q = prom.Dataquery().expr(expr).ref_id(ref)
    return q.legend_format(legend) if legend else q


def series(
    title: str, unit: str, *queries: prom.Dataquery, description: str = ""
) -> timeseries.Panel:
    panel = timeseries.Panel().title(title).unit(unit).height(H).span(W).min(0)
    if description:
        panel = panel.description(description)
    for q in queries:
        panel = panel.with_target(q)
    return panel


def single(title: str, unit: str, expr: str, description: str = "") -> stat.Panel:
    panel = stat.Panel().title(title).unit(unit).height(4).span(6).with_target(query(expr))
    return panel.description(description) if description else panel


def leader(metric: str) -> str:
    """`metric` of the replica whose scheduler leads: only it reviews jobs and reads GPU use (a
    standby keeps the gauges of when it last led)."""
    return f"{metric} and on (instance) gangplank_leader == 1"


def build() -> dashboard.Dashboard:
    gpu = 'resource="nvidia.com/gpu"'
    board = (
        dashboard.Dashboard("gangplank")
        .uid(UID)
        .tags(["gangplank", "scheduling", "gpu"])
        .refresh("30s")
        .time("now-6h", "now")
        .with_row(dashboard.Row("Cluster"))
        .with_panel(
            single(
                "GPUs allocated",
                "percentunit",
                'sum(gangplank_pool_gpus{state="allocated"}) / '
                'sum(gangplank_pool_gpus{state="allocatable"})',
            )
        )
        .with_panel(
            single(
                "GPUs stranded",
                "none",
                'sum(gangplank_pool_gpus{state="stranded"})',
                "Free GPUs on nodes with fewer free than the smallest GPU pod waiting needs.",
            )
        )
        .with_panel(single("Jobs waiting", "none", "sum(gangplank_queue_pending_jobs)"))
        .with_panel(single("Gangs running", "none", 'sum(gangplank_gangs{state="running"})'))
        .with_row(dashboard.Row("Queues"))
        .with_panel(
            series(
                "GPU usage against guarantee",
                "none",
                query(f"sum by (queue) (gangplank_queue_usage{{{gpu}}})", "{{queue}} used"),
                query(
                    f"sum by (queue) (gangplank_queue_guarantee{{{gpu}}})",
                    "{{queue}} guarantee",
                    "B",
                ),
                query(f"sum by (queue) (gangplank_queue_max{{{gpu}}})", "{{queue}} max", "C"),
            )
        )
        .with_panel(
            series(
                "GPUs borrowed and lent",
                "none",
                query(f"sum by (queue) (gangplank_queue_borrowed{{{gpu}}})", "{{queue}} borrowed"),
                query(f"sum by (queue) (gangplank_queue_lent{{{gpu}}})", "{{queue}} lent", "B"),
            )
        )
        .with_panel(
            series(
                "Jobs waiting",
                "none",
                query("sum by (queue) (gangplank_queue_pending_jobs)", "{{queue}}"),
                query(
                    'sum by (queue) (gangplank_queue_jobs_waiting_longer_than{threshold="1h"})',
                    "{{queue}} over 1h",
                    "B",
                ),
            )
        )
        .with_panel(
            series(
                "Admission wait (p50, p95)",
                "s",
                query(
                    "histogram_quantile(0.5, sum by (le, queue) "
                    "(rate(gangplank_queue_admission_wait_seconds_bucket[$__rate_interval])))",
                    "{{queue}} p50",
                ),
                query(
                    "histogram_quantile(0.95, sum by (le, queue) "
                    "(rate(gangplank_queue_admission_wait_seconds_bucket[$__rate_interval])))",
                    "{{queue}} p95",
                    "B",
                ),
            )
        )
        .with_row(dashboard.Row("Gangs"))
        .with_panel(
            series(
                "Gangs by state",
                "none",
                query("sum by (state) (gangplank_gangs)", "{{state}}"),
                query("sum(gangplank_gang_reserved_pods)", "members reserved", "B"),
            )
        )
        .with_panel(
            series(
                "Time to start (last member created → all bound)",
                "s",
                query(
                    "histogram_quantile(0.5, sum by (le) "
                    "(rate(gangplank_gang_start_seconds_bucket[$__rate_interval])))",
                    "p50",
                ),
                query(
                    "histogram_quantile(0.95, sum by (le) "
                    "(rate(gangplank_gang_start_seconds_bucket[$__rate_interval])))",
                    "p95",
                    "B",
                ),
            )
        )
        .with_row(dashboard.Row("Placement"))
        .with_panel(
            series(
                "Free and stranded GPUs per pool",
                "none",
                query('sum by (pool) (gangplank_pool_gpus{state="free"})', "{{pool}} free"),
                query(
                    'sum by (pool) (gangplank_pool_gpus{state="stranded"})',
                    "{{pool}} stranded",
                    "B",
                ),
            )
        )
        .with_panel(
            series(
                "Plan failures",
                "ops",
                query(
                    "sum by (reason) (rate(gangplank_gang_plan_failures_total[$__rate_interval]))",
                    "{{reason}}",
                ),
            )
        )
        .with_row(dashboard.Row("Preemption"))
        .with_panel(
            series(
                "Evictions",
                "ops",
                query(
                    "sum by (rule, outcome) (rate(gangplank_preemption_evictions_total"
                    "[$__rate_interval]))",
                    "{{rule}} {{outcome}}",
                ),
            )
        )
        .with_panel(
            series(
                "Cost: GPU-hours of evicted work, benefit: wait of preemptors",
                "h",
                query(
                    "sum by (queue) (increase(gangplank_preemption_victim_gpu_seconds_total"
                    "[$__rate_interval])) / 3600",
                    "{{queue}} GPU-h lost",
                ),
                query(
                    "histogram_quantile(0.5, sum by (le, phase) (rate("
                    "gangplank_preemption_wait_seconds_bucket[$__rate_interval]))) / 3600",
                    "preemptor wait {{phase}} p50",
                    "B",
                ),
            )
        )
        .with_row(dashboard.Row("Waste"))
        .with_panel(
            series(
                "GPUs held and not used, by kind",
                "none",
                query(
                    "sum by (kind) (rate(gangplank_waste_gpu_seconds_total[$__rate_interval]))",
                    "{{kind}}",
                ),
                description="GPU-seconds wasted per second (on average, this many GPUs): held by "
                "jobs never all Ready (not-ready), gangs that lost members (broken), jobs whose "
                "GPUs stay below the idleGpu threshold (idle). Counted under a lifecycle: policy.",
            )
        )
        .with_panel(
            series(
                "GPUs freed by lifecycle rule",
                "none",
                query(
                    "sum by (rule) (increase(gangplank_lifecycle_freed_gpus_total"
                    "[$__rate_interval]))",
                    "{{rule}}",
                ),
                description="GPUs given back by evicting whole jobs: not-ready, stale-gang, "
                "max-runtime, idle.",
            )
        )
        .with_panel(
            series(
                "Requeues by rule, and jobs held",
                "none",
                query(
                    "sum by (rule) (increase(gangplank_requeues_total[$__rate_interval]))",
                    "{{rule}} requeues",
                ),
                query(f"max({leader('gangplank_jobs_held')})", "held until a person acts", "B"),
                description="Jobs evicted and requeued (backoff, then held after the requeue "
                "limit; max-runtime: held at once), and the jobs held now.",
            )
        )
        .with_panel(
            series(
                "Idle jobs and their GPUs",
                "none",
                query(f"max({leader('gangplank_idle_jobs')})", "idle jobs"),
                query(f"max({leader('gangplank_idle_gpus')})", "GPUs they hold", "B"),
                description="Running jobs whose every GPU stayed below the idleGpu threshold "
                "over its window (the last review).",
            )
        )
        .with_panel(
            series(
                "GPU use read from Prometheus",
                "none",
                query(f"max({leader('gangplank_gpu_use_up')})", "read (1) or failing (0)"),
                query(f"max({leader('gangplank_gpu_use_pods')})", "pods with data", "B"),
                description="--prometheus-url: 0 while reads fail (no job is found idle "
                "meanwhile; /readyz says why). Empty without an idle-GPU rule.",
            )
        )
        .with_panel(
            series(
                "Requeue records read",
                "none",
                query(f"max({leader('gangplank_requeue_records_up')})", "read (1) or failing (0)"),
                description="--requeue-configmap: 0 while the records cannot be read (the "
                "not-ready and max-runtime rules requeue no job meanwhile; /readyz and `gangplank "
                "status` say why).",
            )
        )
        .with_row(dashboard.Row("Extender health"))
        .with_panel(
            series(
                "Calls by verb",
                "reqps",
                query(
                    "sum by (verb) (rate(gangplank_requests_total[$__rate_interval]))", "{{verb}}"
                ),
                query(
                    'sum by (verb) (rate(gangplank_requests_total{code=~"5.."}[$__rate_interval]))',
                    "{{verb}} errors",
                    "B",
                ),
            )
        )
        .with_panel(
            series(
                "Server time p50 / p99",
                "s",
                query(
                    "histogram_quantile(0.5, sum by (le, verb) (rate("
                    "gangplank_request_duration_seconds_bucket[$__rate_interval])))",
                    "{{verb}} p50",
                ),
                query(
                    "histogram_quantile(0.99, sum by (le, verb) (rate("
                    "gangplank_request_duration_seconds_bucket[$__rate_interval])))",
                    "{{verb}} p99",
                    "B",
                ),
            )
        )
        .with_panel(
            series(
                "Cache age and relists",
                "s",
                query("max by (kind) (gangplank_cache_age_seconds)", "{{kind}} age"),
                query(
                    "sum by (kind) (increase(gangplank_cache_relists_total[$__rate_interval]))",
                    "{{kind}} relists",
                    "B",
                ),
            )
        )
        .with_panel(series("Leader", "none", query("max(gangplank_leader)", "leading replicas")))
    )
    return board


def model() -> dict[str, Any]:
    encoded = JSONEncoder(sort_keys=True, indent=2).encode(build().build())
    loaded: dict[str, Any] = json.loads(encoded)
    return loaded


def expressions(board: dict[str, Any]) -> list[str]:
    return [t["expr"] for p in board.get("panels", []) for t in p.get("targets", [])]


def rendered() -> tuple[str, str]:
    """The JSON model and the sidecar ConfigMap, as written to manifests/grafana/."""
    text = json.dumps(model(), indent=2, sort_keys=True) + "\n"
    configmap = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "gangplank-dashboard",
            "namespace": "gangplank",
            "labels": {"grafana_dashboard": "1", "app.kubernetes.io/name": "gangplank"},
        },
        "data": {"gangplank.json": text},
    }
    head = (
        "# Generated by `python -m extender.observe.dashboard`: "
        "edit extender/observe/dashboard.py instead.\n"
    )
    return text, head + yaml.safe_dump(configmap, sort_keys=False, width=100)


def main(argv: list[str] | None = None) -> int:
    text, configmap = rendered()
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "gangplank-dashboard.json").write_text(text)
    (OUT / "configmap.yaml").write_text(configmap)
    print(f"wrote {OUT}/gangplank-dashboard.json and configmap.yaml")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
