"""The embedded cluster view (`--cluster-file`) holds exactly the file's objects, or says why
it cannot."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from extender.cache.static import ClusterFileError, load_cluster_file
from extender.cache.store import ClusterStore
from tests.builders import node, pod


def test_a_kubectl_list_of_nodes_and_pods_fills_the_cache(tmp_path: Path) -> None:
    path = tmp_path / "cluster.json"
    items = [{**node("n1", gpu=8), "kind": "Node"}, {**pod("p", node="n1"), "kind": "Pod"}]
    path.write_bytes(orjson.dumps({"kind": "List", "items": items}))
    store = ClusterStore()
    counts = load_cluster_file(path, store)
    assert (counts["nodes"], counts["pods"]) == (1, 1)
    assert store.counts()["pods"] == 1


def test_an_item_without_a_kind_is_refused_not_left_out(tmp_path: Path) -> None:
    path = tmp_path / "cluster.json"
    path.write_bytes(orjson.dumps({"kind": "List", "items": [node("n1")]}))
    with pytest.raises(ClusterFileError, match="n1 has no kind"):
        load_cluster_file(path, ClusterStore())
