"""The one place that turns Kubernetes API JSON into the core's types.

Everything that can be wrong with an object (a missing name, a label that is not a string, an
impossible quantity) is raised as ConversionError with the field path and what is wrong, so the
web layer can answer 400 and the cache can log and skip the object.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime
from typing import Any

import orjson

from extender.core.model.keys import (
    KUEUE_MIN_PARALLELISM,
    KUEUE_QUEUE,
    SHRUNK_FROM,
    gang_of,
    single_key,
)
from extender.core.model.quantity import QuantityError, parse_quantity
from extender.core.model.resources import maximum, total
from extender.core.model.snapshot import (
    AffinityTerm,
    JobInfo,
    NodeInfo,
    Owner,
    PodGroupInfo,
    PodInfo,
    PyTorchJobInfo,
    Requirement,
    Taint,
    Toleration,
)


class ConversionError(ValueError):
    """An API object gangplank cannot read; the message names the field and the problem."""


_EMPTY: Mapping[str, Any] = {}


def _mapping(obj: Mapping[str, Any], key: str, path: str) -> Mapping[str, Any]:
    value = obj.get(key)
    if value is None:
        return _EMPTY
    if not isinstance(value, Mapping):
        raise ConversionError(f"{path}.{key} must be an object, not {type(value).__name__}")
    return value


def _list(obj: Mapping[str, Any], key: str, path: str) -> list[Any]:
    value = obj.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise ConversionError(f"{path}.{key} must be a list, not {type(value).__name__}")
    return value


def _str(obj: Mapping[str, Any], key: str, path: str, *, required: bool = False) -> str:
    value = obj.get(key)
    if value is None:
        if required:
            raise ConversionError(f"{path}.{key} is required")
        return ""
    if not isinstance(value, str):
        raise ConversionError(f"{path}.{key} must be a string, not {type(value).__name__}")
    return value


def _int(obj: Mapping[str, Any], key: str, path: str) -> int:
    value = obj.get(key)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConversionError(f"{path}.{key} must be an integer, not {value!r}")
    if not -(2**31) <= value < 2**31:
        raise ConversionError(f"{path}.{key} = {value} is outside the int32 range")
    return value


def _objects(
    obj: Mapping[str, Any], key: str, path: str
) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """The entries of a list of objects, each with its field path."""
    for i, item in enumerate(_list(obj, key, path)):
        item_path = f"{path}.{key}[{i}]"
        if not isinstance(item, Mapping):
            raise ConversionError(f"{item_path} must be an object")
        yield item_path, item


def _string_map(obj: Mapping[str, Any], key: str, path: str) -> dict[str, str]:
    value = _mapping(obj, key, path)
    for k, v in value.items():
        if not isinstance(v, str):
            raise ConversionError(f"{path}.{key}[{k!r}] must be a string, not {type(v).__name__}")
    return dict(value)


def resource_list(raw: Mapping[str, Any], path: str) -> dict[str, int]:
    """A ResourceList (`{"cpu": "500m", "nvidia.com/gpu": "1"}`) in the core's units."""
    out: dict[str, int] = {}
    for name, quantity in raw.items():
        try:
            out[name] = parse_quantity(quantity, milli=(name == "cpu"))
        except QuantityError as err:
            raise ConversionError(f"{path}[{name!r}]: {err}") from None
    return out


def _container_requests(container: Any, path: str) -> dict[str, int]:
    if not isinstance(container, Mapping):
        raise ConversionError(f"{path} must be an object")
    resources = _mapping(container, "resources", path)
    rpath = f"{path}.resources"
    requests = resource_list(_mapping(resources, "requests", rpath), f"{rpath}.requests")
    # The API server defaults a request to the limit when only the limit is given.
    for name, amount in resource_list(
        _mapping(resources, "limits", rpath), f"{rpath}.limits"
    ).items():
        requests.setdefault(name, amount)
    return requests


def pod_requests(spec: Mapping[str, Any], path: str = "spec") -> dict[str, int]:
    """What a pod requests of its node, computed as kube-scheduler does.

    Regular containers and restartable init containers (sidecars) add up; each ordinary init
    container needs its own request plus the sidecars started before it; the pod needs the larger
    of the two. Pod overhead is added; pod-level `resources.requests` replace the container sums
    for the resources they name. Every pod also takes one `pods` slot.
    """
    containers = _list(spec, "containers", path)
    regular = total(
        _container_requests(c, f"{path}.containers[{i}]") for i, c in enumerate(containers)
    )
    sidecars: dict[str, int] = {}
    init_peak: dict[str, int] = {}
    for i, init in enumerate(_list(spec, "initContainers", path)):
        requests = _container_requests(init, f"{path}.initContainers[{i}]")
        if init.get("restartPolicy") == "Always":
            sidecars = total((sidecars, requests))
        else:
            init_peak = maximum(init_peak, total((requests, sidecars)))
    needed = maximum(total((regular, sidecars)), init_peak)
    pod_level = _mapping(_mapping(spec, "resources", path), "requests", f"{path}.resources")
    if pod_level:
        needed.update(resource_list(pod_level, f"{path}.resources.requests"))
    overhead = resource_list(_mapping(spec, "overhead", path), f"{path}.overhead")
    needed = total((needed, overhead))
    needed["pods"] = 1
    return needed


def _timestamp(text: str, path: str) -> float:
    if not text:
        return 0.0
    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        raise ConversionError(f"{path} = {text!r} is not an RFC 3339 time") from None


def _owner(metadata: Mapping[str, Any]) -> Owner | None:
    for i, ref in enumerate(_list(metadata, "ownerReferences", "metadata")):
        if isinstance(ref, Mapping) and ref.get("controller") is True:
            path = f"metadata.ownerReferences[{i}]"
            return Owner(
                kind=_str(ref, "kind", path),
                name=_str(ref, "name", path),
                uid=_str(ref, "uid", path),
                api_version=_str(ref, "apiVersion", path),
            )
    return None


def _tolerations(spec: Mapping[str, Any]) -> tuple[Toleration, ...]:
    return tuple(
        Toleration(
            key=_str(raw, "key", path),
            operator=_str(raw, "operator", path) or "Equal",
            value=_str(raw, "value", path),
            effect=_str(raw, "effect", path),
        )
        for path, raw in _objects(spec, "tolerations", "Pod.spec")
    )


def _requirements(term: Mapping[str, Any], key: str, path: str) -> tuple[Requirement, ...]:
    out = []
    for rpath, raw in _objects(term, key, path):
        values = _list(raw, "values", rpath)
        if not all(isinstance(v, str) for v in values):
            raise ConversionError(f"{rpath}.values must be strings")
        out.append(
            Requirement(
                key=_str(raw, "key", rpath),
                operator=_str(raw, "operator", rpath),
                values=tuple(values),
            )
        )
    return tuple(out)


def _affinity(spec: Mapping[str, Any]) -> tuple[AffinityTerm, ...]:
    path = "Pod.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
    node_affinity = _mapping(
        _mapping(spec, "affinity", "Pod.spec"), "nodeAffinity", "Pod.spec.affinity"
    )
    required = _mapping(
        node_affinity,
        "requiredDuringSchedulingIgnoredDuringExecution",
        "Pod.spec.affinity.nodeAffinity",
    )
    return tuple(
        AffinityTerm(
            labels=_requirements(term, "matchExpressions", tpath),
            fields=_requirements(term, "matchFields", tpath),
        )
        for tpath, term in _objects(required, "nodeSelectorTerms", path)
    )


def pod_restarts(status: Mapping[str, Any]) -> int:
    """Container restarts, summed over `status.containerStatuses`."""
    statuses = status.get("containerStatuses")
    if not isinstance(statuses, list):
        return 0
    return restart_total(
        entry.get("restartCount") if isinstance(entry, Mapping) else None for entry in statuses
    )


def restart_total(counts: Iterable[object]) -> int:
    """The containers' `restartCount`s summed: what is no positive integer counts nothing."""
    total = 0
    for count in counts:
        if isinstance(count, int) and not isinstance(count, bool) and count > 0:
            total += count
    return total


def pod_ready(status: Mapping[str, Any]) -> bool:
    """Whether the pod's `Ready` condition (in `status.conditions`) is "True"."""
    conditions = status.get("conditions")
    if not isinstance(conditions, list):
        return False
    for condition in conditions:
        if (
            isinstance(condition, Mapping)
            and condition.get("type") == "Ready"
            and condition.get("status") == "True"
        ):
            return True
    return False


def pod_waiting_reason(status: Mapping[str, Any]) -> str:
    """The `state.waiting.reason` of the first container waiting with one (init containers
    first, then the others), e.g. ImagePullBackOff or CrashLoopBackOff; "" when none is. What
    is not a non-empty string counts as no reason."""
    for key in ("initContainerStatuses", "containerStatuses"):
        statuses = status.get(key)
        if not isinstance(statuses, list):
            continue
        for entry in statuses:
            state = entry.get("state") if isinstance(entry, Mapping) else None
            waiting = state.get("waiting") if isinstance(state, Mapping) else None
            reason = waiting.get("reason") if isinstance(waiting, Mapping) else None
            if isinstance(reason, str) and reason:
                return reason
    return ""


# What a pod's spec (but its nodeName) converts to: requests, priority, schedulerName,
# nodeSelector, tolerations, required node affinity, schedulingGroup's podGroupName, the
# PersistentVolumeClaims its volumes name.
_SpecParts = tuple[
    dict[str, int],
    int,
    str,
    dict[str, str],
    tuple[Toleration, ...],
    tuple[AffinityTerm, ...],
    str,
    tuple[str, ...],
    bool,
    bool,
]
SPEC_MEMO_SIZE = 4096
_spec_memo: dict[int, _SpecParts] = {}


def spec_key(spec: Mapping[str, Any]) -> int | None:
    """A fingerprint of a pod's spec without its nodeName (which binding sets): Python's hash of
    the orjson text, keyed per process, so specs cannot be made to collide. None when the spec
    does not serialise (the conversion then says what is wrong)."""
    try:
        return hash(
            orjson.dumps(
                {k: v for k, v in spec.items() if k != "nodeName"} if "nodeName" in spec else spec
            )
        )
    except (orjson.JSONEncodeError, TypeError):
        return None


def _spec_parts(spec: Mapping[str, Any], key: int | None) -> _SpecParts:
    """The spec's conversion, remembered by its `spec_key`: the pods of one workload share their
    spec, and kube-scheduler sends the same pod on every call. Plain dict operations keep it safe
    across threads; it is emptied when full."""
    if key is None:
        return _convert_spec(spec)
    parts = _spec_memo.get(key)
    if parts is None:
        parts = _convert_spec(spec)
        if len(_spec_memo) >= SPEC_MEMO_SIZE:
            _spec_memo.clear()
        _spec_memo[key] = parts
    return parts


def _convert_spec(spec: Mapping[str, Any]) -> _SpecParts:
    group = spec.get("schedulingGroup")
    pod_group = group.get("podGroupName") if isinstance(group, Mapping) else None
    return (
        pod_requests(spec, "Pod.spec"),
        _int(spec, "priority", "Pod.spec"),
        _str(spec, "schedulerName", "Pod.spec") or "default-scheduler",
        _string_map(spec, "nodeSelector", "Pod.spec"),
        _tolerations(spec),
        _affinity(spec),
        pod_group if isinstance(pod_group, str) else "",
        _claims(spec),
        _local_storage(spec),
        needs_bind_cycle(spec),
    )


def _local_storage(spec: Mapping[str, Any]) -> bool:
    """Whether the pod keeps data on its node that a move would lose: an `emptyDir` or a
    `hostPath` volume (a local PersistentVolume is not visible from the pod: its claim names no
    node)."""
    volumes = spec.get("volumes")
    if not isinstance(volumes, list):
        return False
    return any(
        isinstance(v, Mapping) and (v.get("emptyDir") is not None or v.get("hostPath") is not None)
        for v in volumes
    )


def _claims(spec: Mapping[str, Any]) -> tuple[str, ...]:
    """`spec.volumes[].persistentVolumeClaim.claimName`, in order (what is not one is skipped:
    the API server validated the volumes)."""
    volumes = spec.get("volumes")
    if not isinstance(volumes, list):
        return ()
    names: list[str] = []
    for volume in volumes:
        claim = volume.get("persistentVolumeClaim") if isinstance(volume, Mapping) else None
        name = claim.get("claimName") if isinstance(claim, Mapping) else None
        if isinstance(name, str) and name:
            names.append(name)
    return tuple(names)


def pod_from_api(raw: Any) -> PodInfo:
    """A Pod object (API JSON, as in watch events and extender requests) as a PodInfo."""
    if not isinstance(raw, Mapping):
        raise ConversionError(f"Pod must be an object, not {type(raw).__name__}")
    metadata = _mapping(raw, "metadata", "Pod")
    spec = _mapping(raw, "spec", "Pod")
    status = _mapping(raw, "status", "Pod")
    mpath = "Pod.metadata"
    namespace = _str(metadata, "namespace", mpath) or "default"
    name = _str(metadata, "name", mpath, required=True)
    labels = _string_map(metadata, "labels", mpath)
    annotations = _string_map(metadata, "annotations", mpath)
    owner = _owner(metadata)
    parts = _spec_parts(spec, spec_key(spec))
    (
        requests,
        priority,
        scheduler,
        selector,
        tolerations,
        affinity,
        pod_group,
        claims,
        local,
        bind_cycle,
    ) = parts
    gang = gang_of(labels, annotations, namespace, owner, pod_group)
    return PodInfo(
        uid=_str(metadata, "uid", mpath),
        namespace=namespace,
        name=name,
        node_name=_str(spec, "nodeName", "Pod.spec") or None,
        phase=pod_phase(status),
        priority=priority,
        requests=requests,
        labels=labels,
        annotations=annotations,
        owner=owner,
        scheduler_name=scheduler,
        created=_timestamp(
            _str(metadata, "creationTimestamp", mpath), f"{mpath}.creationTimestamp"
        ),
        node_selector=selector,
        tolerations=tolerations,
        affinity=affinity,
        deleting=metadata.get("deletionTimestamp") is not None,
        started=pod_started(status),
        restarts=pod_restarts(status),
        ready=pod_ready(status),
        waiting_reason=pod_waiting_reason(status),
        job=gang or single_key(namespace, name),
        claims=claims,
        local_storage=local,
        needs_bind_cycle=bind_cycle,
    )


def needs_bind_cycle(spec: Mapping[str, Any]) -> bool:
    """Whether kube-scheduler's own bind cycle has work for the pod: a volume of a claim
    (`persistentVolumeClaim`, or an `ephemeral` one's), whose claim may wait for its first
    consumer to be bound; DRA `resourceClaims` to allocate."""
    if spec.get("resourceClaims"):
        return True
    volumes = spec.get("volumes")
    return isinstance(volumes, list) and any(
        isinstance(v, Mapping) and ("persistentVolumeClaim" in v or "ephemeral" in v)
        for v in volumes
    )


def pod_phase(status: Mapping[str, Any]) -> str:
    """`status.phase`, Pending when not reported yet."""
    return _str(status, "phase", "Pod.status") or "Pending"


def pod_started(status: Mapping[str, Any]) -> float:
    """`status.startTime` as a Unix time (0: not started)."""
    return _timestamp(_str(status, "startTime", "Pod.status"), "Pod.status.startTime")


def node_from_api(raw: Any) -> NodeInfo:
    """A Node object as a NodeInfo with nothing requested yet (the cache adds its pods)."""
    if not isinstance(raw, Mapping):
        raise ConversionError(f"Node must be an object, not {type(raw).__name__}")
    metadata = _mapping(raw, "metadata", "Node")
    spec = _mapping(raw, "spec", "Node")
    status = _mapping(raw, "status", "Node")
    allocatable = _mapping(status, "allocatable", "Node.status") or _mapping(
        status, "capacity", "Node.status"
    )
    taints = tuple(
        Taint(
            key=_str(t, "key", path), value=_str(t, "value", path), effect=_str(t, "effect", path)
        )
        for path, t in _objects(spec, "taints", "Node.spec")
    )
    return NodeInfo(
        name=_str(metadata, "name", "Node.metadata", required=True),
        allocatable=resource_list(allocatable, "Node.status.allocatable"),
        requested={},
        labels=_string_map(metadata, "labels", "Node.metadata"),
        taints=taints,
        unschedulable=spec.get("unschedulable") is True,
    )


def namespace_from_api(raw: Any) -> tuple[str, dict[str, str]]:
    """A Namespace as (name, labels)."""
    if not isinstance(raw, Mapping):
        raise ConversionError("Namespace must be an object")
    metadata = _mapping(raw, "metadata", "Namespace")
    return _str(metadata, "name", "Namespace.metadata", required=True), _string_map(
        metadata, "labels", "Namespace.metadata"
    )


def priority_class_from_api(raw: Any) -> tuple[str, int]:
    """A PriorityClass as (name, value)."""
    if not isinstance(raw, Mapping):
        raise ConversionError("PriorityClass must be an object")
    metadata = _mapping(raw, "metadata", "PriorityClass")
    value = raw.get("value", 0)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConversionError(f"PriorityClass.value must be an integer, not {value!r}")
    return _str(metadata, "name", "PriorityClass.metadata", required=True), value


def pod_group_from_api(raw: Any, source: str) -> PodGroupInfo:
    """A Volcano (`scheduling.volcano.sh`) or coscheduling (`scheduling.x-k8s.io`) PodGroup."""
    if not isinstance(raw, Mapping):
        raise ConversionError("PodGroup must be an object")
    metadata = _mapping(raw, "metadata", "PodGroup")
    spec = _mapping(raw, "spec", "PodGroup")
    timeout = spec.get("scheduleTimeoutSeconds")
    if source == "native":
        return _native_pod_group(metadata, spec)
    return PodGroupInfo(
        source=source,
        namespace=_str(metadata, "namespace", "PodGroup.metadata") or "default",
        name=_str(metadata, "name", "PodGroup.metadata", required=True),
        min_member=spec.get("minMember"),
        timeout_seconds=timeout if isinstance(timeout, int) and timeout > 0 else None,
    )


def _native_pod_group(metadata: Mapping[str, Any], spec: Mapping[str, Any]) -> PodGroupInfo:
    """Kubernetes' own PodGroup (`scheduling.k8s.io/v1alpha2`, GenericWorkload gate)."""
    path = "PodGroup.spec"
    policy = _mapping(spec, "schedulingPolicy", path)
    raw_gang = policy.get("gang")
    gang: Mapping[str, Any] = raw_gang if isinstance(raw_gang, Mapping) else {}
    is_gang = isinstance(raw_gang, Mapping)
    constraints = _mapping(spec, "schedulingConstraints", path)
    keys = tuple(
        key
        for _, item in _objects(constraints, "topology", f"{path}.schedulingConstraints")
        if isinstance(key := item.get("key"), str) and key
    )
    priority = spec.get("priority")
    timeout = gang.get("scheduleTimeoutSeconds") if is_gang else None
    return PodGroupInfo(
        source="native",
        namespace=_str(metadata, "namespace", "PodGroup.metadata") or "default",
        name=_str(metadata, "name", "PodGroup.metadata", required=True),
        min_member=gang.get("minCount") if is_gang else 1,
        timeout_seconds=timeout if isinstance(timeout, int) and timeout > 0 else None,
        gang=is_gang,
        topology=keys,
        priority=priority if isinstance(priority, int) and not isinstance(priority, bool) else None,
        priority_class=_str(spec, "priorityClassName", path),
    )


def job_from_api(raw: Any) -> JobInfo:
    if not isinstance(raw, Mapping):
        raise ConversionError("Job must be an object")
    metadata = _mapping(raw, "metadata", "Job")
    spec = _mapping(raw, "spec", "Job")

    def count(key: str) -> int | None:
        value = spec.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    annotations = _mapping(metadata, "annotations", "Job.metadata")
    minimum = annotations.get(KUEUE_MIN_PARALLELISM)
    return JobInfo(
        namespace=_str(metadata, "namespace", "Job.metadata") or "default",
        name=_str(metadata, "name", "Job.metadata", required=True),
        parallelism=count("parallelism"),
        completions=count("completions"),
        indexed=spec.get("completionMode") == "Indexed",
        min_parallelism=minimum if isinstance(minimum, str) else None,
        shrunk_from=_shrunk_from(annotations),
        kueue=KUEUE_QUEUE in _mapping(metadata, "labels", "Job.metadata"),
    )


def _shrunk_from(annotations: Mapping[str, Any]) -> int:
    """The size gangplank's annotation records (0: none, or not a whole number)."""
    value = annotations.get(SHRUNK_FROM)
    return int(value) if isinstance(value, str) and value.isdigit() else 0


def pytorch_job_from_api(raw: Any) -> PyTorchJobInfo:
    """A Kubeflow PyTorchJob: its Worker and Master replicas and its elasticPolicy."""
    if not isinstance(raw, Mapping):
        raise ConversionError("PyTorchJob must be an object")
    metadata = _mapping(raw, "metadata", "PyTorchJob")
    spec = _mapping(raw, "spec", "PyTorchJob")
    path = "PyTorchJob.spec"
    replicas = _mapping(spec, "pytorchReplicaSpecs", path)

    def count(obj: Mapping[str, Any], key: str, default: int | None) -> int | None:
        value = obj.get(key)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ConversionError(f"{path}: {key} must be a whole number, not {value!r}")
        return value

    def of(kind: str) -> int:
        """Its `kind` replicas: 1 when the spec leaves them out, 0 without such a spec."""
        found = _mapping(replicas, kind, f"{path}.pytorchReplicaSpecs")
        return count(found, "replicas", 1 if kind in replicas else 0) or 0

    policy = spec.get("elasticPolicy")
    elastic = _mapping(spec, "elasticPolicy", path)
    return PyTorchJobInfo(
        namespace=_str(metadata, "namespace", "PyTorchJob.metadata") or "default",
        name=_str(metadata, "name", "PyTorchJob.metadata", required=True),
        workers=of("Worker"),
        masters=of("Master"),
        min_replicas=count(elastic, "minReplicas", None),
        max_replicas=count(elastic, "maxReplicas", None),
        elastic=isinstance(policy, Mapping),
        shrunk_from=_shrunk_from(_mapping(metadata, "annotations", "PyTorchJob.metadata")),
        kueue=KUEUE_QUEUE in _mapping(metadata, "labels", "PyTorchJob.metadata"),
    )
