"""Settings: flags over GANGPLANK_* variables over defaults, checked once at start."""

from __future__ import annotations

from pathlib import Path

import pytest

from extender.cli.main import main
from extender.core.queues.policy import Policy
from extender.policy.file import PolicyWatcher
from extender.service.settings import SettingsError, parse_serve_settings


def test_flags_win_over_variables_and_variables_over_defaults() -> None:
    env = {
        "GANGPLANK_BIND": "127.0.0.1:19000",
        "GANGPLANK_THREADS": "4",
        "GANGPLANK_HOLD_SECONDS": "30",
        "KUBECONFIG": "/etc/kube/config",
    }
    settings = parse_serve_settings(["--threads", "12"], env)
    assert (settings.bind, settings.threads, settings.hold_seconds) == ("127.0.0.1:19000", 12, 30.0)
    assert settings.kubeconfig == "/etc/kube/config"
    assert settings.url_prefix == "/scheduler" and settings.reservation_seconds == 60.0


def test_requeue_records_are_kept_in_gangplanks_own_namespace_unless_told_otherwise() -> None:
    in_pod = parse_serve_settings([], {"POD_NAMESPACE": "gp"})
    assert in_pod.requeue_configmap_ref == ("gp", "gangplank-requeues")
    told = parse_serve_settings(
        ["--requeue-configmap", "ops/gp.requeues"],
        {"POD_NAMESPACE": "gangplank", "GANGPLANK_REQUEUE_CONFIGMAP": "x/y"},
    )
    assert told.requeue_configmap_ref == ("ops", "gp.requeues")
    from_variable = parse_serve_settings([], {"GANGPLANK_REQUEUE_CONFIGMAP": "x/y"})
    assert from_variable.requeue_configmap_ref == ("x", "y")


@pytest.mark.parametrize(
    ("args", "env", "on"),
    [
        ([], {}, True),
        (["--no-bind-planned-members"], {}, False),
        ([], {"GANGPLANK_BIND_PLANNED_MEMBERS": "false"}, False),
        (["--bind-planned-members"], {"GANGPLANK_BIND_PLANNED_MEMBERS": "0"}, True),
    ],
    ids=[
        "gangplank binds a plan's other members by default",
        "--no-bind-planned-members leaves every member to kube-scheduler",
        "so does GANGPLANK_BIND_PLANNED_MEMBERS=false",
        "the flag wins over the variable",
    ],
)
def test_planned_members_are_bound_by_gangplank_unless_turned_off(
    args: list[str], env: dict[str, str], on: bool
) -> None:
    assert parse_serve_settings(args, env).bind_planned_members is on


def test_in_cluster_ignores_a_kubeconfig() -> None:
    settings = parse_serve_settings(["--in-cluster"], {"KUBECONFIG": "/x"})
    assert settings.in_cluster and settings.kubeconfig is None


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--url-prefix", "scheduler"], "must start with '/'"),
        (["--leader-lease", "a/b/c"], r"must be \[NAMESPACE/\]NAME"),
        (["--reservation-seconds", "0"], "--reservation-seconds must be > 0"),
        (["--tls-cert", "/nonexistent.crt", "--tls-key", "/nonexistent.key"], "no such file"),
        (["--tls-client-ca", "/ca.crt"], "needs --tls-cert"),
        (["--prometheus-url", "prometheus:9090"], "must start with http:// or https://"),
        (["--gpu-util-metric", "DCGM GPU UTIL"], "is not a Prometheus metric name"),
        (["--gpu-util-pod-label", 'pod"} or vector(1'], "pod label .* is not a Prometheus label"),
        (["--gpu-util-namespace-label", "pod"], "namespace and pod label are both 'pod'"),
        (["--requeue-configmap", "gangplank/requeues/1"], r"must be \[NAMESPACE/\]NAME"),
        (["--requeue-configmap", "gangplank/Requeues_1"], r"must be \[NAMESPACE/\]NAME"),
    ],
    ids=[
        "a prefix without a slash",
        "a lease with two slashes",
        "a zero reservation time",
        "a missing certificate",
        "mutual TLS without a certificate",
        "a Prometheus address without a scheme",
        "a metric name with spaces",
        "a label name that would change the query",
        "one label for namespace and pod",
        "a requeue ConfigMap with two slashes",
        "a requeue ConfigMap name Kubernetes refuses",
    ],
)
def test_settings_that_cannot_work_are_refused_with_the_reason(
    argv: list[str], message: str
) -> None:
    with pytest.raises(SettingsError, match=message):
        parse_serve_settings(argv, {})


def test_gpu_use_is_read_only_with_a_prometheus_url_from_the_metric_and_labels_set() -> None:
    settings = parse_serve_settings([], {})
    assert settings.prometheus_url == "", "off unless set"
    assert (
        settings.gpu_util_metric,
        settings.gpu_util_namespace_label,
        settings.gpu_util_pod_label,
    ) == ("DCGM_FI_DEV_GPU_UTIL", "namespace", "pod")
    env = {
        "GANGPLANK_PROMETHEUS_URL": "http://prometheus.monitoring:9090",
        "GANGPLANK_GPU_UTIL_NAMESPACE_LABEL": "exported_namespace",
        "GANGPLANK_GPU_UTIL_POD_LABEL": "exported_pod",
    }
    settings = parse_serve_settings(["--gpu-util-pod-label", "kubernetes_pod"], env)
    assert (
        settings.prometheus_url,
        settings.gpu_util_namespace_label,
        settings.gpu_util_pod_label,
    ) == ("http://prometheus.monitoring:9090", "exported_namespace", "kubernetes_pod")


def test_serve_help_shows_the_gpu_use_flags_with_their_variables(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for flag in ("prometheus-url", "gpu-util-metric", "gpu-util-namespace-label"):
        assert f"--{flag}" in text and f"GANGPLANK_{flag.upper().replace('-', '_')}" in text
    assert "GANGPLANK_GPU_UTIL_POD_LABEL; default pod)" in text
    assert "(default: )" not in text, "an empty default is not shown"


def test_a_variable_of_the_wrong_type_is_refused_like_a_bad_flag() -> None:
    with pytest.raises(SystemExit):
        parse_serve_settings([], {"GANGPLANK_THREADS": "many"})


def test_an_invalid_policy_stops_the_start_with_exit_code_2_naming_file_queue_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "policy.yaml"
    bad.write_text(
        "queues:\n  - name: research\n    max: {nvidia.com/gpu: 4}\n    guarantee: "
        "{nvidia.com/gpu: 8}\n"
    )
    with pytest.raises(SettingsError, match=r"queue research: max\.nvidia\.com/gpu: 4 is below"):
        parse_serve_settings(["--policy", str(bad)], {})
    assert main(["serve", "--policy", str(bad)]) == 2
    assert f"gangplank serve: --policy {bad}: queue research" in capsys.readouterr().err


def test_a_policy_file_not_there_yet_is_waited_for(tmp_path: Path) -> None:
    settings = parse_serve_settings(["--policy", str(tmp_path / "later.yaml")], {})
    assert settings.policy == str(tmp_path / "later.yaml")


def test_the_policy_watcher_follows_the_file_and_keeps_the_last_good_policy(
    tmp_path: Path,
) -> None:
    path = tmp_path / "policy.yaml"
    loaded: list[Policy] = []
    refused: list[str] = []
    watcher = PolicyWatcher(path, loaded.append, refused.append)
    assert not watcher.check(), "no file, no change"
    path.write_text("queues: [{name: a}]\n")
    assert watcher.check() and [list(p.queues) for p in loaded] == [["a"]]
    path.write_text("queues: [{name: a, weight: -1}]\n")
    assert watcher.check() and "queue a: weight: -1" in refused[0]
    path.write_bytes(b"\xff\xfe\x00")  # not text: refused and counted, not the watcher's crash
    assert watcher.check() and refused[1] == f"{path}: not a text file (byte 0 is not UTF-8)"
    path.unlink()
    assert watcher.check() and len(loaded) == 1, "a vanished file keeps the policy in force"
    path.write_text("queues: [{name: a}, {name: b}]\n")
    assert watcher.check() and list(loaded[-1].queues) == ["a", "b"]
