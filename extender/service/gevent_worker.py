"""gunicorn's gevent worker, that lets go of idle keep-alive connections when told to stop, and
sends each answer's headers and body in one write (`one_write.py`).

kube-scheduler keeps its connections to the extender open between calls. gunicorn's gevent worker
counts a connection waiting for its next request as work in progress, so a SIGTERM (a rollout, a
failover) waited the whole graceful timeout (20 s) before the worker exited; its gthread worker
closes such connections at once. This worker does the same: the greenlets waiting for a next
request are ended when the worker is told to stop, and calls being answered still finish.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import gevent
from gunicorn.workers.ggevent import GeventWorker

from extender.service import one_write


class Worker(GeventWorker):  # type: ignore[misc]
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._waiting: set[Any] = set()  # greenlets waiting for a next request

    def init_process(self) -> None:
        one_write.install()  # each answer's headers and body in one write (`one_write.py`)
        super().init_process()

    def timeout_ctx(self) -> AbstractContextManager[None]:
        """Around each wait for a request on a kept-alive connection (gunicorn's own bound)."""
        if not self.alive:
            # gunicorn closes the connection quietly. Raised here, not inside the generator
            # below: there Python would turn it into a RuntimeError, which gunicorn answers.
            raise StopIteration("stopping")
        return self._waiting_for_request()

    @contextmanager
    def _waiting_for_request(self) -> Iterator[None]:
        current = gevent.getcurrent()
        self._waiting.add(current)
        try:
            # False: at the keep-alive bound, the wait ends quietly and the connection closes
            with gevent.Timeout(self.cfg.keepalive, False):  # type: ignore[arg-type]
                yield
        finally:
            self._waiting.discard(current)

    def handle_exit(self, sig: int, frame: Any) -> None:
        super().handle_exit(sig, frame)
        gevent.spawn(self._let_go)  # not from inside the signal handler

    def _let_go(self) -> None:
        for waiting in list(self._waiting):
            # StopIteration, which gunicorn takes as the connection closing (logged at debug);
            # the default GreenletExit it writes to the log as an error with a traceback.
            waiting.kill(StopIteration("stopping"), block=False)
