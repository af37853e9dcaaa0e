"""gunicorn's HTTP response with its headers and its body sent in one write.

gunicorn writes an answer's headers, then its body: two `sendall`s, two TCP segments, for each of
the three calls kube-scheduler makes per pod. On loopback a write also does the receiving side's
work, and under `py-spy` socket writes were 28% of the worker's samples while kube-scheduler drove
plain pods through it (docs/benchmarks.md, "plain pods beside the cheapest extender"). Holding
the headers until the body's first bytes halves them: `python -m loadtest.plain_pods`, gangplank
alone, alternated with gunicorn's own response: 208 / 224 / 211 pods a second against 166 / 171 /
200.

gunicorn builds the response object itself (`gunicorn.http.wsgi.create`), so the class is put in
its place when the worker process starts (`install`, from `Worker.init_process`); it changes
nothing else gunicorn does: the bytes on the wire are the same, only fewer writes carry them.
"""

from __future__ import annotations

from typing import Any

from gunicorn.http import wsgi


class _HeldHeaders:
    """The response's socket, holding its first write (the headers) until the next one (the
    body's first bytes) or the response's end; then it only passes writes on. Everything else is
    the socket's own."""

    def __init__(self, sock: Any) -> None:
        self._sock = sock
        self._held: bytes | None = None
        self._holding = True

    def sendall(self, data: bytes) -> None:
        if self._holding and self._held is None:
            self._held = bytes(data)  # the headers: sent with what comes next
            return
        self._holding = False
        held, self._held = self._held or b"", None
        self._sock.sendall(held + data if held else data)

    def flush(self) -> None:
        """Send what is held (a response without a body, or before a file is sent)."""
        self._holding = False
        if self._held:
            held, self._held = self._held, None
            self._sock.sendall(held)

    def sendfile(self, *args: Any, **kwargs: Any) -> Any:
        self.flush()
        return self._sock.sendfile(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


class OneWriteResponse(wsgi.Response):  # type: ignore[misc]
    def __init__(self, req: Any, sock: Any, cfg: Any) -> None:
        super().__init__(req, sock, cfg)
        self._held = self.sock = _HeldHeaders(sock)

    def write(self, arg: bytes) -> None:
        super().write(arg)
        self._held.flush()  # the headers, if nothing followed them (a body not to send)

    def close(self) -> None:
        super().close()
        self._held.flush()


def install() -> None:
    """Have gunicorn build `OneWriteResponse`s (in this worker process)."""
    wsgi.Response = OneWriteResponse
