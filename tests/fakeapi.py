"""The fake API server lives in the package (the demo runs gangplank against it); the tests' one
can also have an outage in which every connection is dropped, as a killed API server's are."""

from __future__ import annotations

import contextlib
import socket
import ssl
from http.server import BaseHTTPRequestHandler

from extender.sim.apiserver import KIND_PATHS, LIST_KINDS, Event, WatchFaults
from extender.sim.apiserver import FakeApiServer as _FakeApiServer

__all__ = ["KIND_PATHS", "LIST_KINDS", "Event", "FakeApiServer", "WatchFaults"]


class FakeApiServer(_FakeApiServer):
    """`go_down(drop=True)`: an outage in which every request's connection is cut before an
    answer (the client sees it reset), rather than answered 503."""

    def __init__(self, bookmark_every: float = 60.0, tls: ssl.SSLContext | None = None) -> None:
        super().__init__(bookmark_every, tls)
        self.dropping = False
        api = self
        answering: type[BaseHTTPRequestHandler] = self._server.RequestHandlerClass  # type: ignore[assignment]

        def handle_one_request(handler: BaseHTTPRequestHandler) -> None:
            if not api.dropping:
                answering.handle_one_request(handler)
                return
            handler.close_connection = True
            with contextlib.suppress(OSError):
                handler.connection.shutdown(socket.SHUT_RDWR)

        self._server.RequestHandlerClass = type(
            "Dropping", (answering,), {"handle_one_request": handle_one_request}
        )

    def __enter__(self) -> FakeApiServer:
        super().__enter__()
        return self

    def go_down(self, drop: bool = False) -> None:
        self.dropping = drop
        super().go_down()

    def come_back(self) -> None:
        self.dropping = False
        super().come_back()
