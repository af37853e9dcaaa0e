"""gunicorn settings for gangplank (`gunicorn -c python:extender.service.gunicorn_conf ...`).

One worker process: the reservations and the cluster cache must be one state. Its worker class
is gevent: one event loop answers every connection, and the watch threads are greenlets of it
(gunicorn patches the standard library in the worker, before the app is loaded; ssl is patched
earlier, in `gangplank serve` itself, before the kubernetes client is imported: see
`cli/main.py`'s `_patch_ssl_for_gevent`). Measured beside
gthread on the same calls (docs/benchmarks.md), it spends about a third of the CPU a call
(gunicorn's thread hand-offs are gone); gthread stays a setting (`--worker-class gthread`).
Cooperative means a long computation holds every call until it ends, as the decision lock does
anyway; the watch and the relist give way every few hundred objects. Keep-alive is on
(kube-scheduler reuses connections; the sync worker would close each one). The watches start in
the worker, after the fork (`post_worker_init`).
"""

from __future__ import annotations

from typing import Any

worker_class = "extender.service.gevent_worker.Worker"
workers = 1
threads = 8
keepalive = 75
timeout = 30
graceful_timeout = 20
preload_app = False
max_requests = 0
accesslog = None
# The worker heartbeat file; /dev/shm keeps working with a read-only root filesystem.
worker_tmp_dir = "/dev/shm"
# gunicorn 25.1+ opens a control socket (for `gunicornc`) under $HOME/.gunicorn by default; the
# Deployment runs as uid 65532 with a read-only root filesystem and no home, where it logged
# "Control server error" at every start. Nothing uses it. (Older gunicorn has no such setting;
# `gangplank serve` applies only the settings the installed gunicorn knows.)
control_socket_disable = True
# No proxy stands in front of gangplank (kube-scheduler calls it on loopback, or over mutual TLS),
# so no caller may say where a request was forwarded from or by which scheme: gunicorn honours
# none of those headers, from any peer. So there is no peer to check either: gunicorn parsed each
# caller's address against its list of trusted proxies on every call, 8% of a filter call's CPU.
# The three go together: "*" alone would trust every caller's forwarding headers (and, were
# HTTP/2 turned on with `http_protocols`, its cleartext upgrade and `:scheme`; it is off).
forwarded_allow_ips = "*"
secure_scheme_headers: dict[str, str] = {}
forwarder_headers = ""


def _runtime(worker: Any) -> Any:
    app = getattr(worker, "wsgi", None)
    extensions = getattr(app, "extensions", {})
    return extensions.get("gangplank")


def post_worker_init(worker: Any) -> None:
    runtime = _runtime(worker)
    if runtime is not None:
        runtime.start()


def worker_exit(server: Any, worker: Any) -> None:
    runtime = _runtime(worker)
    if runtime is not None:
        runtime.stop()
