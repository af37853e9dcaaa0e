"""The kube-scheduler extender v1 wire format.

Keys are Go field names. Go decodes them case-insensitively, so we read them case-insensitively
too, and always answer in PascalCase. Fields a mode does not use are sent as null, as
kube-scheduler itself does. Everything malformed raises BadRequest with what is wrong.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass
from itertools import compress
from typing import Any

import orjson

from extender.core.model.answers import MAX_SCORE, BindRequest, FilterResult, NodeScores, Victims
from extender.core.model.names import DNS_SUBDOMAIN
from extender.core.model.snapshot import PodInfo
from extender.kube.convert import ConversionError, pod_from_api


class BadRequest(Exception):
    """Input kube-scheduler (or anyone) sent that cannot be answered; HTTP 400 with the reason."""

    def __init__(self, reason: str, status: int = 400) -> None:
        super().__init__(reason)
        self.reason = reason
        self.status = status


def load_body(data: bytes) -> dict[str, Any]:
    """The request body as a JSON object with keys folded to lower case."""
    if not data:
        raise BadRequest("empty request body: expected a JSON object")
    try:
        body = orjson.loads(data)
    except orjson.JSONDecodeError as err:
        raise BadRequest(f"request body is not valid JSON: {err}") from None
    if not isinstance(body, dict):
        raise BadRequest(f"request body must be a JSON object, not {_json_type(body)}")
    return fold(body)


def fold(obj: Mapping[str, Any]) -> dict[str, Any]:
    return {key.lower(): value for key, value in obj.items()}


def _json_type(value: object) -> str:
    return {
        list: "an array",
        str: "a string",
        int: "a number",
        float: "a number",
        bool: "a boolean",
        type(None): "null",
    }.get(type(value), type(value).__name__)


def parse_pod(body: Mapping[str, Any]) -> PodInfo:
    raw = body.get("pod")
    if raw is None:
        raise BadRequest("missing Pod: the request must carry the pod being scheduled")
    if not isinstance(raw, dict):
        raise BadRequest(f"Pod must be a JSON object, not {_json_type(raw)}")
    try:
        return pod_from_api(raw)
    except ConversionError as err:
        raise BadRequest(f"Pod cannot be read: {err}") from None


@dataclass(frozen=True, slots=True)
class NodeArgs:
    """The nodes of a filter or prioritize call, in the form they came in."""

    names: list[str]
    raw_nodes: list[Any] | None  # None in nodeCacheCapable mode (NodeNames)


def parse_nodes(body: Mapping[str, Any]) -> NodeArgs:
    names = body.get("nodenames")
    if names is not None:
        if not isinstance(names, list):
            raise BadRequest("NodeNames must be an array of node names (strings)")
        _check_names(names)
        return NodeArgs(names=names, raw_nodes=None)
    nodes = body.get("nodes")
    if nodes is None:
        raise BadRequest(
            "neither NodeNames (nodeCacheCapable: true) nor Nodes "
            "(nodeCacheCapable: false) was sent"
        )
    if not isinstance(nodes, dict):
        raise BadRequest(f"Nodes must be a NodeList object, not {_json_type(nodes)}")
    items = fold(nodes).get("items")
    if items is None:
        items = []
    if not isinstance(items, list):
        raise BadRequest("Nodes.items must be an array of Node objects")
    out: list[str] = []
    for i, node in enumerate(items):
        meta = node.get("metadata") if isinstance(node, dict) else None
        name = meta.get("name") if isinstance(meta, dict) else None
        if not isinstance(meta, dict) or not isinstance(name, str) or not name:
            raise BadRequest(f"Nodes.items[{i}] has no metadata.name")
        _check_meta(meta, f"Nodes.items[{i}].metadata")
        out.append(name)
    _check_names(out)
    return NodeArgs(names=out, raw_nodes=items)


def _check_meta(meta: Mapping[str, Any], where: str) -> None:
    """A node kept is sent back as it came: its metadata must be of the types Kubernetes
    writes (a fuzzed body with `uid: null` was echoed back as an invalid answer)."""
    for key in ("uid", "namespace", "creationTimestamp", "resourceVersion"):
        if key in meta and not isinstance(meta[key], str):
            raise BadRequest(f"{where}.{key} must be a string")
    for key in ("labels", "annotations"):
        value = meta.get(key)
        if value is None:
            continue
        if not isinstance(value, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()
        ):
            raise BadRequest(f"{where}.{key} must map strings to strings")


_VALID_NAMES: set[str] = set()  # node names found valid before (kube-scheduler sends the same)
_VALID_NAMES_LIMIT = 100_000


def _check_names(names: list[str]) -> None:
    """Every name a Kubernetes node name: a DNS subdomain (lowercase letters, digits, '-' and
    '.', a letter or digit at each end, at most 253 characters), as the API server validates
    them. A name found valid once is remembered: checking 200 names again is one set lookup
    each (whose hash the engine's own lookups reuse)."""
    try:
        if _VALID_NAMES.issuperset(names):
            return
    except TypeError:  # a list or an object among them
        raise BadRequest("node names must be strings") from None
    for name in names:
        if not isinstance(name, str):
            raise BadRequest("node names must be strings")
        if not DNS_SUBDOMAIN.fullmatch(name):
            raise BadRequest(
                f"node name {name!r} is not a valid Kubernetes node name (lowercase letters, "
                "digits, '-' and '.', a letter or digit at each end, at most 253 characters)"
            )
    if len(_VALID_NAMES) > _VALID_NAMES_LIMIT:
        _VALID_NAMES.clear()
    _VALID_NAMES.update(names)


def filter_answer(nodes: NodeArgs, result: FilterResult) -> dict[str, Any]:
    answer: dict[str, Any] = {
        "Nodes": None,
        "NodeNames": None,
        "FailedNodes": result.failed,
        "FailedAndUnresolvableNodes": result.unresolvable,
        "Error": "",
    }
    if nodes.raw_nodes is None:
        answer["NodeNames"] = result.passed
    else:
        keep = set(result.passed)
        answer["Nodes"] = {
            "metadata": {},
            "items": [
                n for n, name in zip(nodes.raw_nodes, nodes.names, strict=True) if name in keep
            ],
        }
    return answer


def prioritize_answer(names: list[str], scores: NodeScores) -> bytes:
    """The HostPriorityList as JSON, for the nodes scored above 0: kube-scheduler adds an
    extender's score to each node it lists and nothing to the others, so a node left out is a
    node scored 0 — and kube-scheduler decodes, and gangplank encodes, a few entries instead of
    thousands (one per node, with percentageOfNodesToScore: 100).

    Built by joining strings, in C, rather than per node in Python. Names were checked by
    `parse_nodes` to need no escaping, so joining them is exact JSON.
    """
    if scores.listed and len(scores.names) == len(names) and not scores.default:
        listed = scores.listed
        separators = map(_SEPARATORS.__getitem__, filter(None, listed))
        return _host_list(list(compress(scores.names, listed)), separators)
    if not scores.default:  # the few nodes of `by_node` that were sent
        sent: Container[str] = names if len(scores.by_node) <= 16 else set(names)
        hosts = [name for name, score in scores.by_node.items() if score and name in sent]
        return _host_list(hosts, (_SEPARATORS[scores.by_node[name]] for name in hosts))
    table = scores.table(names)  # every node scored by default: per node
    hosts = [name for name in names if table[name]]
    return _host_list(hosts, (_SEPARATORS[table[name]] for name in hosts))


def _host_list(hosts: list[str], separators: Iterable[str]) -> bytes:
    """`[{"Host":"<host>","Score":<score>},...]`: hosts and the separators after them (each
    '","Score":<score>},{"Host":"') interleaved by slice assignment."""
    if not hosts:
        return b"[]"
    parts = [*hosts, *hosts]
    parts[1::2] = separators
    parts[::2] = hosts
    return ('[{"Host":"' + "".join(parts)[: -len(_NEXT_HOST)] + "]").encode()


_NEXT_HOST = ',{"Host":"'
_SEPARATORS = [f'","Score":{score}}}{_NEXT_HOST}' for score in range(MAX_SCORE + 1)]


def _victims_entry(node: str, raw: Any, meta: bool) -> Victims:
    if not isinstance(raw, dict):
        raise BadRequest(f"victims of node {node} must be an object with Pods")
    entry = fold(raw)
    pods = entry.get("pods") or []
    if not isinstance(pods, list):
        raise BadRequest(f"victims of node {node}: Pods must be an array")
    uids: list[str] = []
    for i, pod in enumerate(pods):
        if not isinstance(pod, dict):
            raise BadRequest(f"victims of node {node}: Pods[{i}] must be an object")
        if meta:
            uid = fold(pod).get("uid")
        else:
            metadata = pod.get("metadata")
            uid = metadata.get("uid") if isinstance(metadata, dict) else None
        if not isinstance(uid, str) or not uid:
            raise BadRequest(f"victims of node {node}: Pods[{i}] has no UID")
        uids.append(uid)
    violations = entry.get("numpdbviolations") or 0
    if isinstance(violations, bool) or not isinstance(violations, int) or violations < 0:
        raise BadRequest(f"victims of node {node}: NumPDBViolations must be a whole number")
    return Victims(uids=tuple(uids), pdb_violations=violations)


def parse_victims(body: Mapping[str, Any]) -> dict[str, Victims]:
    meta = body.get("nodenametometavictims")
    full = body.get("nodenametovictims")
    source, is_meta = (meta, True) if meta is not None else (full, False)
    if source is None:
        raise BadRequest("neither NodeNameToMetaVictims nor NodeNameToVictims was sent")
    if not isinstance(source, dict):
        raise BadRequest("NodeNameToVictims / NodeNameToMetaVictims must map node names to victims")
    _check_names(list(source))
    return {node: _victims_entry(node, raw, is_meta) for node, raw in source.items()}


def preempt_answer(kept: Mapping[str, Victims]) -> dict[str, Any]:
    return {
        "NodeNameToMetaVictims": {
            node: {"Pods": [{"UID": uid} for uid in v.uids], "NumPDBViolations": v.pdb_violations}
            for node, v in kept.items()
        }
    }


def parse_bind(body: Mapping[str, Any]) -> BindRequest:
    values: dict[str, str] = {}
    for key, label in (
        ("podname", "PodName"),
        ("podnamespace", "PodNamespace"),
        ("poduid", "PodUID"),
        ("node", "Node"),
    ):
        value = body.get(key)
        if value is None and key == "poduid":
            value = ""
        if not isinstance(value, str) or (not value and key != "poduid"):
            raise BadRequest(f"{label} must be a non-empty string")
        values[key] = value
    _check_names([values["node"]])
    return BindRequest(
        namespace=values["podnamespace"],
        name=values["podname"],
        uid=values["poduid"],
        node=values["node"],
    )


def dumps(answer: Any) -> bytes:
    return orjson.dumps(answer)
