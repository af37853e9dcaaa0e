"""`gangplank serve`: the Flask app under gunicorn with the project's gunicorn settings."""

from __future__ import annotations

import logging
import ssl
import sys
from typing import Any

from gunicorn.app.base import BaseApplication

from extender.observe.logs import configure_logging
from extender.service import gunicorn_conf
from extender.service.settings import Settings

# --worker-class -> gunicorn's worker_class
WORKERS = {"gevent": "extender.service.gevent_worker.Worker", "gthread": "gthread"}


class GangplankServer(BaseApplication):  # type: ignore[misc]
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        super().__init__()

    def load_config(self) -> None:
        for key in dir(gunicorn_conf):
            if key in self.cfg.settings:
                self.cfg.set(key, getattr(gunicorn_conf, key))
        s = self.settings
        self.cfg.set("bind", [s.bind])
        self.cfg.set("threads", s.threads)
        self.cfg.set("worker_class", WORKERS[s.worker_class])
        self.cfg.set("loglevel", s.log_level)
        self.cfg.set("proc_name", "gangplank")
        if s.tls_cert:
            self.cfg.set("certfile", s.tls_cert)
            self.cfg.set("keyfile", s.tls_key)
        if s.tls_client_ca:
            self.cfg.set("ca_certs", s.tls_client_ca)
            self.cfg.set("cert_reqs", ssl.CERT_REQUIRED)

    def load(self) -> Any:
        from kubernetes.config.config_exception import ConfigException

        from extender.cache.static import ClusterFileError
        from extender.core.queues.policy_parse import PolicyError
        from extender.web.app import create_app_from_settings

        configure_logging(self.settings.log_level, self.settings.log_format)
        try:
            return create_app_from_settings(self.settings)
        except (ClusterFileError, ConfigException, PolicyError) as err:
            # Exit code 3 tells the gunicorn arbiter the worker cannot boot: it stops, with this
            # line as the reason instead of a traceback.
            logging.getLogger("gangplank").error("cannot start: %s", err)
            raise SystemExit(3) from None


def serve(settings: Settings) -> int:
    GangplankServer(settings).run()
    return 0


def serve_command(port: int, *flags: str, log_level: str = "warning") -> list[str]:
    """The command line of `gangplank serve` on loopback `port`, run by this interpreter (the
    demo, the simulator's HTTP backend and the load tests start the real server with it)."""
    return [
        sys.executable,
        "-m",
        "extender",
        "serve",
        "--bind",
        f"127.0.0.1:{port}",
        "--log-level",
        log_level,
        *flags,
    ]
