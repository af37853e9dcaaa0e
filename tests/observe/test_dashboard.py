"""The Grafana dashboard: built in code with Grafana's SDK, the committed JSON and ConfigMap are
what the code builds, and every query reads metrics gangplank exports."""

from __future__ import annotations

import json
import re

import yaml

from extender.observe import dashboard
from tests.exported import exported_names


def test_the_committed_dashboard_and_configmap_are_what_the_code_builds() -> None:
    text, configmap = dashboard.rendered()
    assert (dashboard.OUT / "gangplank-dashboard.json").read_text() == text, (
        "run `python -m extender.observe.dashboard` and commit manifests/grafana/"
    )
    assert (dashboard.OUT / "configmap.yaml").read_text() == configmap


def test_the_configmap_is_labelled_for_the_grafana_sidecar_and_holds_the_model() -> None:
    configmap = yaml.safe_load((dashboard.OUT / "configmap.yaml").read_text())
    assert configmap["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert json.loads(configmap["data"]["gangplank.json"])["uid"] == dashboard.UID


def test_the_dashboard_covers_each_question_with_panels() -> None:
    rows = [p["title"] for p in dashboard.model()["panels"] if p["type"] == "row"]
    assert rows == [
        "Cluster",
        "Queues",
        "Gangs",
        "Placement",
        "Preemption",
        "Waste",
        "Extender health",
    ]


def test_every_query_reads_metrics_gangplank_exports() -> None:
    names = exported_names()
    used = {
        m
        for e in dashboard.expressions(dashboard.model())
        for m in re.findall(r"gangplank_[a-z_]+", e)
    }
    assert len(used) > 15 and used <= names, sorted(used - names)
