"""Routes: parse → snapshot → decision core → answer. Nothing is decided here."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from typing import Any

from flask import Blueprint, Response, request
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from extender.binder import BindError
from extender.logs import begin_call, end_call, note_pod
from extender.runtime import Runtime
from extender.web import wire

log = logging.getLogger("gangplank.web")

VERBS = ("filter", "prioritize", "preempt", "bind")


def json_response(answer: Any, status: int = 200) -> Response:
    body = answer if isinstance(answer, bytes) else wire.dumps(answer)
    return Response(body, status=status, mimetype="application/json")


def verbs_blueprint(runtime: Runtime, url_prefix: str) -> Blueprint:
    bp = Blueprint("verbs", __name__, url_prefix=None if url_prefix == "/" else url_prefix)
    metrics = runtime.metrics

    def timed(verb: str, handle: Callable[[dict[str, Any]], Response]) -> Callable[[], Response]:
        latency = metrics.latency.labels(verb)

        def view() -> Response:
            started = time.perf_counter()
            status = 500
            begin_call(verb)
            try:
                response = handle(wire.load_body(request.get_data(cache=False)))
                status = response.status_code
                log.debug("%s answered %d", verb, status)
                return response
            except wire.BadRequest as err:
                status = err.status
                log.info("%s: bad request from %s: %s", verb, request.remote_addr, err.reason)
                return json_response({"Error": err.reason}, err.status)
            finally:
                latency.observe(time.perf_counter() - started)
                metrics.requests.labels(verb, str(status)).inc()
                end_call()

        view.__name__ = verb
        return view

    def filter_(body: dict[str, Any]) -> Response:
        pod = wire.parse_pod(body)
        note_pod(pod.namespace, pod.name)
        nodes = wire.parse_nodes(body)
        with runtime.lock:
            result = runtime.scheduler.filter(
                runtime.store.snapshot(), pod, nodes.names, runtime.clock()
            )
        return json_response(wire.filter_answer(nodes, result))

    def prioritize(body: dict[str, Any]) -> Response:
        pod = wire.parse_pod(body)
        note_pod(pod.namespace, pod.name)
        nodes = wire.parse_nodes(body)
        with runtime.lock:
            scores = runtime.scheduler.scores(runtime.store.snapshot(), pod, nodes.names)
        return json_response(wire.prioritize_answer(nodes.names, scores))

    def preempt(body: dict[str, Any]) -> Response:
        pod = wire.parse_pod(body)
        note_pod(pod.namespace, pod.name)
        candidates = wire.parse_victims(body)
        with runtime.lock:
            kept = runtime.scheduler.preempt(
                runtime.store.snapshot(), pod, candidates, runtime.clock()
            )
        return json_response(wire.preempt_answer(kept))

    def bind(body: dict[str, Any]) -> Response:
        bind_request = wire.parse_bind(body)
        note_pod(bind_request.namespace, bind_request.name)
        with runtime.lock:
            decision = runtime.scheduler.check_bind(bind_request)
        if not decision.allowed:
            metrics.binds.labels("refused").inc()
            return json_response({"Error": decision.reason})
        try:
            runtime.binder.bind(bind_request)
        except BindError as err:
            metrics.binds.labels("failed").inc()
            log.warning("%s", err)
            return json_response({"Error": str(err)})
        with runtime.lock:
            pod = runtime.scheduler.bound(bind_request)
            runtime.store.assume_bound(
                bind_request.namespace, bind_request.name, bind_request.uid, bind_request.node, pod
            )
        metrics.binds.labels("bound").inc()
        return json_response({"Error": ""})

    for verb, handler in zip(VERBS, (filter_, prioritize, preempt, bind), strict=True):
        bp.add_url_rule(f"/{verb}", endpoint=verb, view_func=timed(verb, handler), methods=["POST"])
    return bp


_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")


def health_blueprint(runtime: Runtime) -> Blueprint:
    bp = Blueprint("health", __name__)

    @bp.get("/healthz")
    def healthz() -> Response:
        return json_response({"status": "ok"})

    @bp.get("/readyz")
    def readyz() -> Response:
        ready, reason = runtime.ready()
        return json_response({"ready": ready, "reason": reason}, 200 if ready else 503)

    @bp.get("/queues")
    def queues() -> Response:
        only = request.args.get("queue") or None
        limit_text = request.args.get("limit", "20")
        if not limit_text.isdigit() or not 0 <= int(limit_text) <= 100_000:
            return json_response(
                {"Error": f"limit={limit_text!r}: jobs listed per queue, 0 to 100000"}, 400
            )
        report = runtime.queue_figures(only, int(limit_text))
        if report is None:
            return json_response(
                {"policy": None, "queues": [], "reason": "no policy: gangplank runs without queues"}
            )
        if only is not None and not report["queues"]:
            return json_response({"Error": f"queue {only!r} does not exist"}, 404)
        return json_response(report)

    @bp.get("/status")
    def status() -> Response:
        return json_response(runtime.status_figures())

    @bp.get("/why")
    def why() -> Response:
        ref = request.args.get("pod", "")
        namespace, sep, name = ref.partition("/")
        if not sep or not _NAME.match(namespace) or not _NAME.match(name):
            return json_response(
                {"Error": f"pod={ref!r}: name the pod as namespace/name (DNS names)"}, 400
            )
        answer = runtime.why(namespace, name)
        if answer is None:
            return json_response(
                {"Error": f"pod {namespace}/{name} is not in gangplank's cache"}, 404
            )
        return json_response(answer)

    @bp.get("/metrics")
    def metrics() -> Response:
        runtime.publish()
        return Response(generate_latest(runtime.metrics.registry), mimetype=CONTENT_TYPE_LATEST)

    return bp
