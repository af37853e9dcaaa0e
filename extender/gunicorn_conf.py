"""gunicorn settings for gangplank (`gunicorn -c python:extender.gunicorn_conf ...`).

One worker process with threads: the reservations and the cluster cache must be one state.
Keep-alive is on (kube-scheduler reuses connections; the sync worker would close each one).
The watch threads start in the worker, after the fork (`post_worker_init`).
"""

from __future__ import annotations

from typing import Any

worker_class = "gthread"
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
