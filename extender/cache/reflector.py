"""List, then watch, one kind of object from the API server, with the real kubernetes client.

The semantics client-go's reflector has and `kubernetes.watch.Watch` lacks:
- the watch starts from the list's resourceVersion and asks for bookmarks; a BOOKMARK's
  resourceVersion is read here (the client's Watch ignores it), so a reconnect resumes from it;
- 410 Gone (on a watch or a paged list) means our resourceVersion is too old: list again and
  replace the whole kind, so nothing deleted meanwhile survives and nothing counts twice;
- a dropped or stalled stream (reset, truncated chunk, no byte for `read_timeout` seconds) is
  reconnected from the last resourceVersion with jittered exponential backoff. The backoff starts
  over after a watch that stayed up for `RESET_AFTER` seconds: a stream lost after a long life is
  no failing server, and its delays must not creep towards `--stale-after` one loss at a time.
  While the API server cannot be reached at all (connection refused, reset or timed out, HTTP
  502/503/504: a try costs it nothing) no delay exceeds `outage_delay` (3 s, jittered), so the
  watches resume within seconds of its return rather than after a backoff grown all through the
  outage (up to 30 s: the cluster view stayed stale that much longer, and the gangs with it).
Lists and watches use `_preload_content=False` and orjson: the client's model classes are far too
slow for 50,000 pods.
"""

from __future__ import annotations

import contextlib
import logging
import random
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping, Sequence
from typing import Any, Protocol

import orjson
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import ConnectTimeoutError, MaxRetryError, ProtocolError

from extender.core.model.text import shorten

log = logging.getLogger("gangplank.watch")

YIELD_EVERY = 256  # watch events applied between two chances for the verbs to run


class Gone(Exception):
    """The API server no longer has history at our resourceVersion (HTTP 410)."""


class Handler(Protocol):
    """Applies one kind's objects to the store."""

    def replace(self, items: Sequence[Mapping[str, Any]]) -> None: ...

    def apply(self, event_type: str, obj: Mapping[str, Any]) -> None: ...

    def apply_line(self, line: bytes) -> tuple[str, str | None] | None:
        """Apply an event from its line, giving back (type, resourceVersion); None: not done,
        parse the line and call `apply`."""
        ...


class WatchObserver(Protocol):
    """Hooks for metrics; every method must be cheap and must not raise."""

    def listed(self, kind: str, count: int, seconds: float) -> None: ...

    def relisted(self, kind: str, reason: str) -> None: ...

    def event_counts(self, kind: str) -> MutableMapping[str, int]:
        """Where the kind's reflector counts its watch events, by type (read at scrape time: a
        plain dict costs less than a call per event)."""
        ...

    def error(self, kind: str, reason: str) -> None: ...


class NullObserver:
    def listed(self, kind: str, count: int, seconds: float) -> None:
        pass

    def relisted(self, kind: str, reason: str) -> None:
        pass

    def event_counts(self, kind: str) -> MutableMapping[str, int]:
        return {}

    def error(self, kind: str, reason: str) -> None:
        pass


RESET_AFTER = 60.0  # a watch up this long before it failed starts the backoff over
OUTAGE_DELAY = 3.0  # the longest wait between tries while the API server cannot be reached


class Backoff:
    """Jittered exponential backoff: base, 2·base, 4·base … up to cap; reset on success."""

    def __init__(self, base: float = 0.5, cap: float = 30.0) -> None:
        self.base = base
        self.cap = cap
        self._attempt = 0

    def next_delay(self) -> float:
        delay = min(self.cap, self.base * float(2**self._attempt))
        self._attempt = min(self._attempt + 1, 16)
        return delay * random.uniform(0.5, 1.0)

    def reset(self) -> None:
        self._attempt = 0


class Reflector:
    """Keeps one kind in the store in step with the API server until stopped."""

    def __init__(
        self,
        kind: str,
        list_call: Callable[..., Any],
        handler: Handler,
        *,
        observer: WatchObserver | None = None,
        page_size: int = 500,
        watch_timeout: int = 300,
        read_timeout: float = 120.0,
        connect_timeout: float = 10.0,
        backoff: Backoff | None = None,
        clock: Callable[[], float] = time.monotonic,
        optional: bool = False,
        absent_retry: float = 60.0,
        reset_after: float = RESET_AFTER,
        outage_delay: float = OUTAGE_DELAY,
        wait: Callable[[threading.Event, float], object] = threading.Event.wait,
    ) -> None:
        """`clock` and `wait` (wait on an event at most so many seconds) are the reflector's time:
        tests pass their own to play an outage of minutes in a moment."""
        self.kind = kind
        self._outage_delay = outage_delay
        self._wait = wait
        self._reset_after = reset_after
        self._optional = optional
        self._absent_retry = absent_retry
        self.absent = False
        self._list_call = list_call
        self._handler = handler
        self._observer: WatchObserver = observer or NullObserver()
        self._event_counts = self._observer.event_counts(kind)
        self._page_size = page_size
        self._watch_timeout = watch_timeout
        self._read_timeout = read_timeout
        self._connect_timeout = connect_timeout
        self._backoff = backoff or Backoff()
        self._clock = clock
        self._stop = threading.Event()
        self._wake = threading.Event()  # look for an absent kind again now
        self._response: Any = None
        self.synced = threading.Event()
        self.resource_version = ""
        self.last_contact = 0.0  # clock time of the last byte of news from the API server
        # Since when lists and watches have failed (None: the last one worked), and why.
        self.down_since: float | None = None
        self.down_reason = ""
        self._watch_up_since: float | None = None  # when the current watch call was answered

    # ---- control ------------------------------------------
    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        response = self._response
        if response is not None:
            # Shut the socket down to wake the thread blocked reading it (close() alone does
            # not); a half-dead socket may refuse, and we are leaving anyway.
            with contextlib.suppress(Exception):
                response.connection.sock.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(Exception):
                response.close()

    def recheck(self) -> None:
        """Look for an absent kind again now rather than at the next poll (`absent_retry`): a pod
        names a PodGroup of a kind that was not installed when last looked for."""
        self._wake.set()

    def down_for(self) -> float:
        """Seconds the kind's lists and watches have been failing (0 while they work)."""
        since = self.down_since
        return 0.0 if since is None else max(0.0, self._clock() - since)

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    def run(self, max_watches: int | None = None) -> None:
        """List, then watch until stopped (or after `max_watches` watch calls, for tests)."""
        watches = 0
        need_list = True
        while not self._stop.is_set():
            try:
                if need_list:
                    if not self.list_and_replace():
                        self._wait(self._wake, self._absent_retry)
                        self._wake.clear()
                        continue
                    need_list = False
                if max_watches is not None and watches >= max_watches:
                    return
                watches += 1
                self.watch_once()
                self._backoff.reset()
            except Gone:
                log.info(
                    "%s: resourceVersion %s expired (410 Gone); relisting",
                    self.kind,
                    self.resource_version,
                )
                self._observer.relisted(self.kind, "gone")
                need_list = True
            except Exception as err:  # any fault of network or server: back off and resume
                if self._stop.is_set():
                    return
                reason = type(err).__name__
                self._observer.error(self.kind, reason)
                up_since, self._watch_up_since = self._watch_up_since, None
                if up_since is not None and self._clock() - up_since >= self._reset_after:
                    self._backoff.reset()
                if self.down_since is None:
                    self.down_since = self._clock()
                self.down_reason = _describe(err)
                delay = self._backoff.next_delay()
                if unreachable(err):
                    delay = min(delay, self._outage_delay * random.uniform(0.5, 1.0))
                log.warning(
                    "%s: %s from the API server (%s); retrying in %.1fs from resourceVersion %s",
                    self.kind,
                    "list failed" if need_list else "watch dropped",
                    _describe(err),
                    delay,
                    self.resource_version or "-",
                )
                self._wait(self._stop, delay)

    # ---- list ------------------------------------------
    def list_and_replace(self) -> bool:
        """List the kind in full and replace it in the store. False: the kind does not exist in
        this cluster (an optional CRD that is not installed); it counts as synced and empty."""
        started = self._clock()
        items: list[Mapping[str, Any]] = []
        token: str | None = None
        while True:
            kwargs: dict[str, Any] = {
                "limit": self._page_size,
                "_preload_content": False,
                "_request_timeout": (self._connect_timeout, self._read_timeout),
            }
            if token:
                kwargs["_continue"] = token
            try:
                response = self._list_call(**kwargs)
            except ApiException as err:
                if err.status == 410:
                    log.info(
                        "%s: list continuation expired; listing again from the start", self.kind
                    )
                    items, token = [], None
                    continue
                if err.status == 404 and self._optional:
                    if not self.absent:
                        log.info(
                            "%s: not served by this cluster (CRD not installed); checking again "
                            "every %.0fs",
                            self.kind,
                            self._absent_retry,
                        )
                    self.absent = True
                    self._handler.replace([])
                    self.synced.set()
                    return False
                raise
            try:
                page = orjson.loads(response.data)
            finally:
                response.release_conn()
            items.extend(page.get("items") or [])
            metadata = page.get("metadata") or {}
            token = metadata.get("continue") or None
            if token is None:
                self.resource_version = str(metadata.get("resourceVersion") or "")
                break
        self._handler.replace(items)
        self.last_contact = self._clock()
        self.down_since = None
        self._backoff.reset()  # the API server answered in full
        self._observer.listed(self.kind, len(items), self._clock() - started)
        log.info(
            "%s: listed %d at resourceVersion %s", self.kind, len(items), self.resource_version
        )
        self.absent = False
        self.synced.set()
        return True

    # ---- watch ------------------------------------------
    def watch_once(self) -> None:
        """One watch call: apply its events until the server ends it. Raises Gone on 410."""
        timeout = int(self._watch_timeout * random.uniform(1.0, 2.0))
        self._watch_up_since = None
        try:
            response = self._list_call(
                watch=True,
                resource_version=self.resource_version,
                allow_watch_bookmarks=True,
                timeout_seconds=timeout,
                _preload_content=False,
                _request_timeout=(self._connect_timeout, self._read_timeout),
            )
        except ApiException as err:
            if err.status == 410:
                raise Gone() from err
            raise
        self._response = response
        self.down_since = None  # the API server answered: the watch is back
        self._watch_up_since = self._clock()
        try:
            for count, line in enumerate(
                event_lines(response.stream(amt=None, decode_content=False)), 1
            ):
                if self._stop.is_set():
                    return
                self._handle_line(line)
                if count == 1:
                    self._backoff.reset()  # the watch works (the attempt stays 0 until it fails)
                elif not count % YIELD_EVERY:
                    # Under the gevent worker a busy stream never blocks on the socket, so it
                    # would never let the verbs run: give way now and then (with threads, a
                    # moment of the interpreter lock)
                    time.sleep(0)
        finally:
            self._response = None
            # A stream left mid-way must not go back to the pool with unread bytes in it.
            response.close()
            response.release_conn()

    def _handle_line(self, line: bytes) -> None:
        done = self._handler.apply_line(line)
        if done is not None:
            event_type, version = done
            self.last_contact = self._clock()
            counts = self._event_counts
            counts[event_type] = counts.get(event_type, 0) + 1
            if version:
                self.resource_version = version
            return
        event = orjson.loads(line)
        event_type = event.get("type")
        obj = event.get("object") or {}
        self.last_contact = self._clock()
        if event_type == "ERROR":
            code = obj.get("code")
            if code == 410:
                raise Gone()
            raise WatchError(f"ERROR event {code}: {obj.get('message', '')}")
        version = (obj.get("metadata") or {}).get("resourceVersion")
        counts = self._event_counts
        counts[str(event_type)] = counts.get(str(event_type), 0) + 1
        if event_type != "BOOKMARK":
            self._handler.apply(str(event_type), obj)
        if version:
            self.resource_version = str(version)


def event_lines(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """The watch stream's events, one JSON document a line, as bytes, with or without the newline
    that ended it (orjson and msgspec read bytes, and take the newline as trailing whitespace; the
    client's `iter_resp_lines` decodes each line to str and re-slices its buffer). An event split
    over chunks is joined; a last line without its newline is a cut stream and is dropped (the
    watch resumes from the last resourceVersion applied)."""
    parts: list[bytes] = []
    for chunk in chunks:
        if not parts and chunk[:1] == b"{" and chunk.find(b"\n") == len(chunk) - 1:
            # One whole event, as the API server flushes each: the common case, passed on as it
            # came (JSON readers take the newline as trailing whitespace).
            yield chunk
            continue
        if b"\n" not in chunk:
            if chunk:
                parts.append(chunk)
            continue
        if parts:
            parts.append(chunk)
            chunk = b"".join(parts)
            parts = []
        lines = chunk.split(b"\n")
        tail = lines.pop()
        if tail:
            parts.append(tail)
        for line in lines:
            if line.strip():
                yield line


class WatchError(Exception):
    """The API server sent an ERROR event other than 410."""


def unreachable(err: Exception) -> bool:
    """Whether a failure says only that the API server cannot be reached now (down, restarting,
    or its connection cut): trying again soon costs it nothing. Anything else it answered (an
    error of its own, 429, a watch ERROR) keeps the full backoff."""
    if isinstance(err, ApiException):
        return err.status in (502, 503, 504)
    if isinstance(err, MaxRetryError) and err.reason is not None:
        err = err.reason
    # ConnectTimeoutError covers NewConnectionError (refused); ProtocolError a cut connection;
    # ConnectionError (the builtin) a reset met outside urllib3's wrapping.
    return isinstance(err, ConnectTimeoutError | ProtocolError | ConnectionError)


def _describe(err: Exception) -> str:
    if isinstance(err, ApiException):
        return f"HTTP {err.status} {err.reason}"
    text = str(err)
    return f"{type(err).__name__}: {shorten(text, 200)}" if text else type(err).__name__
