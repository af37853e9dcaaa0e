"""The four extender verbs: request body in, answer out. Nothing is decided here.

kube-scheduler calls filter and prioritize for every pod, so these are answered by a plain WSGI
dispatcher (`VerbDispatch`) in front of Flask: a verb call costs gunicorn's parsing, one dict
lookup and the work itself, not Flask's request object, URL matching and response wrapping (which
cost as much again as gangplank's own work for a pass-through pod). Everything else — the
read-only APIs, a verb path asked with the wrong method — goes to the Flask application. The
dispatcher wraps the Flask app's `wsgi_app`, so Flask's test client goes through it too; Flask
keeps routes for the verbs so that a wrong method gets its 405.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

from extender.core.model.answers import NodeScores
from extender.core.model.snapshot import PodInfo
from extender.observe.logs import begin_call, end_call, note_pod
from extender.service.plan_binds import PlanBinds, bind_pod
from extender.service.runtime import Runtime
from extender.web import wire
from extender.web.body_deadline import BodyDeadlines

log = logging.getLogger("gangplank.web")

VERBS = ("filter", "prioritize", "preempt", "bind")

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment

Answer = tuple[int, bytes]


def error(reason: str, status: int) -> Answer:
    return status, wire.dumps({"Error": reason})


def _pod(body: dict[str, Any]) -> PodInfo:
    """The request's pod, named in the log lines of this call from here on."""
    pod = wire.parse_pod(body)
    note_pod(pod.namespace, pod.name)
    return pod


class Verbs:
    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        metrics = runtime.metrics
        self._latency = {verb: metrics.latency.labels(verb) for verb in VERBS}
        self._last_answer: tuple[NodeScores, int, bytes] | None = None
        self._counted: dict[tuple[str, int], Any] = {}  # (verb, status) -> its requests child
        self._plan_binds = PlanBinds(runtime)
        self._handlers: dict[str, Callable[[dict[str, Any]], bytes]] = {
            "filter": self._filter,
            "prioritize": self._prioritize,
            "preempt": self._preempt,
            "bind": self._bind,
        }

    def answer(self, verb: str, data: bytes, remote: str | None) -> Answer:
        """The status and JSON body answering `verb` with request body `data`."""
        started = time.perf_counter()
        begin_call(verb)
        try:
            answer = self._answer(verb, data, remote)
            if log.isEnabledFor(logging.DEBUG):
                log.debug("%s answered %d", verb, answer[0])
        finally:
            self._latency[verb].observe(time.perf_counter() - started)
            end_call()
        counted = self._counted.get((verb, answer[0]))
        if counted is None:  # a child's lookup takes the family's lock: once per verb and status
            counted = self.runtime.metrics.requests.labels(verb, str(answer[0]))
            self._counted[(verb, answer[0])] = counted
        counted.inc()
        return answer

    def _answer(self, verb: str, data: bytes, remote: str | None) -> Answer:
        try:
            return 200, self._handlers[verb](wire.load_body(data))
        except wire.BadRequest as err:
            log.info("%s: bad request from %s: %s", verb, remote, err.reason)
            return error(err.reason, err.status)
        except Exception as err:
            log.exception("internal error answering %s", verb)
            return error(f"gangplank internal error: {type(err).__name__}", 500)

    def _filter(self, body: dict[str, Any]) -> bytes:
        runtime = self.runtime
        pod = _pod(body)
        nodes = wire.parse_nodes(body)
        stale = runtime.staleness()
        runtime.restore_plans()
        with runtime.lock:
            result = runtime.scheduler.filter(
                runtime.store.snapshot_for_verbs(), pod, nodes.names, runtime.clock(), stale
            )
        if result.passed and runtime.bind_planned:
            self._plan_binds.after_filter(pod)  # the plan's other members, bound right away
        return wire.dumps(wire.filter_answer(nodes, result))

    def _prioritize(self, body: dict[str, Any]) -> bytes:
        runtime = self.runtime
        pod = _pod(body)
        nodes = wire.parse_nodes(body)
        with runtime.lock:
            scores = runtime.scheduler.scores(runtime.store.snapshot_for_verbs(), pod, nodes.names)
        # The scores of every node come back as the same object while no node changes state,
        # and only when the very nodes the cache knows were sent (`every_node_sent`): so does
        # their answer, which lists the scores' own names when as many were sent (`wire`).
        last = self._last_answer
        if last is not None and last[0] is scores and last[1] == len(nodes.names):
            return last[2]
        answer = wire.prioritize_answer(nodes.names, scores)
        self._last_answer = (scores, len(nodes.names), answer)
        return answer

    def _preempt(self, body: dict[str, Any]) -> bytes:
        runtime = self.runtime
        pod = _pod(body)
        candidates = wire.parse_victims(body)
        stale = runtime.staleness()
        runtime.restore_plans()
        with runtime.lock:
            kept = runtime.scheduler.preempt(
                runtime.store.snapshot_for_verbs(), pod, candidates, runtime.clock(), stale
            )
        return wire.dumps(wire.preempt_answer(kept))

    def _bind(self, body: dict[str, Any]) -> bytes:
        bind_request = wire.parse_bind(body)
        note_pod(bind_request.namespace, bind_request.name)
        return wire.dumps({"Error": bind_pod(self.runtime, bind_request)})


def too_large(limit: int) -> Answer:
    return error(f"request body is larger than the limit of {limit} bytes (--max-body-bytes)", 413)


class VerbDispatch:
    """WSGI: POST to a verb's path is answered by `Verbs`; anything else goes to `app`."""

    def __init__(
        self,
        app: WSGIApplication,
        verbs: Verbs,
        url_prefix: str,
        max_body_bytes: int,
        body_seconds: float = 10.0,
    ) -> None:
        self.app = app
        self.body_seconds = body_seconds
        self.deadlines = BodyDeadlines(body_seconds)
        self.verbs = verbs
        prefix = "" if url_prefix == "/" else url_prefix.rstrip("/")
        self.paths = {f"{prefix}/{verb}": verb for verb in VERBS}
        self.max_body_bytes = max_body_bytes

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        verb = self.paths.get(environ.get("PATH_INFO", ""))
        if verb is None or environ.get("REQUEST_METHOD") != "POST":
            return self.app(environ, start_response)
        status, body = self._answer(verb, environ)
        start_response(
            f"{status} {HTTPStatus(status).phrase}",
            [("Content-Type", "application/json"), ("Content-Length", str(len(body)))],
        )
        return [body]

    def _answer(self, verb: str, environ: WSGIEnvironment) -> Answer:
        # Under gunicorn, the body must be in within `body_seconds` (body_deadline.py), so a
        # stalled or dribbling client does not hold one of the worker's threads.
        sock = environ.get("gunicorn.socket")
        if sock is None:
            read = self._read(environ)
        else:
            self.deadlines.watch(sock)
            try:
                read = self._read(environ)
            except OSError as err:
                cut = self.deadlines.done(sock)
                # silent for `body_seconds`, or cut by the watchdog while the read waited
                if isinstance(err, TimeoutError) or cut:
                    return self._late()
                raise
            if self.deadlines.done(sock):  # by the watchdog: what came is not all of it
                return self._late()
        if isinstance(read, tuple):
            return read
        return self.verbs.answer(verb, read, environ.get("REMOTE_ADDR"))

    def _late(self) -> Answer:
        return error(
            f"request body not received within {self.body_seconds:g} s (--body-seconds)", 408
        )

    def _read(self, environ: WSGIEnvironment) -> bytes | Answer:
        """The request body, or the answer that refuses it."""
        limit = self.max_body_bytes
        length_text = environ.get("CONTENT_LENGTH") or ""
        stream = environ["wsgi.input"]
        if length_text:
            if not length_text.isdigit():
                return error(f"Content-Length {length_text[:40]!r} is not a number", 400)
            length = int(length_text)
            if length > limit:
                return too_large(limit)
            data: bytes = stream.read(length)
            return data
        # chunked, or no body: read at most one byte past the limit
        data = stream.read(limit + 1)
        if len(data) > limit:
            return too_large(limit)
        return data
