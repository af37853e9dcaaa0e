"""Settings from one place: command-line flags over GANGPLANK_* environment variables over
defaults. Validated once at start, frozen after."""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

LOG_LEVELS = ("debug", "info", "warning", "error")


class SettingsError(ValueError):
    """A setting that cannot work; the message says which and why."""


@dataclass(frozen=True)
class Settings:
    bind: str = "127.0.0.1:18888"
    url_prefix: str = "/scheduler"
    kubeconfig: str | None = None
    in_cluster: bool = False
    cluster_file: str | None = None
    tls_cert: str | None = None
    tls_key: str | None = None
    tls_client_ca: str | None = None
    log_level: str = "info"
    policy: str | None = None
    threads: int = 8
    max_body_bytes: int = 64 * 1024 * 1024
    watch_timeout: int = 300
    read_timeout: float = 120.0
    leader_lease: str | None = None
    identity: str | None = None
    reservation_seconds: float = 60.0
    hold_seconds: float = 120.0

    def validate(self) -> Settings:
        if not self.url_prefix.startswith("/") or (
            self.url_prefix.endswith("/") and self.url_prefix != "/"
        ):
            raise SettingsError(
                f"url prefix {self.url_prefix!r} must start with '/' and not end with one "
                "(kube-scheduler calls urlPrefix + '/' + verb)"
            )
        if self.log_level not in LOG_LEVELS:
            raise SettingsError(
                f"log level {self.log_level!r} is not one of {', '.join(LOG_LEVELS)}"
            )
        if bool(self.tls_cert) != bool(self.tls_key):
            raise SettingsError("TLS needs both --tls-cert and --tls-key")
        if self.tls_client_ca and not self.tls_cert:
            raise SettingsError("--tls-client-ca (mutual TLS) needs --tls-cert and --tls-key")
        for label, path in (
            ("--tls-cert", self.tls_cert),
            ("--tls-key", self.tls_key),
            ("--tls-client-ca", self.tls_client_ca),
            ("--cluster-file", self.cluster_file),
        ):
            if path and not Path(path).is_file():
                raise SettingsError(f"{label} {path}: no such file")
        if self.cluster_file and (self.in_cluster or self.kubeconfig):
            raise SettingsError(
                "--cluster-file serves a fixed view; it excludes --kubeconfig and --in-cluster"
            )
        if self.threads < 1 or self.max_body_bytes < 1024:
            raise SettingsError("--threads must be >= 1 and --max-body-bytes >= 1024")
        if self.policy:
            _check_policy(self.policy)
        if self.leader_lease and self.leader_lease.count("/") != 1:
            raise SettingsError(f"--leader-lease {self.leader_lease!r} must be NAMESPACE/NAME")
        if self.reservation_seconds <= 0 or self.hold_seconds < 0:
            raise SettingsError("--reservation-seconds must be > 0 and --hold-seconds >= 0")
        if ":" not in self.bind and not self.bind.startswith("unix:"):
            raise SettingsError(f"bind address {self.bind!r} must be HOST:PORT or unix:PATH")
        return self


def _check_policy(path: str) -> None:
    try:
        loaded = yaml.safe_load(Path(path).read_text())
    except OSError as err:
        raise SettingsError(f"--policy {path}: {err.strerror}") from None
    except yaml.YAMLError as err:
        raise SettingsError(f"--policy {path} is not valid YAML: {err}") from None
    if loaded is not None and not isinstance(loaded, Mapping):
        raise SettingsError(f"--policy {path} must hold a YAML mapping")


def _env_bool(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def add_serve_arguments(parser: argparse.ArgumentParser, env: Mapping[str, str]) -> None:
    """Flags of `gangplank serve`; each defaults to its GANGPLANK_* variable."""
    d = Settings()

    def default(name: str, fallback: object) -> object:
        return env.get(f"GANGPLANK_{name}", fallback)

    parser.add_argument(
        "--bind",
        default=default("BIND", d.bind),
        help="address to listen on, HOST:PORT (env GANGPLANK_BIND; default %(default)s)",
    )
    parser.add_argument(
        "--url-prefix",
        default=default("URL_PREFIX", d.url_prefix),
        help="path before /filter etc.; match the extender urlPrefix (default %(default)s)",
    )
    parser.add_argument(
        "--kubeconfig",
        default=default("KUBECONFIG", env.get("KUBECONFIG")),
        help="kubeconfig file (env GANGPLANK_KUBECONFIG or KUBECONFIG)",
    )
    parser.add_argument(
        "--in-cluster",
        action="store_true",
        default=_env_bool(env.get("GANGPLANK_IN_CLUSTER")),
        help="use the pod's service account (env GANGPLANK_IN_CLUSTER=1)",
    )
    parser.add_argument(
        "--cluster-file",
        default=default("CLUSTER_FILE", None),
        help="serve a fixed cluster view from a `kubectl get -o yaml` file instead of "
        "an API server",
    )
    parser.add_argument(
        "--tls-cert", default=default("TLS_CERT", None), help="serve HTTPS with this certificate"
    )
    parser.add_argument(
        "--tls-key", default=default("TLS_KEY", None), help="private key of --tls-cert"
    )
    parser.add_argument(
        "--tls-client-ca",
        default=default("TLS_CLIENT_CA", None),
        help="require client certificates signed by this CA (mutual TLS)",
    )
    parser.add_argument(
        "--log-level", default=default("LOG_LEVEL", d.log_level), choices=LOG_LEVELS
    )
    parser.add_argument("--policy", default=default("POLICY", None), help="policy YAML file")
    parser.add_argument(
        "--threads",
        type=int,
        default=int(str(default("THREADS", d.threads))),
        help="request threads of the single worker (default %(default)s)",
    )
    parser.add_argument(
        "--max-body-bytes",
        type=int,
        default=int(str(default("MAX_BODY_BYTES", d.max_body_bytes))),
        help="largest request body accepted (default %(default)s)",
    )
    parser.add_argument(
        "--leader-lease",
        default=default("LEADER_LEASE", None),
        help="NAMESPACE/NAME of the scheduler's leader-election Lease; gangplank acts on its own "
        "(nudging parked pods) only while its scheduler holds it. Unset: always",
    )
    parser.add_argument(
        "--identity",
        default=default("IDENTITY", None),
        help="this replica's Lease holder prefix (default: $POD_NAME or $HOSTNAME)",
    )
    parser.add_argument(
        "--reservation-seconds",
        type=float,
        default=float(str(default("RESERVATION_SECONDS", d.reservation_seconds))),
        help="a gang plan whose members do not bind within this is released (default %(default)s)",
    )
    parser.add_argument(
        "--hold-seconds",
        type=float,
        default=float(str(default("HOLD_SECONDS", d.hold_seconds))),
        help="how long the first gang in line keeps freed capacity (default %(default)s)",
    )


def settings_from_args(args: argparse.Namespace) -> Settings:
    in_cluster = bool(args.in_cluster)
    kubeconfig = args.kubeconfig
    if in_cluster:
        kubeconfig = None
    return Settings(
        bind=args.bind,
        url_prefix=args.url_prefix,
        kubeconfig=kubeconfig,
        in_cluster=in_cluster,
        cluster_file=args.cluster_file,
        tls_cert=args.tls_cert,
        tls_key=args.tls_key,
        tls_client_ca=args.tls_client_ca,
        log_level=args.log_level,
        policy=args.policy,
        threads=args.threads,
        max_body_bytes=args.max_body_bytes,
        leader_lease=args.leader_lease,
        identity=args.identity,
        reservation_seconds=args.reservation_seconds,
        hold_seconds=args.hold_seconds,
    ).validate()


def parse_serve_settings(argv: Sequence[str], env: Mapping[str, str] | None = None) -> Settings:
    parser = argparse.ArgumentParser(prog="gangplank serve")
    add_serve_arguments(parser, os.environ if env is None else env)
    return settings_from_args(parser.parse_args(list(argv)))
