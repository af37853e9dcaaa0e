"""Settings from one place: command-line flags over GANGPLANK_* environment variables over
defaults. Validated once at start, frozen after."""

from __future__ import annotations

import argparse
import os
import ssl
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from extender.core.model.names import DNS_LABEL, DNS_SUBDOMAIN
from extender.core.queues.policy_parse import PolicyError
from extender.observe.gpu_use import DEFAULT_METRIC, check_names
from extender.policy.file import load_policy

LOG_LEVELS = ("debug", "info", "warning", "error")
# Where requeue records are kept when --requeue-configmap is not given: this name, in the
# namespace gangplank runs in (`find_namespace`).
REQUEUE_CONFIGMAP = "gangplank-requeues"
# The same for the queues' usage history (--usage-history-configmap; the policy's `fairness:`).
HISTORY_CONFIGMAP = "gangplank-usage-history"
# The namespace gangplank runs in when nothing tells it: the one manifests/ put it in.
DEFAULT_NAMESPACE = "gangplank"
# Where Kubernetes mounts a pod's service account, its namespace beside the token.
SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


class SettingsError(ValueError):
    """A setting that cannot work; the message says which and why."""


WORKER_CLASSES = ("gthread", "gevent")


@dataclass(frozen=True)
class OwnNamespace:
    """The namespace gangplank runs in, and what told it (for the startup log line)."""

    name: str
    source: str


UNTOLD = OwnNamespace(DEFAULT_NAMESPACE, "the default: manifests/' namespace")


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
    log_format: str = "text"
    policy: str | None = None
    threads: int = 8
    worker_class: str = "gevent"
    max_body_bytes: int = 64 * 1024 * 1024
    body_seconds: float = 10.0
    watch_timeout: int = 300
    read_timeout: float = 120.0
    leader_lease: str | None = None
    identity: str | None = None
    reservation_seconds: float = 60.0
    hold_seconds: float = 120.0
    stale_after: float = 30.0
    bind_planned_members: bool = True
    scheduler_names: str = "gangplank"
    prometheus_url: str = ""
    gpu_util_metric: str = DEFAULT_METRIC
    gpu_util_namespace_label: str = "namespace"
    gpu_util_pod_label: str = "pod"
    requeue_configmap: str = f"{DEFAULT_NAMESPACE}/{REQUEUE_CONFIGMAP}"
    usage_history_configmap: str = f"{DEFAULT_NAMESPACE}/{HISTORY_CONFIGMAP}"
    # The namespace gangplank runs in (`find_namespace`), not a flag: the namespace of the
    # requeue ConfigMap and of the Lease when their flags name none.
    namespace: OwnNamespace = UNTOLD

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
        if self.log_format not in ("text", "json"):
            raise SettingsError(f"log format {self.log_format!r} is not text or json")
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
        if self.worker_class not in WORKER_CLASSES:
            raise SettingsError(
                f"worker class {self.worker_class!r} is not one of {', '.join(WORKER_CLASSES)}"
            )
        if self.threads < 1 or self.max_body_bytes < 1024:
            raise SettingsError("--threads must be >= 1 and --max-body-bytes >= 1024")
        if self.policy:
            _check_policy(self.policy)
        if self.leader_lease and self.leader_lease.count("/") != 1:
            raise SettingsError(f"--leader-lease {self.leader_lease!r} must be [NAMESPACE/]NAME")
        for flag, where in (
            ("--requeue-configmap", self.requeue_configmap),
            ("--usage-history-configmap", self.usage_history_configmap),
        ):
            namespace, _, name = where.partition("/")
            if not (DNS_LABEL.fullmatch(namespace) and DNS_SUBDOMAIN.fullmatch(name)):
                raise SettingsError(
                    f"{flag} {where!r} must be [NAMESPACE/]NAME "
                    "(a namespace and a ConfigMap name as Kubernetes allows them)"
                )
        for label, seconds in (
            ("--body-seconds", self.body_seconds),
            ("--watch-timeout", self.watch_timeout),
            ("--read-timeout", self.read_timeout),
            ("--stale-after", self.stale_after),
        ):
            if not seconds > 0:  # NaN too
                raise SettingsError(f"{label} must be more than 0 seconds, not {seconds}")
        if self.reservation_seconds <= 0 or self.hold_seconds < 0:
            raise SettingsError("--reservation-seconds must be > 0 and --hold-seconds >= 0")
        if not self.scheduler_name_set:
            raise SettingsError("--scheduler-names must name at least one scheduler profile")
        if ":" not in self.bind and not self.bind.startswith("unix:"):
            raise SettingsError(f"bind address {self.bind!r} must be HOST:PORT or unix:PATH")
        if not self.bind.startswith(("unix:", "fd://")):  # fd://N: a socket handed over open
            port = self.bind.rsplit(":", 1)[1]
            if not port.isdigit() or int(port) > 65535:
                raise SettingsError(f"bind address {self.bind!r}: the port must be 0-65535")
        if self.tls_cert and self.tls_key:
            _check_tls(self.tls_cert, self.tls_key, self.tls_client_ca)
        if self.prometheus_url and not self.prometheus_url.startswith(("http://", "https://")):
            raise SettingsError(
                f"--prometheus-url {self.prometheus_url!r} must start with http:// or https://"
            )
        problem = check_names(
            self.gpu_util_metric, self.gpu_util_namespace_label, self.gpu_util_pod_label
        )
        if problem:
            raise SettingsError(f"--gpu-util-*: {problem}")
        return self

    @property
    def requeue_configmap_ref(self) -> tuple[str, str]:
        """(namespace, name) of the ConfigMap that keeps requeue records."""
        namespace, _, name = self.requeue_configmap.partition("/")
        return namespace, name

    @property
    def usage_history_configmap_ref(self) -> tuple[str, str]:
        """(namespace, name) of the ConfigMap that keeps the queues' usage history."""
        namespace, _, name = self.usage_history_configmap.partition("/")
        return namespace, name

    @property
    def scheduler_name_set(self) -> frozenset[str]:
        return frozenset(n.strip() for n in self.scheduler_names.split(",") if n.strip())


def _check_policy(path: str) -> None:
    """A policy that is there must be valid; one that is not there yet (an optional ConfigMap not
    created) is waited for: gangplank runs without queues until it appears."""
    if not Path(path).exists():
        return
    try:
        load_policy(path)
    except PolicyError as err:
        raise SettingsError(f"--policy {err}") from None


def _check_tls(cert: str, key: str, client_ca: str | None) -> None:
    """The certificate, its key and the client CA load as gunicorn's worker will load them: a
    file that is not PEM made every worker fail to boot, and gunicorn boot another, forever."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(cert, key)
    except (ssl.SSLError, OSError) as err:
        raise SettingsError(
            f"--tls-cert {cert} and --tls-key {key}: not a certificate and its private key "
            f"in PEM ({getattr(err, 'reason', None) or err})"
        ) from None
    if client_ca:
        try:
            context.load_verify_locations(client_ca)
        except (ssl.SSLError, OSError) as err:
            raise SettingsError(
                f"--tls-client-ca {client_ca}: no CA certificate in PEM "
                f"({getattr(err, 'reason', None) or err})"
            ) from None


_YES, _NO = ("1", "true", "yes", "on"), ("0", "false", "no", "off", "")


def _env_bool(value: str | None) -> bool:
    return (value or "").strip().lower() in _YES


def _check_env_bools(env: Mapping[str, str]) -> None:
    """A yes/no variable must say yes or no (GANGPLANK_IN_CLUSTER=maybe was read as no)."""
    defaults = Settings()
    for name in FLAGS:
        variable = f"GANGPLANK_{name.upper()}"
        told = env.get(variable)
        yes_or_no = isinstance(getattr(defaults, name), bool)
        if yes_or_no and told is not None and told.strip().lower() not in _YES + _NO:
            raise SettingsError(
                f"{variable}={told}: not yes or no (one of {', '.join(_YES)}, or "
                f"{', '.join(_NO[:-1])})"
            )


def find_namespace(
    env: Mapping[str, str],
    kubeconfig: str | None,
    namespace_file: Path = SERVICE_ACCOUNT_NAMESPACE,
) -> OwnNamespace:
    """The namespace gangplank runs in, found as Kubernetes' client libraries find theirs:
    $POD_NAMESPACE (the downward API), the service account's namespace file (in a pod), the
    namespace of the current context of `kubeconfig` (None: none consulted), else the one
    manifests/ put gangplank in. A source that names no valid namespace is passed over."""
    found = (env.get("POD_NAMESPACE") or "").strip()
    if DNS_LABEL.fullmatch(found):
        return OwnNamespace(found, "$POD_NAMESPACE")
    try:
        found = namespace_file.read_text().strip()
    except (OSError, UnicodeDecodeError):
        found = ""
    if DNS_LABEL.fullmatch(found):
        return OwnNamespace(found, f"the service account's {namespace_file}")
    if kubeconfig:
        context = _kubeconfig_context(kubeconfig)
        if context is not None and DNS_LABEL.fullmatch(context[1]):
            return OwnNamespace(context[1], f"context {context[0]} of kubeconfig {kubeconfig}")
    return UNTOLD


def _kubeconfig_context(kubeconfig: str) -> tuple[str, str] | None:
    """(name, namespace) of the current context of `kubeconfig` (paths joined as $KUBECONFIG
    joins them), as the kubernetes client reads it; None when it cannot tell."""
    from kubernetes import config

    try:
        _, current = config.list_kube_config_contexts(config_file=kubeconfig)  # type: ignore[no-untyped-call]
    except Exception:  # no such file, not YAML, no context: it names no namespace
        return None
    if not isinstance(current, dict) or not isinstance(current.get("context"), dict):
        return None
    namespace = current["context"].get("namespace")
    return (str(current.get("name")), namespace) if isinstance(namespace, str) else None


# Every setting a flag can set, with its help; the flag is `--<name-with-dashes>`, the variable
# GANGPLANK_<NAME>, the type and default those of the Settings field.
FLAGS: dict[str, str] = {
    "bind": "address to listen on, HOST:PORT",
    "url_prefix": "path before /filter etc.; match the extender's urlPrefix",
    "kubeconfig": "kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)",
    "in_cluster": "use the pod's service account",
    "cluster_file": "serve a fixed cluster view from `kubectl get -o yaml|json` output instead of "
    "an API server",
    "tls_cert": "serve HTTPS with this certificate",
    "tls_key": "private key of --tls-cert",
    "tls_client_ca": "require client certificates signed by this CA (mutual TLS)",
    "log_level": "log level",
    "log_format": "text, or json: one JSON object per line, with the request id and pod of each "
    "extender call",
    "policy": "policy YAML file (queues and quotas); reloaded when it changes",
    "scheduler_names": "comma-separated schedulerNames of the profiles that call gangplank: their "
    "pending pods are the work waiting in queues",
    "threads": "request threads of the single worker (gthread)",
    "worker_class": "gunicorn worker: gevent (one event loop; about a third of gthread's CPU "
    "per call), or gthread (--threads request threads)",
    "max_body_bytes": "largest request body accepted",
    "body_seconds": "seconds a client has to send a whole request body before it is "
    "answered 408 (a stalled or dribbling client must not hold one of the worker's threads)",
    "leader_lease": "[NAMESPACE/]NAME of the scheduler's leader-election Lease (a name alone: in "
    "gangplank's namespace); gangplank acts on its own (nudging parked pods) only while its "
    "scheduler holds it. Unset: always",
    "identity": "this replica's Lease holder prefix (default: $POD_NAME or $HOSTNAME)",
    "reservation_seconds": "a gang plan whose members do not bind within this is released",
    "hold_seconds": "how long the first gang in line keeps freed capacity",
    "requeue_configmap": "[NAMESPACE/]NAME of the ConfigMap that keeps requeue records (backoffs "
    "and counts of jobs evicted by the lifecycle rules) across restarts and failovers (a name "
    f"alone: in gangplank's namespace; default {REQUEUE_CONFIGMAP} there). gangplank's namespace: "
    "$POD_NAMESPACE, else the service account's, else the kubeconfig context's, else "
    f"{DEFAULT_NAMESPACE}",
    "usage_history_configmap": "[NAMESPACE/]NAME of the ConfigMap that keeps the queues' "
    "decayed usage (the policy's fairness:) across restarts and failovers (a name alone: in "
    f"gangplank's namespace; default {HISTORY_CONFIGMAP} there)",
    "stale_after": "seconds a kind's watch may be down before the cluster view counts as stale: "
    "gangs and queued jobs then wait and nothing is evicted (pass-through pods go on)",
    "bind_planned_members": "bind a gang's planned members as soon as a filter call plans it, "
    "rather than one at a time through kube-scheduler's queue (a 100-pod gang whole in a tenth of "
    "the time); members with claims' volumes or DRA claims, and plans made by "
    "preemption, still bind through kube-scheduler (docs/architecture.md, plan binds). "
    "--no-bind-planned-members: every member through kube-scheduler",
    "prometheus_url": "Prometheus (or a server of its HTTP API) to read GPU utilisation from, for "
    "the policy's idle-GPU rule, e.g. http://prometheus.monitoring:9090. Unset: GPU use is not "
    "read and the rule does not act",
    "gpu_util_metric": "the per-GPU utilisation metric (0-100) in Prometheus, as NVIDIA's "
    "dcgm-exporter names it",
    "gpu_util_namespace_label": "the metric's label holding the pod's namespace "
    "(exported_namespace where Prometheus renamed dcgm-exporter's own)",
    "gpu_util_pod_label": "the metric's label holding the pod's name (exported_pod where "
    "Prometheus renamed dcgm-exporter's own)",
}


# Flags naming an object in the namespace gangplank runs in unless they name another.
IN_OUR_NAMESPACE = ("requeue_configmap", "usage_history_configmap", "leader_lease")


def add_serve_arguments(parser: argparse.ArgumentParser, env: Mapping[str, str]) -> None:
    """Flags of `gangplank serve`; each defaults to its GANGPLANK_* variable, then to Settings.

    A variable's text goes through the flag's type, so a bad value is refused by argparse with
    the flag's name, like a bad flag.
    """
    defaults = Settings()
    for name, text in FLAGS.items():
        flag = "--" + name.replace("_", "-")
        variable = f"GANGPLANK_{name.upper()}"
        fallback = getattr(defaults, name)
        if name == "kubeconfig":
            fallback = env.get("KUBECONFIG")
        elif name in IN_OUR_NAMESPACE:
            fallback = ""  # the namespace is found once the kubeconfig is known
        help_text = f"{text} (env {variable}"
        help_text += "; default %(default)s)" if fallback not in (None, False, "") else ")"
        if isinstance(fallback, bool):
            told = env.get(variable)
            parser.add_argument(
                flag,
                # on by default: also --no-<flag> to turn it off
                action=argparse.BooleanOptionalAction if fallback else "store_true",
                default=fallback if told is None else _env_bool(told),
                help=help_text,
            )
            continue
        kind = type(fallback) if fallback is not None else str
        parser.add_argument(
            flag,
            type=kind,
            default=env.get(variable, fallback),
            help=help_text,
            choices=LOG_LEVELS
            if name == "log_level"
            else (("text", "json") if name == "log_format" else None),
        )


def settings_from_args(
    args: argparse.Namespace,
    env: Mapping[str, str] | None = None,
    namespace_file: Path = SERVICE_ACCOUNT_NAMESPACE,
) -> Settings:
    """The settings of parsed flags; the namespace gangplank runs in is found (`find_namespace`)
    from `env` (default: the process's), `namespace_file` and the kubeconfig the flags name."""
    env = os.environ if env is None else env
    _check_env_bools(env)
    values = {name: getattr(args, name) for name in FLAGS}
    if values["in_cluster"]:
        values["kubeconfig"] = None
        kubeconfig = None  # a pod's client reads no kubeconfig, nor its namespace
    else:
        home = env.get("HOME")
        kubeconfig = values["kubeconfig"] or (f"{home}/.kube/config" if home else None)
    namespace = find_namespace(env, kubeconfig, namespace_file)
    if not values["requeue_configmap"]:
        values["requeue_configmap"] = REQUEUE_CONFIGMAP
    if not values["usage_history_configmap"]:
        values["usage_history_configmap"] = HISTORY_CONFIGMAP
    for name in IN_OUR_NAMESPACE:
        if values[name] and "/" not in values[name]:  # a name alone: in our namespace
            values[name] = f"{namespace.name}/{values[name]}"
    return Settings(**values, namespace=namespace).validate()


def parse_serve_settings(
    argv: Sequence[str],
    env: Mapping[str, str] | None = None,
    namespace_file: Path = SERVICE_ACCOUNT_NAMESPACE,
) -> Settings:
    env = os.environ if env is None else env
    parser = argparse.ArgumentParser(prog="gangplank serve")
    add_serve_arguments(parser, env)
    return settings_from_args(parser.parse_args(list(argv)), env, namespace_file)
