"""The alerts: valid for Prometheus (promtool), each one tested by `promtool test rules`, the
PrometheusRule equal to the plain rules file, and every metric they read one gangplank exports."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.exported import exported_names, exported_text

ROOT = Path(__file__).parents[2]
RULES = ROOT / "manifests/monitoring/gangplank-rules.yaml"
OPERATOR_RULE = ROOT / "manifests/monitoring/prometheusrule.yaml"
UNIT_TESTS = ROOT / "tests/promtool/alerts_test.yaml"
PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(
    PROMTOOL is None,
    reason="promtool not installed (Debian package prometheus; `make test` installs it as root)",
)


def rules() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(RULES.read_text())
    return loaded


def alerts() -> list[dict[str, Any]]:
    return [r for g in rules()["groups"] for r in g["rules"] if "alert" in r]


@needs_promtool
def test_promtool_accepts_the_rules() -> None:
    assert PROMTOOL is not None
    done = subprocess.run([PROMTOOL, "check", "rules", str(RULES)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


@needs_promtool
def test_promtool_unit_tests_of_every_alert_pass() -> None:
    assert PROMTOOL is not None
    done = subprocess.run(
        [PROMTOOL, "test", "rules", str(UNIT_TESTS)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_alert_has_a_unit_test_in_which_it_fires() -> None:
    tested = yaml.safe_load(UNIT_TESTS.read_text())
    firing = {
        case["alertname"]
        for test in tested["tests"]
        for case in test["alert_rule_test"]
        if case["exp_alerts"]
    }
    assert {a["alert"] for a in alerts()} == firing


def test_the_prometheusrule_carries_the_same_groups_as_the_rules_file() -> None:
    operator = yaml.safe_load(OPERATOR_RULE.read_text())
    assert operator["kind"] == "PrometheusRule"
    assert operator["spec"] == rules()


def test_every_metric_an_alert_reads_is_one_gangplank_exports() -> None:
    names = exported_names()
    used = {m for a in alerts() for m in re.findall(r"gangplank_[a-z_]+", a["expr"])}
    assert used and used <= names, sorted(used - names)


@needs_promtool
def test_promtool_finds_no_naming_problem_in_the_exported_metrics() -> None:
    assert PROMTOOL is not None
    done = subprocess.run(
        [PROMTOOL, "check", "metrics"], input=exported_text(), capture_output=True, text=True
    )
    assert done.returncode == 0 and not done.stdout.strip(), done.stdout + done.stderr


def test_metric_labels_are_bounded_no_pod_or_job_names() -> None:
    labels = set(re.findall(r"[{,]([a-z_]+)=", exported_text()))
    assert not labels & {"pod", "job", "name", "uid", "node", "namespace"}, labels
