"""Requeue records outlive a restart in a ConfigMap: written over HTTP by the real Kubernetes
client to the fake API server (which checks keys, sizes and resourceVersions as the real one
does), read back the same, and never lost to another writer."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson
import pytest
from kubernetes import client

from extender.kube.requeue_store import (
    VERBS,
    LogRequeueStore,
    RequeueStore,
    RequeueStoreError,
    config_key,
    job_of_key,
)
from tests.fakeapi import FakeApiServer

NAMESPACE, NAME = "gangplank", "gangplank-requeues"


def record(count: int = 1, reason: str = "pods not ready within 10m") -> dict[str, Any]:
    return {"count": count, "next_try": 1_800_000_000.5, "reason": reason, "held": False}


def core_of(api: FakeApiServer) -> Any:
    return client.CoreV1Api(client.ApiClient(client.Configuration(host=api.url)))


def store_on(api: FakeApiServer, core: Any = None) -> RequeueStore:
    return RequeueStore(core if core is not None else core_of(api), NAMESPACE, NAME)


class Racing:
    """The client, with another writer getting in before each of the first `times` writes (a
    replace or a create): `write` runs just before the call goes out."""

    def __init__(self, core: Any, write: Callable[[], None], times: int = 1) -> None:
        self._core, self._write, self.left = core, write, times

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._core, name)
        if not name.startswith(("replace_", "create_")):
            return method

        def racing(*args: Any, **kwargs: Any) -> Any:
            if self.left > 0:
                self.left -= 1
                self._write()
            return method(*args, **kwargs)

        return racing


def test_a_missing_config_map_loads_as_no_records_and_deleting_from_it_creates_nothing(
    fake_api: FakeApiServer,
) -> None:
    store = store_on(fake_api)
    assert store.load() == {}
    store.save({"gangplank:ml/train": None})
    assert fake_api.config_map(NAMESPACE, NAME) is None
    assert [method for method, _ in fake_api.config_map_calls()] == ["GET", "GET"]


def test_saved_records_load_back_the_same_from_a_config_map_created_once(
    fake_api: FakeApiServer,
) -> None:
    store = store_on(fake_api)
    first = {"gangplank:ml/train": record(1), "pod:ml/notebook": record(2, "idle GPUs")}
    store.save(first)
    store.save({"job:ml/etl": record(3)})
    assert store.load() == {**first, "job:ml/etl": record(3)}
    # A restarted replica (a new store, a new client) reads the same.
    assert store_on(fake_api).load() == {**first, "job:ml/etl": record(3)}
    stored = fake_api.config_map(NAMESPACE, NAME)
    assert stored is not None
    assert stored["data"]["gangplank_3aml_2ftrain"] == orjson.dumps(record(1)).decode()
    methods = [method for method, _ in fake_api.config_map_calls()]
    assert methods.count("POST") == 1 and methods.count("PUT") == 1


def test_none_deletes_a_jobs_record_and_keeps_the_others(fake_api: FakeApiServer) -> None:
    store = store_on(fake_api)
    store.save({"gangplank:ml/a": record(1), "gangplank:ml/b": record(2)})
    store.save({"gangplank:ml/a": None, "gangplank:ml/gone-already": None})
    assert store.load() == {"gangplank:ml/b": record(2)}


def test_saving_what_is_already_there_writes_nothing(fake_api: FakeApiServer) -> None:
    store = store_on(fake_api)
    store.save({"gangplank:ml/a": record(1)})
    version = (fake_api.config_map(NAMESPACE, NAME) or {})["metadata"]["resourceVersion"]
    store.save({"gangplank:ml/a": record(1)})
    assert (fake_api.config_map(NAMESPACE, NAME) or {})["metadata"]["resourceVersion"] == version


def test_the_store_makes_only_the_calls_rbac_grants(fake_api: FakeApiServer) -> None:
    """The verbs manifests/base/rbac-extender.yaml grants on the ConfigMap (tests/
    test_manifests.py checks they are VERBS), here made by a whole life: created, raced,
    replaced, read, emptied."""
    other = store_on(fake_api)
    racing = Racing(core_of(fake_api), lambda: other.save({"gangplank:ml/b": record(5)}), 2)
    store = store_on(fake_api, racing)
    store.save({"gangplank:ml/a": record(1)})
    store.save({"gangplank:ml/a": record(2)})
    store.load()
    store.save({"gangplank:ml/a": None, "gangplank:ml/b": None})
    as_verbs = {"GET": "get", "POST": "create", "PUT": "update", "PATCH": "patch"}
    made = {as_verbs[method] for method, _ in fake_api.config_map_calls()}
    assert made == set(VERBS)
    paths = {path for _, path in fake_api.config_map_calls()}
    assert paths == {
        f"/api/v1/namespaces/{NAMESPACE}/configmaps",
        f"/api/v1/namespaces/{NAMESPACE}/configmaps/{NAME}",
    }


def test_a_write_that_loses_a_race_is_done_again_over_the_other_writers_keys(
    fake_api: FakeApiServer,
) -> None:
    core = core_of(fake_api)
    store_on(fake_api, core).save({"gangplank:ml/a": record(1)})
    other = store_on(fake_api)
    racing = Racing(core, lambda: other.save({"gangplank:ml/b": record(5)}))
    store_on(fake_api, racing).save({"gangplank:ml/a": record(2)})
    assert racing.left == 0
    assert store_on(fake_api).load() == {"gangplank:ml/a": record(2), "gangplank:ml/b": record(5)}
    puts = [method for method, _ in fake_api.config_map_calls() if method == "PUT"]
    assert len(puts) == 3  # the other writer's, ours refused 409, ours again


def test_two_replicas_creating_the_config_map_at_once_both_get_their_keys_in(
    fake_api: FakeApiServer,
) -> None:
    other = store_on(fake_api)
    racing = Racing(core_of(fake_api), lambda: other.save({"gangplank:ml/b": record(5)}))
    store_on(fake_api, racing).save({"gangplank:ml/a": record(1)})
    assert store_on(fake_api).load() == {"gangplank:ml/a": record(1), "gangplank:ml/b": record(5)}


def test_a_writer_always_overtaken_gives_up_after_its_attempts_and_says_so(
    fake_api: FakeApiServer,
) -> None:
    core = core_of(fake_api)
    store_on(fake_api, core).save({"gangplank:ml/a": record(1)})
    other = store_on(fake_api)
    counts = iter(range(100, 200))
    racing = Racing(core, lambda: other.save({"gangplank:ml/b": record(next(counts))}), 99)
    with pytest.raises(RequeueStoreError, match="another writer after 5 attempts"):
        store_on(fake_api, racing).save({"gangplank:ml/a": record(2)})
    assert store_on(fake_api).load()["gangplank:ml/a"] == record(1)


JOBS = [
    "gangplank:ml/train",
    "job:team-a/etl.v2",
    "volcano:ml/group_with_underscores",
    "volcano:ml/a name with spaces/and slashes",
    "kueue:ml/ünïcode",
    "coscheduling:ml/_5f",
    "native:ml/" + "x" * 300,
    "pod:ml/.",
]


def test_job_keys_round_trip_through_config_map_keys_the_api_server_accepts(
    fake_api: FakeApiServer,
) -> None:
    assert config_key("gangplank:ml/train") == "gangplank_3aml_2ftrain"
    for job in JOBS:
        key = config_key(job)
        assert len(key) <= 253 and key.replace("_", "").replace("-", "").replace(".", "").isalnum()
        assert job_of_key(key) in (job, None)  # None: hashed, the value names the job
    assert len({config_key(job) for job in JOBS}) == len(JOBS)
    store = store_on(fake_api)
    store.save({job: record(i) for i, job in enumerate(JOBS)})
    assert store.load() == {job: record(i) for i, job in enumerate(JOBS)}


def test_keys_this_store_never_writes_are_not_taken_for_jobs(fake_api: FakeApiServer) -> None:
    data = {
        "README": "requeue records of gangplank",
        "gangplank_3aml_2ftrain": orjson.dumps(record(1)).decode(),
        "pod_3Aml_2fx": orjson.dumps(record(2)).decode(),  # upper-case hex: not ours
        "job_3aml_2fbad": "not json",
        "job_3aml_2flist": "[1, 2]",
    }
    fake_api.put_config_map({"metadata": {"name": NAME, "namespace": NAMESPACE}, "data": data})
    store = store_on(fake_api)
    assert store.load() == {"gangplank:ml/train": record(1)}
    store.save({"gangplank:ml/other": record(3)})
    stored = fake_api.config_map(NAMESPACE, NAME) or {}
    assert stored["data"]["README"] == data["README"]  # others' keys are left alone


def test_a_refusal_or_an_unreachable_api_server_is_an_error_that_says_why(
    fake_api: FakeApiServer,
) -> None:
    store = store_on(fake_api)
    fake_api.go_down()
    with pytest.raises(
        RequeueStoreError,
        match=rf"cannot read requeue records {NAMESPACE}/{NAME}: 503 Service Unavailable \(the API",
    ):
        store.load()
    fake_api.come_back()
    huge = {"gangplank:ml/a": {"reason": "x" * (1024 * 1024)}}
    with pytest.raises(RequeueStoreError, match=r"cannot write requeue records .*: 422 .*Too long"):
        store.save(huge)
    nowhere = client.CoreV1Api(client.ApiClient(client.Configuration(host="http://127.0.0.1:9")))
    with pytest.raises(RequeueStoreError, match=r"cannot read requeue records .*: API server unr"):
        RequeueStore(nowhere, NAMESPACE, NAME, timeout=(0.2, 0.2)).load()


def test_a_refused_read_says_the_api_servers_words_and_what_to_do(
    fake_api: FakeApiServer,
) -> None:
    fake_api.state.forbidden_config_maps.add(NAMESPACE)
    with pytest.raises(RequeueStoreError) as refused:
        store_on(fake_api).load()
    assert str(refused.value) == (
        f"cannot read requeue records {NAMESPACE}/{NAME}: 403 Forbidden (configmaps "
        f'"{NAME}" is forbidden: User "system:serviceaccount:gangplank:gangplank" cannot get '
        f'resource "configmaps" in API group "" in the namespace "{NAMESPACE}"); gangplank\'s '
        "Role lets it use only the ConfigMaps it names, in the namespace gangplank is deployed in "
        "(manifests/base/rbac-extender.yaml): set $POD_NAMESPACE to that namespace or "
        "--requeue-configmap to that ConfigMap, or grant gangplank this one"
    )


def test_the_in_memory_store_keeps_records_as_the_config_map_would() -> None:
    store = LogRequeueStore()
    assert store.load() == {}
    first = record(1)
    store.save({"gangplank:ml/a": first, "gangplank:ml/b": record(2)})
    first["count"] = 99  # the caller's dict is not the stored one
    store.save({"gangplank:ml/b": None})
    assert store.load() == {"gangplank:ml/a": record(1)}


def test_the_fake_api_server_patches_config_maps_with_the_precondition_of_a_version(
    fake_api: FakeApiServer,
) -> None:
    """What the fake API server does with a (strategic, here a merge) patch: keys set and
    deleted, and refused 409 when it names a resourceVersion no longer current."""
    core = core_of(fake_api)
    meta = {"name": NAME, "namespace": NAMESPACE}
    created = fake_api.put_config_map({"metadata": meta, "data": {"a": "1", "b": "2"}})
    version = created["metadata"]["resourceVersion"]
    core.patch_namespaced_config_map(NAME, NAMESPACE, {"data": {"a": None, "c": "3"}})
    assert (fake_api.config_map(NAMESPACE, NAME) or {})["data"] == {"b": "2", "c": "3"}
    stale = {"metadata": {"resourceVersion": version}, "data": {"d": "4"}}
    with pytest.raises(client.ApiException) as refused:
        core.patch_namespaced_config_map(NAME, NAMESPACE, stale)
    assert refused.value.status == 409
    with pytest.raises(client.ApiException) as invalid:
        core.patch_namespaced_config_map(NAME, NAMESPACE, {"data": {"no/slash": "x"}})
    assert invalid.value.status == 422
    with pytest.raises(client.ApiException) as missing:
        core.patch_namespaced_config_map("other", NAMESPACE, {"data": {"a": "1"}})
    assert missing.value.status == 404
