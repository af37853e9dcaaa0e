"""Flask routes: the read-only APIs, and the verbs for Flask's own dispatch (see `verbs`)."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any

from flask import Blueprint, Response, request
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from extender.core.report.why import not_held
from extender.service.runtime import Runtime
from extender.web import wire
from extender.web.verbs import VERBS, Verbs

log = logging.getLogger("gangplank.web")


def json_response(answer: Any, status: int = 200) -> Response:
    body = answer if isinstance(answer, bytes) else wire.dumps(answer)
    return Response(body, status=status, mimetype="application/json")


def verbs_blueprint(verbs: Verbs, url_prefix: str) -> Blueprint:
    """The verbs as Flask routes: `VerbDispatch` answers every POST before Flask sees it; these
    give a verb asked with another method its 405."""
    bp = Blueprint("verbs", __name__, url_prefix=None if url_prefix == "/" else url_prefix)

    def route(verb: str) -> Callable[[], Response]:
        def view() -> Response:
            status, body = verbs.answer(verb, request.get_data(cache=False), request.remote_addr)
            return json_response(body, status)

        view.__name__ = verb
        return view

    for verb in VERBS:
        bp.add_url_rule(f"/{verb}", endpoint=verb, view_func=route(verb), methods=["POST"])
    return bp


_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")


def _limit(default: str, what: str) -> int | Response:
    """The `limit` query parameter, or the 400 that says what it must be."""
    text = request.args.get("limit", default)
    if not (text.isascii() and text.isdigit() and len(text) <= 6) or not int(text) <= 100_000:
        return json_response({"Error": f"limit={text!r}: {what}, 0 to 100000"}, 400)
    return int(text)


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
        limit = _limit("20", "jobs listed per queue")
        if isinstance(limit, Response):
            return limit
        report = runtime.reports.queue_figures(only, limit)
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
        answer = runtime.reports.why(namespace, name)
        if answer is None:
            return json_response({"Error": not_held(namespace, name)}, 404)
        return json_response(answer)

    @bp.get("/pods")
    def pods() -> Response:
        only = request.args.get("queue") or None
        namespace = request.args.get("namespace") or None
        waiting = request.args.get("waiting", "")
        if waiting not in ("", "0", "1", "false", "true"):
            return json_response({"Error": f"waiting={waiting!r}: true or false"}, 400)
        if namespace is not None and not _NAME.match(namespace):
            return json_response({"Error": f"namespace={namespace!r}: not a namespace name"}, 400)
        limit = _limit("200", "pods listed")
        if isinstance(limit, Response):
            return limit
        answer = runtime.reports.pods(limit, only, namespace, waiting in ("1", "true"))
        if answer is None:
            return json_response(
                {"Error": f"queue {only!r} does not exist (`gangplank queues` lists them)"}, 404
            )
        return json_response(answer)

    @bp.get("/metrics")
    def metrics() -> Response:
        runtime.publish()
        return Response(generate_latest(runtime.metrics.registry), mimetype=CONTENT_TYPE_LATEST)

    return bp
