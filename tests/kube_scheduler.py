"""What a real kube-scheduler accepts from an extender, written as checks.

From `k8s.io/kube-scheduler/extender/v1/types.go` and `pkg/scheduler/extender.go`, and the
behaviour recorded in data/kube-scheduler/NOTES.md. Each check raises AssertionError with what
kube-scheduler would have done with the answer.
"""

from __future__ import annotations

from typing import Any


def sent_node_names(request: dict[str, Any]) -> list[str]:
    if request.get("NodeNames") is not None:
        return list(request["NodeNames"])
    return [n["metadata"]["name"] for n in request["Nodes"]["items"]]


def check_filter_answer(request: dict[str, Any], status: int, answer: Any) -> list[str]:
    """Returns the names of the nodes kube-scheduler keeps."""
    assert status == 200, f"HTTP {status}: kube-scheduler treats it as a failed filter"
    assert isinstance(answer, dict), "the filter answer must be an ExtenderFilterResult object"
    assert answer.get("Error", "") == "", f"Error set: the pod fails with {answer['Error']!r}"
    sent = sent_node_names(request)
    cache_capable = request.get("NodeNames") is not None
    if cache_capable:
        names = answer.get("NodeNames")
        assert names is not None, (
            "nodeCacheCapable: the answer needs NodeNames, or every node is dropped"
        )
        for name in names:
            assert name in sent, f"extender claims a filtered node {name!r} not in the input list"
    else:
        nodes = answer.get("Nodes")
        assert isinstance(nodes, dict), "nodeCacheCapable false: the answer needs Nodes.items"
        names = [n["metadata"]["name"] for n in nodes["items"]]
        for name in names:
            assert name in sent, f"node {name!r} was not sent"
    for key in ("FailedNodes", "FailedAndUnresolvableNodes"):
        failed = answer.get(key) or {}
        assert isinstance(failed, dict), f"{key} must map node names to reasons"
        for node, reason in failed.items():
            assert isinstance(reason, str) and reason, f"{key}[{node}] needs a reason string"
    return list(names)


def check_prioritize_answer(request: dict[str, Any], status: int, answer: Any) -> dict[str, int]:
    assert status == 200, f"HTTP {status}: kube-scheduler ignores the scores"
    assert isinstance(answer, list), "prioritize answers a bare HostPriorityList array"
    sent = set(sent_node_names(request))
    scores: dict[str, int] = {}
    for entry in answer:
        assert set(entry) == {"Host", "Score"}, f"unexpected keys {sorted(entry)}"
        score = entry["Score"]
        assert type(score) is int, f"Score {score!r} is not an integer: the whole answer breaks"
        assert 0 <= score <= 10, f"Score {score} is outside 0-10"
        assert entry["Host"] in sent, f"score for a node that was not sent: {entry['Host']}"
        scores[entry["Host"]] = score
    return scores


def check_preempt_answer(request: dict[str, Any], status: int, answer: Any) -> dict[str, Any]:
    assert status == 200, f"HTTP {status}: preemption fails for the pod"
    assert isinstance(answer, dict) and "NodeNameToMetaVictims" in answer
    proposed: dict[str, set[str]] = {}
    if request.get("NodeNameToMetaVictims") is not None:
        for node, victims in request["NodeNameToMetaVictims"].items():
            proposed[node] = {p["UID"] for p in victims["Pods"]}
    else:
        for node, victims in request["NodeNameToVictims"].items():
            proposed[node] = {p["metadata"]["uid"] for p in victims["Pods"]}
    kept: dict[str, Any] = answer["NodeNameToMetaVictims"]
    for node, victims in kept.items():
        assert node in proposed, f"node {node} was not a candidate"
        uids = [p["UID"] for p in victims["Pods"]]
        assert uids, f"node {node} kept without victims"
        assert set(uids) <= proposed[node], f"victims on {node} not among those proposed"
        assert type(victims["NumPDBViolations"]) is int
    return kept


def check_bind_answer(status: int, answer: Any) -> None:
    assert status == 200, f"HTTP {status}: the bind fails and the pod is requeued"
    assert isinstance(answer, dict)
    assert answer.get("Error", "") == "", f"bind failed: {answer['Error']}"
