"""Prioritize over HTTP while nodes churn: kube-scheduler's own body is scored on the nodes it
sent, even when the cache holds as many nodes but not the same ones."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from flask.testing import FlaskClient

from extender.cache.handlers import handlers_for
from extender.cache.store import ClusterStore
from extender.kube.binder import StoreBinder
from extender.observe.metrics import Metrics
from extender.service.runtime import Runtime
from extender.web.app import create_app
from tests.builders import fixture, node
from tests.kube_scheduler import check_prioritize_answer


def client_caching(names: list[str]) -> FlaskClient:
    """A server whose cache holds `names`: 2-GPU nodes like kube-scheduler's n1-n3."""
    store = ClusterStore()
    handlers_for(store)["nodes"].replace(
        [node(name, gpu=2, cpu="4", memory="16Gi") for name in names]
    )
    return create_app(Runtime(store, StoreBinder(), Metrics(), preloaded=True)).test_client()


def prioritize(client: FlaskClient, request: dict[str, Any]) -> dict[str, int]:
    """The scores answered, checked as kube-scheduler reads them (only nodes it sent)."""
    response = client.post(
        "/scheduler/prioritize", data=orjson.dumps(request), content_type="application/json"
    )
    return check_prioritize_answer(request, response.status_code, orjson.loads(response.data))


@pytest.mark.parametrize(
    "cached",
    [["g1", "g2", "g3"], ["n1", "n3", "n4"]],
    ids=["the cache holds three other nodes", "the cache holds n4 where n2 was"],
)
def test_kube_schedulers_prioritize_body_is_scored_on_the_nodes_it_sent(cached: list[str]) -> None:
    client = client_caching(cached)
    request = fixture("prioritize.nodenames.json")  # NodeNames: n1, n3, n2; a 1-GPU pod
    every = {**request, "NodeNames": cached}
    assert prioritize(client, every) == dict.fromkeys(cached, 10), "every node: remembered"
    assert prioritize(client, request) == {
        name: 10 for name in request["NodeNames"] if name in cached
    }, "nodes sent that the cache does not know score 0 (left out); no other node is answered"
