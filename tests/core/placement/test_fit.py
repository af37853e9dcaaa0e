"""Can this pod go on that node (`core/placement/fit.py`): the checks gangplank makes itself when
it plans a gang ahead of kube-scheduler, each refusal saying why in a few words."""

from __future__ import annotations

from typing import Any

from extender.core.model.resources import GPU
from extender.core.model.snapshot import Taint, Toleration
from extender.core.placement.fit import (
    fits,
    how_many_fit,
    parse_selector,
    selector_misses,
    tolerates,
    too_few_gpus,
    why_not_placeable,
)
from extender.kube.convert import node_from_api, pod_from_api
from tests.builders import node, node_info, pod, pod_info


def tainted(**spec: Any) -> Any:
    raw = node("n1", labels={"zone": "a", "nvidia.com/gpu.product": "H100"})
    raw["spec"] = spec
    return node_from_api(raw)


def test_a_pod_goes_where_its_selector_affinity_and_tolerations_allow() -> None:
    n1 = tainted()
    assert why_not_placeable(pod_info(node_selector={"zone": "a"}), n1) == ""
    assert why_not_placeable(pod_info(node_selector={"zone": "b"}), n1) == "node selector zone=b"
    raw = pod("p")
    raw["spec"]["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]}
                ]
            }
        }
    }
    assert why_not_placeable(pod_from_api(raw), n1) == "required node affinity"


def test_a_cordoned_or_tainted_node_refuses_pods_that_do_not_tolerate_it() -> None:
    assert why_not_placeable(pod_info(), tainted(unschedulable=True)) == "node is cordoned"
    gpu_only = tainted(taints=[{"key": "gpu", "value": "yes", "effect": "NoSchedule"}])
    assert why_not_placeable(pod_info(), gpu_only) == "taint gpu=yes:NoSchedule"
    raw = pod("p")
    raw["spec"]["tolerations"] = [{"key": "gpu", "operator": "Exists"}]
    assert why_not_placeable(pod_from_api(raw), gpu_only) == ""
    soft = tainted(taints=[{"key": "gpu", "effect": "PreferNoSchedule"}])
    assert why_not_placeable(pod_info(), soft) == "", "only NoSchedule and NoExecute block"


def test_a_toleration_matches_by_key_value_and_effect() -> None:
    taint = Taint("gpu", "yes", "NoSchedule")
    assert tolerates((Toleration("gpu", "Equal", "yes", ""),), taint)
    assert not tolerates((Toleration("gpu", "Equal", "no", ""),), taint)
    assert not tolerates((Toleration("gpu", "Exists", "", "NoExecute"),), taint)
    assert tolerates((Toleration("", "Exists", "", ""),), taint), "tolerates everything"


def test_gangplank_s_own_annotations_ask_for_a_gpu_model_and_node_labels() -> None:
    n1 = tainted()
    want_a100 = pod_info(annotations={"gangplank.io/gpu-product": "A100|A800"})
    assert why_not_placeable(want_a100, n1) == (
        "GPU model H100 is not A100|A800 (gangplank.io/gpu-product)"
    )
    assert why_not_placeable(pod_info(annotations={"gangplank.io/gpu-product": "H100"}), n1) == ""
    needs_ib = pod_info(annotations={"gangplank.io/require-nodes": "zone=a,ib"})
    assert why_not_placeable(needs_ib, n1) == "node lacks ib (gangplank.io/require-nodes)"


def test_a_label_selector_is_read_as_kubectl_writes_it() -> None:
    terms = parse_selector("a=b, c!=d,e,!f")
    assert terms == (("a", "=", "b"), ("c", "!=", "d"), ("e", "exists", ""), ("f", "!exists", ""))
    assert selector_misses(terms, {"a": "b", "e": "1"}) == ""
    assert selector_misses(terms, {"a": "b", "c": "d", "e": "1"}) == "c!=d"
    assert selector_misses(terms, {"a": "b", "e": "1", "f": "x"}) == "!f"


def test_how_many_pods_fit_is_set_by_the_scarcest_resource() -> None:
    request = {"cpu": 1000, GPU: 2, "pods": 1}
    assert how_many_fit(request, {"cpu": 8000, GPU: 5, "pods": 110}) == 2
    assert how_many_fit(request, {"cpu": 8000, "pods": 110}) == 0, "no GPU at all"
    assert fits(request, {"cpu": 1000, GPU: 2, "pods": 1})
    assert not fits(request, {"cpu": 999, GPU: 2, "pods": 1})


def test_a_node_with_too_few_gpus_free_is_told_apart_at_once() -> None:
    assert too_few_gpus({GPU: 8}, node_info("n1", gpu=4))
    assert not too_few_gpus({GPU: 4}, node_info("n1", gpu=4))
    assert not too_few_gpus({"cpu": 1000}, node_info("n1", gpu=0)), "a pod of no GPU"
