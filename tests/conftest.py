"""Shared fixtures: an app on a store filled from the kube-scheduler fixture cluster."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from flask.testing import FlaskClient

from extender.cache.handlers import handlers_for
from extender.cache.store import ClusterStore
from extender.kube.binder import StoreBinder
from extender.observe.metrics import Metrics
from extender.service.runtime import Runtime
from extender.web.app import create_app
from tests.builders import fixture
from tests.fakeapi import FakeApiServer


def fixture_store() -> ClusterStore:
    """The three nodes n1-n3 kube-scheduler saw, from the Node objects inside filter.nodes.json."""
    store = ClusterStore()
    handlers_for(store)["nodes"].replace(fixture("filter.nodes.json")["Nodes"]["items"])
    return store


@pytest.fixture
def runtime() -> Runtime:
    return Runtime(fixture_store(), StoreBinder(), Metrics(), preloaded=True)


@pytest.fixture
def client(runtime: Runtime) -> FlaskClient:
    return create_app(runtime).test_client()


@pytest.fixture
def fake_api() -> Iterator[FakeApiServer]:
    with FakeApiServer() as api:
        yield api


@pytest.fixture
def api(fake_api: FakeApiServer) -> FakeApiServer:
    """The scenario suites' name for it."""
    return fake_api
