"""The Flask application factory (no module-level app)."""

from __future__ import annotations

import logging

from flask import Flask, Response, request
from werkzeug.exceptions import HTTPException

from extender.service.runtime import Runtime, build_runtime
from extender.service.settings import Settings
from extender.web.routes import health_blueprint, json_response, verbs_blueprint
from extender.web.verbs import VERBS, VerbDispatch, Verbs

log = logging.getLogger("gangplank.web")


def create_app(runtime: Runtime, settings: Settings | None = None) -> Flask:
    settings = settings or Settings()
    app = Flask("gangplank")
    app.config["MAX_CONTENT_LENGTH"] = settings.max_body_bytes
    app.extensions["gangplank"] = runtime
    verbs = Verbs(runtime)
    app.register_blueprint(verbs_blueprint(verbs, settings.url_prefix))
    app.register_blueprint(health_blueprint(runtime))
    prefix = "" if settings.url_prefix == "/" else settings.url_prefix
    routes = ", ".join(f"POST {prefix}/{verb}" for verb in VERBS)

    @app.errorhandler(HTTPException)
    def http_error(err: HTTPException) -> Response:
        status = err.code or 500
        if status == 404:
            # every GET route the app has, so the list cannot fall behind it
            gets = sorted(
                {
                    r.rule.split("<")[0].rstrip("/") or r.rule
                    for r in app.url_map.iter_rules()
                    if "GET" in (r.methods or ()) and r.endpoint != "static"
                }
            )
            reason = (
                f"no route {request.method} {request.path}; gangplank serves {routes}, "
                f"GET {', '.join(gets)}"
            )
        elif status == 405:
            allowed = ", ".join(getattr(err, "valid_methods", None) or ())
            reason = f"{request.method} is not allowed on {request.path}; it answers {allowed}"
        elif status == 413:
            reason = (
                f"request body is larger than the limit of {settings.max_body_bytes} bytes "
                "(--max-body-bytes)"
            )
        else:
            reason = err.description or err.name
        response = json_response({"Error": reason}, status)
        for name, value in err.get_headers():
            if name.lower() == "allow":  # RFC 9110: a 405 lists the methods that are allowed
                response.headers[name] = value
        return response

    @app.errorhandler(Exception)
    def internal_error(err: Exception) -> Response:
        log.exception("internal error answering %s %s", request.method, request.path)
        return json_response({"Error": f"gangplank internal error: {type(err).__name__}"}, 500)

    # The verbs skip Flask's dispatch under a server and under Flask's test client alike.
    app.wsgi_app = VerbDispatch(  # type: ignore[method-assign]
        app.wsgi_app, verbs, settings.url_prefix, settings.max_body_bytes, settings.body_seconds
    )
    return app


def create_app_from_settings(settings: Settings) -> Flask:
    """Build the runtime (without starting its threads) and the app around it."""
    return create_app(build_runtime(settings), settings)
