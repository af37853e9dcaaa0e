"""Convert watched pods without redoing what did not change.

Most pod watch events only change the pod's status (conditions, IPs, container states) or metadata
gangplank does not read (resourceVersion, managedFields); of the status it reads the phase, start
time, restarts, the Ready condition and the containers' waiting reasons. A pod's spec is nearly
immutable, and converting it (requests summed over containers, tolerations, affinity, the gang it
belongs to) is most of the cost of an event. So the last conversion of each pod is kept with a
fingerprint of the parts it was made from: the spec (but for its nodeName, which binding sets), and
the metadata gangplank reads (but for deletionTimestamp). When an event brings the same
fingerprint, only the node, deletion and status fields are read again; when those are the same too,
the very same PodInfo comes back and the store has nothing to do.

The fingerprint is Python's hash of the parts serialised by orjson: keyed per process (SipHash),
so a pod's author cannot make two different specs collide on purpose.

Before any of that, a watch line is read for its "quick" fingerprint (cache.pod_lines): when it is
the one kept for the pod, the pod is brought up to date from a few status fields (`reuse`) and the
line is never parsed in full.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import orjson

from extender.cache import pod_lines
from extender.cache.pod_lines import PodLine
from extender.core.model.snapshot import PodInfo
from extender.kube.convert import (
    ConversionError,
    pod_from_api,
    pod_phase,
    pod_ready,
    pod_restarts,
    pod_started,
    pod_waiting_reason,
)

_RawStatus = tuple[str | None, bool, Any, Any, int, bool, str]
# (fingerprint of the spec but its nodeName and of the metadata, the quick fingerprint of the
# pod's last line (None: not known), (nodeName, deleting, phase, startTime, restarts, ready,
# waiting reason) as written (the last three as read), the conversion)
_Seen = tuple[int, int | None, _RawStatus, PodInfo]


class PodMemo:
    """Pod conversions keyed by uid; forget a pod when it is deleted."""

    def __init__(self) -> None:
        self._seen: dict[str, _Seen] = {}
        self._reused_parsed = 0
        self.from_lines = 0  # events answered from the memo, read from their line alone

    @property
    def reused(self) -> int:
        """Events answered from the memo: parsed in full but not converted again, or read from
        their line alone (for benchmarks and tests)."""
        return self._reused_parsed + self.from_lines

    def __len__(self) -> int:
        return len(self._seen)

    def convert(self, raw: Any, quick: int | None = None) -> PodInfo:
        """The PodInfo of a Pod object, as `pod_from_api` gives it (and raising as it does).
        `quick`: the fingerprint of the line it came in (pod_lines.read); without one, it is
        worked out from the object."""
        prints = _fingerprint(raw)
        if prints is None:
            return pod_from_api(raw)
        uid, fingerprint, node, deleting, status = prints
        if quick is None:
            quick = pod_lines.quick_of_object(raw)
        restarts, ready, waiting = (
            pod_restarts(status),
            pod_ready(status),
            pod_waiting_reason(status),
        )
        raw_status: _RawStatus = (
            node,
            deleting,
            status.get("phase"),
            status.get("startTime"),
            restarts,
            ready,
            waiting,
        )
        seen = self._seen.get(uid)
        if seen is not None and seen[0] == fingerprint:
            self._reused_parsed += 1
            old = seen[3]
            if seen[2] == raw_status:
                pod = old
            else:
                phase, started = pod_phase(status), pod_started(status)
                pod = with_status(old, node, phase, started, restarts, ready, waiting, deleting)
        else:
            pod = pod_from_api(raw)
        self._seen[uid] = (fingerprint, quick, raw_status, pod)
        return pod

    def reuse(self, line: PodLine) -> tuple[PodInfo, bool] | None:
        """(the pod of a watch line, whether it changed) when its quick fingerprint is the one
        kept (its spec and the metadata read are as last converted), or that of the kept unbound
        pod with a nodeName added (it was bound): brought up to date from the line's node, status
        and deletion. Unchanged, it is the very pod kept, which is the one the store holds.
        None: convert the line's object in full (`convert`)."""
        seen = self._seen.get(line.uid)
        if seen is None:
            return None
        fingerprint, quick, kept, old = seen
        node = kept[0]
        if quick != line.quick:
            # Not as kept; but a pod waiting for a node may just have been bound.
            binding = pod_lines.bound(line) if node is None and quick is not None else None
            if binding is None or binding[0] != quick:
                return None
            quick, node = line.quick, binding[1]
        status = line.status
        restarts, ready, waiting = status.summary()
        raw_status = (
            node,
            line.deleting,
            status.phase,
            status.startTime,
            restarts,
            ready,
            waiting,
        )
        self.from_lines += 1
        if raw_status == kept:
            return old, False
        try:  # (what did not change as written is taken from the pod as it is)
            phase = old.phase if status.phase == kept[2] else pod_phase({"phase": status.phase})
            started = (
                old.started
                if status.startTime == kept[3]
                else pod_started({"startTime": status.startTime})
            )
        except ConversionError:
            self.from_lines -= 1
            return None
        pod = with_status(old, node, phase, started, restarts, ready, waiting, line.deleting)
        self._seen[line.uid] = (fingerprint, quick, raw_status, pod)
        return pod, True

    def forget(self, pod: PodInfo) -> None:
        self._seen.pop(pod.uid, None)

    def keep_only(self, pods: Iterable[PodInfo]) -> None:
        """After a relist: drop every pod not in it."""
        listed = {pod.uid for pod in pods}
        self._seen = {uid: seen for uid, seen in self._seen.items() if uid in listed}


def with_status(
    pod: PodInfo,
    node: str | None,
    phase: str,
    started: float,
    restarts: int,
    ready: bool,
    waiting_reason: str,
    deleting: bool,
) -> PodInfo:
    """`pod` with what binding, the kubelet and deletion change (dataclasses.replace, at a
    third of its cost: this runs for most watch events)."""
    return PodInfo(
        pod.uid,
        pod.namespace,
        pod.name,
        node,
        phase,
        pod.priority,
        pod.requests,
        pod.labels,
        pod.annotations,
        pod.owner,
        pod.scheduler_name,
        pod.created,
        pod.node_selector,
        pod.tolerations,
        pod.affinity,
        deleting,
        started,
        pod.job,
        restarts,
        ready,
        waiting_reason,
        pod.claims,
        pod.local_storage,
        pod.needs_bind_cycle,
    )


def _fingerprint(
    raw: Any,
) -> tuple[str, int, str | None, bool, Mapping[str, Any]] | None:
    """(uid, a fingerprint of the spec but its nodeName and of the metadata gangplank reads,
    nodeName, whether it is being deleted, status), or None when the object is not well-formed
    enough to fingerprint (the full conversion then says what is wrong)."""
    if not isinstance(raw, dict):
        return None
    metadata, spec, status = raw.get("metadata"), raw.get("spec"), raw.get("status")
    if status is None:
        status = {}
    if not (isinstance(metadata, dict) and isinstance(spec, dict) and isinstance(status, dict)):
        return None
    uid = metadata.get("uid")
    node = spec.get("nodeName")
    if not isinstance(uid, str) or not uid or not (node is None or isinstance(node, str)):
        return None
    # One serialisation for both: the spec without its nodeName (taken out and put back, rather
    # than copied: the event's object is ours) and the metadata gangplank reads.
    had_node = "nodeName" in spec
    bound = spec.pop("nodeName", None)
    try:
        text = orjson.dumps(
            (
                spec,
                metadata.get("name"),
                metadata.get("namespace"),
                metadata.get("creationTimestamp"),
                metadata.get("labels"),
                metadata.get("annotations"),
                metadata.get("ownerReferences"),
            )
        )
    except (orjson.JSONEncodeError, TypeError):
        return None
    finally:
        if had_node:
            spec["nodeName"] = bound
    deleting = metadata.get("deletionTimestamp") is not None
    return uid, hash(text), node or None, deleting, status
