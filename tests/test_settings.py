"""Settings: flags over GANGPLANK_* variables over defaults, checked once at start."""

from __future__ import annotations

import pytest

from extender.settings import SettingsError, parse_serve_settings


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


def test_in_cluster_ignores_a_kubeconfig() -> None:
    settings = parse_serve_settings(["--in-cluster"], {"KUBECONFIG": "/x"})
    assert settings.in_cluster and settings.kubeconfig is None


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--url-prefix", "scheduler"], "must start with '/'"),
        (["--leader-lease", "just-a-name"], "must be NAMESPACE/NAME"),
        (["--reservation-seconds", "0"], "--reservation-seconds must be > 0"),
        (["--tls-cert", "/nonexistent.crt", "--tls-key", "/nonexistent.key"], "no such file"),
        (["--tls-client-ca", "/ca.crt"], "needs --tls-cert"),
    ],
    ids=[
        "a prefix without a slash",
        "a lease without a namespace",
        "a zero reservation time",
        "a missing certificate",
        "mutual TLS without a certificate",
    ],
)
def test_settings_that_cannot_work_are_refused_with_the_reason(
    argv: list[str], message: str
) -> None:
    with pytest.raises(SettingsError, match=message):
        parse_serve_settings(argv, {})


def test_a_variable_of_the_wrong_type_is_refused_like_a_bad_flag() -> None:
    with pytest.raises(SystemExit):
        parse_serve_settings([], {"GANGPLANK_THREADS": "many"})
