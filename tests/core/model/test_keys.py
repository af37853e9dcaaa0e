"""Who a pod's job is (`core/model/keys.py`): a gang by its source and name, or the pod alone."""

from __future__ import annotations

from extender.core.model.keys import gang_of, is_single, job_key, job_name, single_key
from extender.core.model.snapshot import Owner
from tests.builders import pod_info


def test_a_pod_of_no_gang_is_a_job_of_its_own() -> None:
    key = job_key(pod_info(name="web", namespace="shop"))
    assert key == "pod:shop/web" == single_key("shop", "web")
    assert is_single(key)
    assert job_name(key) == "pod shop/web"


def test_a_gang_member_s_job_is_its_gang_named_by_source() -> None:
    key = job_key(pod_info(name="w-0", namespace="ml", labels={"gangplank.io/gang": "train"}))
    assert key == "gangplank:ml/train"
    assert not is_single(key)
    assert job_name(key) == "gang ml/train"


def test_kubernetes_own_podgroup_wins_over_every_label() -> None:
    labels = {"gangplank.io/gang": "a", "scheduling.x-k8s.io/pod-group": "b"}
    assert gang_of(labels, {}, "ml", None, pod_group="pg") == "native:ml/pg"
    assert gang_of(labels, {}, "ml", None) == "gangplank:ml/a"


def test_a_job_s_pods_form_a_gang_only_when_they_name_a_queue() -> None:
    owner = Owner("Job", "train", "uid-1")
    assert gang_of({"gangplank.io/queue": "team"}, {}, "ml", owner) == "job:ml/train"
    assert gang_of({}, {}, "ml", owner) is None
    assert gang_of({"gangplank.io/queue": "team"}, {}, "ml", Owner("ReplicaSet", "r", "u")) is None
