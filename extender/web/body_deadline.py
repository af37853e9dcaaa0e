"""A request body must arrive within `--body-seconds`, however it is sent.

Two bounds keep a client from holding one of the worker's threads: the socket's own timeout ends
a read once the client has sent nothing for that long, and one watchdog thread per process cuts
the reading side of a socket whose body is still not in when its time is up (a client that
dribbles a byte now and then never trips a timeout per read). A cut socket reads as the end of
the body (with threads) or fails the waiting read (under gevent, which cancels a read on a socket
shut down by another greenlet); either way the verb answers 408, and gunicorn closes the
connection. The socket's own timeout is put back once the body is in (gevent keeps a connection
alive between calls on it).
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time


class BodyDeadlines:
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._due: dict[int, tuple[float, socket.socket]] = {}
        self._timeouts: dict[int, float | None] = {}  # each socket's own, put back by `done`
        self._cut: set[int] = set()
        self._lock = threading.Lock()
        self._pid = 0  # the process whose watchdog runs (gunicorn forks after the app is built)

    def watch(self, sock: socket.socket) -> None:
        """The body on `sock` starts to be read now."""
        previous = sock.gettimeout()
        sock.settimeout(self.seconds)
        if self._pid != os.getpid():
            self._start()
        with self._lock:
            self._due[id(sock)] = (time.monotonic() + self.seconds, sock)
            self._timeouts[id(sock)] = previous

    def done(self, sock: socket.socket) -> bool:
        """The body on `sock` is read (or given up): True when the watchdog cut it short."""
        key = id(sock)
        with self._lock:
            self._due.pop(key, None)
            previous = self._timeouts.pop(key, None)
            cut = key in self._cut
            self._cut.discard(key)
        if not cut:
            with contextlib.suppress(OSError):
                sock.settimeout(previous)
        return cut

    def _start(self) -> None:
        with self._lock:
            if self._pid == os.getpid():
                return
            self._pid = os.getpid()
            self._due.clear()
            self._cut.clear()
        threading.Thread(target=self._run, name="gangplank-body-deadline", daemon=True).start()

    def _run(self) -> None:
        tick = min(1.0, max(0.05, self.seconds / 4))
        while True:
            time.sleep(tick)
            now = time.monotonic()
            with self._lock:
                late = [key for key, (due, _) in self._due.items() if due <= now]
                for key in late:
                    _, sock = self._due.pop(key)
                    self._cut.add(key)
                    with contextlib.suppress(OSError):
                        sock.shutdown(socket.SHUT_RD)
