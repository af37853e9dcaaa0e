"""The bare pass-through extender the suite compares gangplank with: Flask under the same
gunicorn settings, parsing each body as gangplank does (orjson, the pod, the node list) and
passing every node, with neutral scores. What any extender must spend; gangplank's cost beyond
it is what it adds to kube-scheduler."""

from __future__ import annotations

from typing import Any

import orjson
from flask import Flask, Response, request

from extender.web import wire

app = Flask(__name__)


def _answer(body: Any) -> Response:
    return Response(orjson.dumps(body), mimetype="application/json")


@app.post("/scheduler/filter")
def filter_() -> Response:
    body = wire.load_body(request.get_data(cache=False))
    wire.parse_pod(body)
    nodes = wire.parse_nodes(body)
    return _answer({"NodeNames": nodes.names, "FailedNodes": {}, "Error": ""})


@app.post("/scheduler/prioritize")
def prioritize() -> Response:
    body = wire.load_body(request.get_data(cache=False))
    wire.parse_pod(body)
    nodes = wire.parse_nodes(body)
    return _answer([{"Host": n, "Score": 5} for n in nodes.names])


@app.get("/readyz")
def readyz() -> str:
    return "ok"
